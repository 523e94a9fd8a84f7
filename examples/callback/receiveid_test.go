package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestReceiveIDFlags: -corp-id "" is an unchecked receive id (an app of
// a personal subject), not a missing flag; -url-check-id sets the URL
// check's receive id, and needs the receiver's other flags.
func TestReceiveIDFlags(t *testing.T) {
	var errs bytes.Buffer
	cfg, err := parseFlags([]string{"-token", "T", "-aes-key", testKey, "-corp-id", ""}, &errs)
	if err != nil || !cfg.receiving() || cfg.corpID != "" || cfg.urlCheckID != nil {
		t.Fatalf("-corp-id \"\": %+v, %v", cfg, err)
	}
	cfg, err = parseFlags([]string{"-token", "T", "-aes-key", testKey, "-corp-id", "wwsuite", "-url-check-id", "wwprovider"}, &errs)
	if err != nil || cfg.urlCheckID == nil || *cfg.urlCheckID != "wwprovider" {
		t.Fatalf("-url-check-id: %+v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"-url-check-id", "wwprovider"}, &errs); err == nil {
		t.Fatal("-url-check-id alone accepted")
	}
}

// TestReceiverSuiteURLCheck: a suite's command URL, -corp-id the suite id
// and -url-check-id the provider's corp id, passes WeCom's URL check
// (encrypted for the provider) and takes the POSTs (for the suite); an
// unchecked receive id takes any.
func TestReceiverSuiteURLCheck(t *testing.T) {
	const provider, suite = "wwprovider01", "wwsuite01"
	check := provider
	for _, tc := range []struct {
		name     string
		cfg      config
		get, pst string // receive ids of the URL check and the POST
	}{
		{"suite command URL", config{token: testToken, aesKey: testKey, corpID: suite, corpIDSet: true, urlCheckID: &check}, provider, suite},
		{"unchecked", config{token: testToken, aesKey: testKey, corpIDSet: true}, "wwanyone", "wwanyoneelse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			h, err := newReceiver(tc.cfg, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(h)
			defer hs.Close()
			s := newSender(t, testToken, testKey, tc.get)
			echo := s.encrypt(t, "echo-1")
			ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), "7"
			q := url.Values{"msg_signature": {s.signature(ts, nonce, echo)}, "timestamp": {ts}, "nonce": {nonce}, "echostr": {echo}}
			resp, err := http.Get(hs.URL + "/?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != "echo-1" {
				t.Fatalf("URL check: %d %q; stderr:\n%s", resp.StatusCode, got, stderr.String())
			}
			msg := `<xml><SuiteId>` + suite + `</SuiteId><InfoType>suite_ticket</InfoType><TimeStamp>` + ts + `</TimeStamp><SuiteTicket>t</SuiteTicket></xml>`
			if code := newSender(t, testToken, testKey, tc.pst).post(t, hs.URL, msg, false); code != 200 {
				t.Fatalf("POST: %d; stderr:\n%s", code, stderr.String())
			}
		})
	}
}
