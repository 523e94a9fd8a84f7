package wecom_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
)

// ticketStores are the token stores the suite ticket tests run on: one
// in memory, and Redis, each a new one shared by the suites a test makes.
var ticketStores = []struct {
	name string
	make func(t *testing.T) wecom.TokenStore
}{
	{"memory", func(*testing.T) wecom.TokenStore { return wecom.NewMemoryTokenStore() }},
	{"redis", func(t *testing.T) wecom.TokenStore {
		rdb := redistest.Single(t)
		s, err := redisstore.New(rdb, redistest.Prefix(t, rdb))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// suiteMock returns a mock with the test suite, accepting ticket, and its
// URL.
func suiteMock(t *testing.T, cfg mock.Config, ticket string) (*mock.Server, string) {
	t.Helper()
	srv := newMock(t, cfg)
	srv.AddSuite(testSuiteID, testSuiteSecret, ticket)
	return srv, started(t, srv)
}

func suiteTokenFetches(srv *mock.Server) int { return srv.Stats().Calls[catalog.GetSuiteToken.Path()] }

// The newest ticket wins: one sent earlier, arriving after it (at another
// process of the fleet, or the same), is dropped, so the token is fetched
// with the newest (the mock accepts it only).
func TestSuiteTicketNewestWins(t *testing.T) {
	t.Parallel()
	for _, st := range ticketStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			srv, base := suiteMock(t, mock.Config{}, "ticket-new")
			store := st.make(t)
			a := newSuite(t, wecom.WithBaseURL(base), wecom.WithTokenStore(store))
			b := newSuite(t, wecom.WithBaseURL(base), wecom.WithTokenStore(store))
			now := time.Now()
			if err := a.SetTicket(context.Background(), "ticket-new", now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := b.SetTicket(context.Background(), "ticket-old", now.Add(-11*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.PreAuthCode(context.Background()); err != nil {
				t.Fatalf("PreAuthCode after a late older ticket: %v", err)
			}
			if n := suiteTokenFetches(srv); n != 1 {
				t.Errorf("%d suite token fetches, want 1", n)
			}
		})
	}
}

// A ticket outlives the process that received it: a new Suite on the same
// store (a restart) fetches its token with it, no push needed, for the
// ticket's 30 minutes.
func TestSuiteTicketSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, st := range ticketStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			srv, base := suiteMock(t, mock.Config{}, "ticket-1")
			store := st.make(t)
			before := newSuite(t, wecom.WithBaseURL(base), wecom.WithTokenStore(store))
			ev := &callback.SuiteTicketEvent{Header: callback.Header{SuiteID: testSuiteID, InfoType: "suite_ticket",
				TimeStamp: time.Now().Add(-25 * time.Minute).Unix()}, SuiteTicket: "ticket-1"}
			if err := before.ReceiveTicket(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			after := newSuite(t, wecom.WithBaseURL(base), wecom.WithTokenStore(store))
			if _, _, err := after.PreAuthCode(context.Background()); err != nil {
				t.Fatalf("PreAuthCode after a restart: %v", err)
			}
			if n := suiteTokenFetches(srv); n != 1 {
				t.Errorf("%d suite token fetches, want 1", n)
			}
		})
	}
}

// A ticket is kept for 30 minutes from its sending: one older is refused
// when given, and with none the token is not fetched (ErrNoSuiteTicket,
// nothing sent). A ticket event of another suite is refused.
func TestSuiteTicketExpiry(t *testing.T) {
	t.Parallel()
	srv, base := suiteMock(t, mock.Config{}, "ticket-1")
	s := newSuite(t, wecom.WithBaseURL(base))
	if err := s.SetTicket(context.Background(), "ticket-1", time.Now().Add(-31*time.Minute)); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("SetTicket of an expired ticket = %v, want ErrInvalidRequest", err)
	}
	other := &callback.SuiteTicketEvent{Header: callback.Header{SuiteID: "wwother", TimeStamp: time.Now().Unix()}, SuiteTicket: "ticket-1"}
	if err := s.ReceiveTicket(context.Background(), other); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("ReceiveTicket of another suite = %v, want ErrInvalidRequest", err)
	}
	_, _, err := s.PreAuthCode(context.Background())
	var te *wecom.SuiteTicketError
	if !errors.Is(err, wecom.ErrNoSuiteTicket) || !errors.As(err, &te) || te.SuiteID != testSuiteID {
		t.Errorf("PreAuthCode without a ticket = %v, want a *SuiteTicketError", err)
	}
	if n := suiteTokenFetches(srv); n != 0 {
		t.Errorf("%d suite token fetches without a ticket, want 0", n)
	}
	if err := s.SetTicket(context.Background(), "ticket-1", time.Now().Add(-29*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PreAuthCode(context.Background()); err != nil {
		t.Errorf("PreAuthCode with a ticket of 29 minutes: %v", err)
	}
}

// A ticket WeCom refuses (40085) fails the calls with ErrNoSuiteTicket and
// is not sent again, however many calls follow; the next ticket is used
// as it arrives.
func TestSuiteTicketRefused(t *testing.T) {
	t.Parallel()
	srv, base := suiteMock(t, mock.Config{}, "ticket-fresh")
	s := newSuite(t, wecom.WithBaseURL(base))
	if err := s.SetTicket(context.Background(), "ticket-stale", time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_, _, err := s.PreAuthCode(context.Background())
		if !errors.Is(err, wecom.ErrNoSuiteTicket) {
			t.Fatalf("call %d: %v, want ErrNoSuiteTicket", i, err)
		}
		var ae *wecom.APIError
		if i == 0 && (!errors.As(err, &ae) || ae.Code != wecom.CodeInvalidSuiteTicket) {
			t.Errorf("first call: %v, want WeCom's 40085 in the chain", err)
		}
	}
	if n := suiteTokenFetches(srv); n != 1 {
		t.Errorf("%d suite token fetches with a refused ticket, want 1", n)
	}
	if err := s.SetTicket(context.Background(), "ticket-fresh", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PreAuthCode(context.Background()); err != nil {
		t.Errorf("PreAuthCode with the next ticket: %v", err)
	}
}

// A suite token WeCom says expired (42009) is fetched again, with the
// ticket kept: a refused token drops that token only.
func TestSuiteTokenExpiredRefetched(t *testing.T) {
	t.Parallel()
	clock := wecom.NewFakeClock(time.Now())
	srv, base := suiteMock(t, mock.Config{Now: clock.Now}, "ticket-1")
	s := newSuite(t, wecom.WithBaseURL(base))
	if err := s.SetTicket(context.Background(), "ticket-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PreAuthCode(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour) // the mock's token expired; the client's is still good
	if _, _, err := s.PreAuthCode(context.Background()); err != nil {
		t.Fatalf("PreAuthCode after 42009: %v", err)
	}
	if n, refused := suiteTokenFetches(srv), srv.Stats().Refusals[wecom.CodeSuiteTokenExpired]; n != 2 || refused != 1 {
		t.Errorf("%d suite token fetches and %d refusals 42009, want 2 and 1", n, refused)
	}
}

// The tickets of two suites on one store do not overwrite each other.
func TestSuiteTicketsOfTwoSuites(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	store := wecom.NewMemoryTokenStore()
	var suites []*wecom.Suite
	for i, id := range []string{"wwsuiteA", "wwsuiteB"} {
		ticket := "ticket-" + id
		srv.AddSuite(id, testSuiteSecret, ticket)
		s, err := wecom.NewSuite(id, testSuiteSecret, wecom.WithBaseURL(base), wecom.WithTokenStore(store))
		if err != nil {
			t.Fatal(err)
		}
		// The second suite's ticket is the newer: it must not replace the first's.
		if err := s.SetTicket(context.Background(), ticket, time.Now().Add(time.Duration(i-5)*time.Minute)); err != nil {
			t.Fatal(err)
		}
		suites = append(suites, s)
	}
	for _, s := range suites {
		if _, _, err := s.PreAuthCode(context.Background()); err != nil {
			t.Errorf("suite %s: %v", s.ID(), err)
		}
	}
}

// The mock pushes a suite_ticket to the suite's command URL at once and
// every 10 minutes of its clock; a callback.Handler feeds them to the
// Suite in one line; the token is fetched with the newest, after the
// first expired at WeCom.
func TestSuiteTicketPushed(t *testing.T) {
	t.Parallel()
	const cbToken, cbKey = "callbackToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	clock := wecom.NewFakeClock(time.Now())
	srv, base := suiteMock(t, mock.Config{Now: clock.Now}, "")
	s := newSuite(t, wecom.WithBaseURL(base))
	crypto, err := callback.NewCrypto(cbToken, cbKey, testSuiteID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto, callback.WithTimestampWindow(0)) // the mock's clock runs ahead
	if err != nil {
		t.Fatal(err)
	}
	callback.Handle(h, s.ReceiveTicket)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	t.Cleanup(srv.Close)
	if err := srv.SetSuiteCallback(testSuiteID, mock.CallbackConfig{URL: hs.URL, Token: cbToken, EncodingAESKey: cbKey}); err != nil {
		t.Fatal(err)
	}
	call := func() {
		t.Helper()
		if _, _, err := s.PreAuthCode(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := srv.WaitCallbacks(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.WaitCallbacks(context.Background()); err != nil {
		t.Fatal(err)
	}
	call()
	clock.Advance(mock.SuiteTicketInterval)
	call() // the second ticket is pushed as this call arrives
	clock.Advance(25 * time.Minute)
	srv.InvalidateSuiteTokens() // the next fetch needs a ticket valid at t0+35m: not the first
	call()
	delivered := 0
	for _, d := range srv.CallbackDeliveries() {
		if d.Delivered {
			delivered++
		}
	}
	if delivered < 3 {
		t.Errorf("%d tickets delivered, want 3 or more", delivered)
	}
	if n := srv.Stats().Refusals[wecom.CodeInvalidSuiteTicket]; n != 0 {
		t.Errorf("%d fetches with an expired ticket", n)
	}
}
