package mock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/mock"
)

// TestCommandCallbackAnswers: a suite's command callback counts as
// delivered only when answered "success" within 1000 ms, as WeCom requires:
// an empty 200 never is; a create_auth whose handler takes 2 s is not at
// its first attempt (its retries, which the handler deduplicates, are
// answered at once).
func TestCommandCallbackAnswers(t *testing.T) {
	const suite = "wwsuite0001"
	crypto, err := callback.NewCrypto(cbToken, cbKey, suite)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	callback.Handle(h, func(ctx context.Context, e *callback.AuthEvent) error {
		time.Sleep(2 * time.Second) // get_permanent_code, then a DB write
		return nil
	})
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})) // empty 200
	defer empty.Close()
	hs := httptest.NewServer(h)
	defer hs.Close()
	srv, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fast := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	for corp, url := range map[string]string{"corpA": empty.URL, "corpB": hs.URL} {
		if err := srv.SetCallback(corp, mock.CallbackConfig{URL: url, Token: cbToken, EncodingAESKey: cbKey, ReceiveID: suite, RetryDelays: fast}); err != nil {
			t.Fatal(err)
		}
	}
	for corp, msg := range map[string]string{
		"corpA": `<xml><SuiteId><![CDATA[` + suite + `]]></SuiteId><InfoType><![CDATA[suite_ticket]]></InfoType><TimeStamp>1</TimeStamp><SuiteTicket><![CDATA[t]]></SuiteTicket></xml>`,
		"corpB": `<xml><SuiteId><![CDATA[` + suite + `]]></SuiteId><InfoType><![CDATA[create_auth]]></InfoType><TimeStamp>1</TimeStamp><AuthCode><![CDATA[c]]></AuthCode></xml>`,
	} {
		if err := srv.PushCallback(corp, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range srv.CallbackDeliveries() {
		if d.Delivered && (d.CorpID == "corpA" || d.Attempt == 1) {
			t.Errorf("%s to %s, attempt %d, counted delivered (WeCom needs \"success\" within 1000 ms)", d.Event, d.CorpID, d.Attempt)
		}
	}
}
