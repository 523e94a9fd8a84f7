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
// an empty 200 never is, nor "success" after 1.5 s; a callback.Handler
// whose create_auth handler takes 1.5 s is (it answers at its command
// deadline, here 400 ms: the default 800 would leave this test, among
// others running, 200 ms of margin).
func TestCommandCallbackAnswers(t *testing.T) {
	t.Parallel()
	const suite = "wwsuite0001"
	crypto, err := callback.NewCrypto(cbToken, cbKey, suite)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto, callback.WithCommandTimeout(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	callback.Handle(h, func(ctx context.Context, e *callback.AuthEvent) error {
		time.Sleep(1500 * time.Millisecond) // get_permanent_code, then a DB write
		return nil
	})
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})) // empty 200
	defer empty.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(1500 * time.Millisecond):
			_, _ = w.Write([]byte("success"))
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	hs := httptest.NewServer(h)
	defer hs.Close()
	defer func() { _ = h.Close(context.Background()) }()
	srv, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fast := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	for corp, url := range map[string]string{"corpA": empty.URL, "corpB": slow.URL, "corpC": hs.URL} {
		if err := srv.SetCallback(corp, mock.CallbackConfig{URL: url, Token: cbToken, EncodingAESKey: cbKey, ReceiveID: suite, RetryDelays: fast}); err != nil {
			t.Fatal(err)
		}
	}
	ticket := `<xml><SuiteId><![CDATA[` + suite + `]]></SuiteId><InfoType><![CDATA[suite_ticket]]></InfoType><TimeStamp>1</TimeStamp><SuiteTicket><![CDATA[t]]></SuiteTicket></xml>`
	auth := `<xml><SuiteId><![CDATA[` + suite + `]]></SuiteId><InfoType><![CDATA[create_auth]]></InfoType><TimeStamp>1</TimeStamp><AuthCode><![CDATA[c]]></AuthCode></xml>`
	for corp, msg := range map[string]string{"corpA": ticket, "corpB": ticket, "corpC": auth} {
		if err := srv.PushCallback(corp, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	delivered := map[string]int{}
	for _, d := range srv.CallbackDeliveries() {
		if d.Delivered {
			delivered[d.CorpID] = d.Attempt
		}
	}
	if delivered["corpA"] != 0 || delivered["corpB"] != 0 || delivered["corpC"] != 1 {
		t.Errorf("delivered at attempts %v; want none to corpA (empty 200) and corpB (1.5 s), corpC at the first", delivered)
	}
}
