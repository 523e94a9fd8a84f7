package mock_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// The mock checks the three token kinds as WeCom does: a corp's
// access_token, a provider's or a suite's token, each sent where another
// is due, is refused (40082 for a suite's endpoint, 40014 elsewhere).
func TestWrongTokenKindRefused(t *testing.T) {
	clock := newClock()
	srv := newServer(t, mock.Config{Now: clock.Now})
	srv.AddSuite("wwsuite", "suite-secret", "ticket")
	srv.AddProvider("wwprovider", "provider-secret")
	c := connect(t, srv, "httptest")
	tokens := map[catalog.Token]string{
		catalog.CorpToken:     c.token(),
		catalog.SuiteToken:    c.call("POST", catalog.GetSuiteToken.Path(), nil, `{"suite_id":"wwsuite","suite_secret":"suite-secret","suite_ticket":"ticket"}`).str("suite_access_token"),
		catalog.ProviderToken: c.call("POST", catalog.GetProviderToken.Path(), nil, `{"corpid":"wwprovider","provider_secret":"provider-secret"}`).str("provider_access_token"),
	}
	rows := map[catalog.Token]catalog.ID{
		catalog.CorpToken:     catalog.UserIDToOpenUserID,
		catalog.SuiteToken:    catalog.GetPreAuthCode,
		catalog.ProviderToken: catalog.CorpIDToOpenCorpID,
	}
	for needs, id := range rows {
		e, _ := catalog.Lookup(id.Path())
		q, body, err := e.SampleRequest()
		if err != nil {
			t.Fatal(err)
		}
		for kind, tok := range tokens {
			if tok == "" {
				t.Fatalf("no %s", kind)
			}
			qq := url.Values{}
			for k, v := range q {
				qq[k] = v
			}
			qq.Set(needs.String(), tok)
			a := c.call(e.Method, id.Path(), qq, string(body))
			want := 0
			switch {
			case kind != needs && needs == catalog.SuiteToken:
				want = catalog.CodeInvalidSuiteToken
			case kind != needs:
				want = catalog.CodeInvalidAccessToken
			}
			if a.code() != want {
				t.Errorf("%s with a %s: errcode %d, want %d", id, kind, a.code(), want)
			}
		}
	}
}

// A pushed suite_ticket is accepted for 30 minutes of the Server's clock,
// then refused (40085); the newer ones pushed meanwhile are accepted.
func TestPushedTicketExpires(t *testing.T) {
	clock := newClock()
	srv := newServer(t, mock.Config{Now: clock.Now})
	t.Cleanup(srv.Close)
	srv.AddSuite("wwsuite", "suite-secret", "")
	c := connect(t, srv, "httptest")
	if _, err := srv.PushSuiteTicket("wwsuite"); err == nil {
		t.Error("PushSuiteTicket without a command URL succeeded")
	}
	sink := connect(t, newServer(t, mock.Config{}), "httptest") // any 200 will do
	if err := srv.SetSuiteCallback("wwsuite", mock.CallbackConfig{URL: sink.base, Token: cbToken, EncodingAESKey: cbKey}); err != nil {
		t.Fatal(err)
	}
	first, err := srv.PushSuiteTicket("wwsuite")
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(ticket string) int {
		return c.call("POST", catalog.GetSuiteToken.Path(), nil, `{"suite_id":"wwsuite","suite_secret":"suite-secret","suite_ticket":"`+ticket+`"}`).code()
	}
	if code := fetch(first); code != 0 {
		t.Errorf("a fresh ticket: errcode %d", code)
	}
	clock.Advance(mock.SuiteTicketLifetime)
	second, err := srv.PushSuiteTicket("wwsuite")
	if err != nil {
		t.Fatal(err)
	}
	if code := fetch(first); code != catalog.CodeInvalidSuiteTicket {
		t.Errorf("a ticket of 30 minutes: errcode %d, want 40085", code)
	}
	if code := fetch(second); code != 0 {
		t.Errorf("the newest ticket: errcode %d", code)
	}
	clock.Advance(time.Minute)
	if code := fetch("made-up"); code != catalog.CodeInvalidSuiteTicket {
		t.Errorf("a ticket never pushed: errcode %d, want 40085", code)
	}
}
