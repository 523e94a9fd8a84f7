package callback_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// urlCheck sends WeCom's URL check, encrypted for receive id rid, to h.
func urlCheck(t *testing.T, h http.Handler, rid string) int {
	t.Helper()
	wecom, err := callback.NewCrypto(testToken, testKey, rid)
	if err != nil {
		t.Fatal(err)
	}
	echo, _ := wecom.Encrypt([]byte("1234567890"))
	ts, n := strconv.FormatInt(time.Now().Unix(), 10), "42"
	q := url.Values{"msg_signature": {wecom.Sign(ts, n, echo)}, "timestamp": {ts}, "nonce": {n}, "echostr": {echo}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/cb?"+q.Encode(), nil))
	if rec.Code == http.StatusOK && rec.Body.String() != "1234567890" {
		t.Fatalf("URL check answered %q", rec.Body.String())
	}
	return rec.Code
}

// postFor posts a text message encrypted for receive id rid to h.
func postFor(t *testing.T, h http.Handler, rid string) int {
	t.Helper()
	wecom, err := callback.NewCrypto(testToken, testKey, rid)
	if err != nil {
		t.Fatal(err)
	}
	return serve(h, seal(t, wecom, textXML(strconv.FormatInt(time.Now().UnixNano(), 10), "x"), time.Now().Unix())).Code
}

// TestReceiveIDs: which receive id the URL check and the POSTs may carry,
// for each kind of receiver.
func TestReceiveIDs(t *testing.T) {
	t.Parallel()
	const provider, suite, corpA, corpB, stranger = "wwprovider01", "wwsuite01", "wwcorpA", "wwcorpB", "wwstranger"
	type want struct {
		rid  string
		code int
	}
	for _, tc := range []struct {
		name      string
		own       string
		opts      []callback.Option
		get, post []want
	}{
		{
			name: "suite command URL without the option (the reviewer's case)", own: suite,
			get:  []want{{provider, 403}, {suite, 200}},
			post: []want{{suite, 200}},
		},
		{
			name: "suite command URL", own: suite, opts: []callback.Option{callback.WithURLCheckReceiveID(provider)},
			get:  []want{{provider, 200}, {suite, 403}},
			post: []want{{suite, 200}, {provider, 403}},
		},
		{
			name: "third-party data callback, a set", own: provider,
			opts: []callback.Option{callback.WithReceiveIDs(corpA, corpB)},
			get:  []want{{provider, 200}, {corpA, 403}},
			post: []want{{corpA, 200}, {corpB, 200}, {provider, 200}, {stranger, 403}},
		},
		{
			name: "third-party data callback, a func", own: provider,
			opts: []callback.Option{callback.WithReceiveIDFunc(func(id string) bool { return id == corpB })},
			get:  []want{{provider, 200}},
			post: []want{{corpB, 200}, {corpA, 403}},
		},
		{
			name: "URL check unchecked", own: suite, opts: []callback.Option{callback.WithURLCheckReceiveID("")},
			get:  []want{{stranger, 200}, {provider, 200}},
			post: []want{{suite, 200}, {stranger, 403}},
		},
		{
			name: "personal subject: nothing checked", own: "",
			get:  []want{{stranger, 200}, {"", 200}},
			post: []want{{stranger, 200}, {"", 200}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := callback.NewCrypto(testToken, testKey, tc.own)
			h, err := callback.NewHandler(c, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			var texts collector[*callback.TextMessage]
			callback.Handle(h, texts.handle)
			for _, w := range tc.get {
				if code := urlCheck(t, h, w.rid); code != w.code {
					t.Errorf("URL check for %q: %d, want %d", w.rid, code, w.code)
				}
			}
			for _, w := range tc.post {
				if code := postFor(t, h, w.rid); code != w.code {
					t.Errorf("POST for %q: %d, want %d", w.rid, code, w.code)
				}
			}
		})
	}
	c := docCrypto(t)
	for name, opt := range map[string]callback.Option{
		"empty id in the set": callback.WithReceiveIDs("ww1", ""),
		"nil func":            callback.WithReceiveIDFunc(nil),
	} {
		if _, err := callback.NewHandler(c, opt); !errors.Is(err, callback.ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
