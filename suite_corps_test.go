package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
)

// commandURL serves h, a handler of the test suite's command URL, and
// makes srv push the suite's command callbacks to it.
func commandURL(t *testing.T, srv *mock.Server, register func(h *callback.Handler)) {
	t.Helper()
	const cbToken, cbKey = "callbackToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	crypto, err := callback.NewCrypto(cbToken, cbKey, testSuiteID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	register(h)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	t.Cleanup(srv.Close)
	if err := srv.SetSuiteCallback(testSuiteID, mock.CallbackConfig{URL: hs.URL, Token: cbToken, EncodingAESKey: cbKey}); err != nil {
		t.Fatal(err)
	}
}

// newInstallations returns the test suite's installations in codes, the
// suite and the registry made with opts.
func newInstallations(t *testing.T, codes wecom.PermanentCodeStore, opts ...wecom.Option) *wecom.Installations {
	t.Helper()
	in, err := wecom.NewInstallations(newSuite(t, opts...), codes, wecom.WithClientOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func corpTokenFetches(srv *mock.Server) int { return srv.Stats().Calls[catalog.GetCorpToken.Path()] }

// The authorization callbacks reach the user through Installations.Handle:
// create_auth keeps the corp's permanent code and agent id, and its client
// runs on its corp token; change_auth is handed on; cancel_auth drops the
// corp's client and permanent code, and its client is no longer built.
func TestInstallationsCallbacks(t *testing.T) {
	t.Parallel()
	srv, base := suiteMock(t, mock.Config{}, "")
	codes := &wecom.MemoryPermanentCodes{}
	in := newInstallations(t, codes, wecom.WithBaseURL(base))
	seen := make(chan string, 8) // "corp id InfoType", as the user's hook saw them
	commandURL(t, srv, func(h *callback.Handler) {
		in.Handle(h, func(_ context.Context, ev *callback.AuthEvent, a *wecom.Authorization) error {
			corp := ev.AuthCorpID
			if a != nil {
				corp = a.Corp.CorpID
			}
			seen <- corp + " " + ev.InfoType
			return nil
		})
	})
	const corp = "wwinstalled1"
	ctx := context.Background()
	// wait waits for the hook to see infoType: a callback the handler
	// acknowledged at its deadline, under load, runs on after it.
	wait := func(infoType string) {
		t.Helper()
		select {
		case got := <-seen:
			if want := corp + " " + infoType; got != want {
				t.Fatalf("the user saw %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the user never saw %s", infoType)
		}
	}
	if _, err := srv.Authorize(testSuiteID, corp); err != nil {
		t.Fatal(err)
	}
	wait(wecom.InfoCreateAuth)
	got, err := codes.Get(ctx, corp)
	if err != nil || got.PermanentCode == "" || got.AgentID == 0 {
		t.Fatalf("after create_auth the store holds %+v, %v", got, err)
	}
	c, err := in.Client(ctx, corp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tags.List(ctx); err != nil {
		t.Fatalf("a call on the corp token: %v", err)
	}
	if err := srv.ChangeAuthorization(testSuiteID, corp); err != nil {
		t.Fatal(err)
	}
	wait(wecom.InfoChangeAuth)
	if err := srv.Deauthorize(testSuiteID, corp); err != nil {
		t.Fatal(err)
	}
	wait(wecom.InfoCancelAuth)
	if codes.Len() != 0 || in.Registry().Len() != 0 {
		t.Errorf("after cancel_auth: %d permanent codes, %d clients; want none", codes.Len(), in.Registry().Len())
	}
	if _, err := in.Client(ctx, corp); !errors.Is(err, wecom.ErrUnknownApp) {
		t.Errorf("the client of a corp that cancelled: %v, want ErrUnknownApp", err)
	}
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		t.Errorf("the user saw %q besides", got)
	default:
	}
}

// A create_auth whose exchange outlasts WeCom's 1 s for a command callback
// (the handler acknowledges it at its deadline, and WeCom pushes it no
// more) still keeps the corp's permanent code, and the user's hook sees
// it: the auth code was spent by the first get_permanent_code, so an
// exchange cut short there would lose the installation for good.
func TestInstallationsOutlastWeComHangingUp(t *testing.T) {
	t.Parallel()
	srv, base := suiteMock(t, mock.Config{}, "")
	codes := &wecom.MemoryPermanentCodes{}
	in := newInstallations(t, codes, wecom.WithBaseURL(base))
	installed := make(chan string, 3)
	var handler *callback.Handler
	commandURL(t, srv, func(h *callback.Handler) {
		handler = h
		in.Handle(h, func(ctx context.Context, ev *callback.AuthEvent, a *wecom.Authorization) error {
			if a != nil {
				installed <- a.Corp.CorpID
			}
			return ctx.Err()
		})
	})
	const corp = "wwslowinstall1"
	ctx := context.Background()
	if err := srv.WaitCallbacks(ctx); err != nil { // the suite ticket
		t.Fatal(err)
	}
	srv.SetLatency(mock.CommandTimeout * 3 / 4) // two calls at least: over 1 s
	if _, err := srv.Authorize(testSuiteID, corp); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-installed:
		if got != corp {
			t.Fatalf("the hook saw corp %q, want %q", got, corp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook never saw the installation")
	}
	if inst, err := codes.Get(ctx, corp); err != nil || inst.PermanentCode == "" || inst.AgentID == 0 {
		t.Fatalf("the store holds %+v, %v", inst, err)
	}
	if st := handler.Stats(); st.Overran == 0 {
		t.Fatalf("no handler ran past its deadline (%+v): the test tested nothing", st)
	}
}

// Receive refuses what is not an authorization of its suite.
func TestInstallationsReceiveRefuses(t *testing.T) {
	t.Parallel()
	in := newInstallations(t, &wecom.MemoryPermanentCodes{}, wecom.WithBaseURL("http://127.0.0.1:1"))
	for _, ev := range []*callback.AuthEvent{
		nil,
		{Header: callback.Header{SuiteID: "wwother", InfoType: wecom.InfoCreateAuth}, AuthCode: "x"},
		{Header: callback.Header{SuiteID: testSuiteID, InfoType: "suite_ticket"}},
		{Header: callback.Header{SuiteID: testSuiteID, InfoType: wecom.InfoCancelAuth}},
		{Header: callback.Header{SuiteID: testSuiteID, InfoType: wecom.InfoCreateAuth}},
	} {
		if _, err := in.Receive(context.Background(), ev); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%+v: %v, want ErrInvalidRequest", ev, err)
		}
	}
	if err := (&wecom.MemoryPermanentCodes{}).Set(context.Background(), "wwc", wecom.Installation{PermanentCode: "p"}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("an installation without an agent id: %v", err)
	}
}

// Three processes (Installations and registries) sharing a Redis limiter,
// token store and permanent code store: many first calls at once to every
// corp, spread over the three, fetch each corp's token once
// (get_corp_token) for the fleet; cancel_auth received by one drops the
// corp there, and its token from the shared store.
func TestInstallationsCorpTokenAcrossProcesses(t *testing.T) {
	t.Parallel()
	corpTokenAcrossProcesses(t, 6, 8)
}

// scaleEnv runs TestInstallationsScaleAcrossProcesses when set.
const scaleEnv = "WECOM_PROVIDER_SCALE"

// TestInstallationsScaleAcrossProcesses (WECOM_PROVIDER_SCALE=1): the
// same with 1,000 corps, each first called by the three processes at once.
func TestInstallationsScaleAcrossProcesses(t *testing.T) {
	if os.Getenv(scaleEnv) == "" {
		t.Skip("1,000 corps: set " + scaleEnv + "=1 to run")
	}
	corpTokenAcrossProcesses(t, 1000, 3)
}

// corpTokenAcrossProcesses authorizes corps, calls each callers times at
// once across three processes, and cancels the first.
func corpTokenAcrossProcesses(t *testing.T, corps, callers int) {
	srv, base := suiteMock(t, mock.Config{}, "ticket-1")
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	var ins []*wecom.Installations
	for _, o := range fleetOptions(t, base, 3, io.Discard) {
		codes, err := redisstore.NewPermanentCodes(rdb, prefix, testSuiteID)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, newInstallations(t, codes, o...))
	}
	ctx := context.Background()
	for i := range corps {
		corp := fmt.Sprintf("wwfleetcorp%d", i)
		code, err := srv.Authorize(testSuiteID, corp)
		if err != nil {
			t.Fatal(err)
		}
		ev := &callback.AuthEvent{Header: callback.Header{SuiteID: testSuiteID, InfoType: wecom.InfoCreateAuth, AuthCorpID: corp}, AuthCode: code}
		if i == 0 {
			if err := ins[0].Suite().SetTicket(ctx, "ticket-1", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ins[i%3].Receive(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, corps*callers)
	for i := range corps * callers {
		wg.Go(func() {
			c, err := ins[i/corps%3].Client(ctx, fmt.Sprintf("wwfleetcorp%d", i%corps))
			if err == nil {
				_, err = c.Tags.List(ctx)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var bytes int64
	nkeys := 0
	for _, match := range []string{"*{wwfleetcorp1}*", "*}:wwfleetcorp1"} { // its token and limiter keys, its code
		iter := rdb.Scan(ctx, 0, match, 0).Iterator()
		for iter.Next(ctx) {
			nkeys++
			bytes += rdb.MemoryUsage(ctx, iter.Val()).Val()
		}
	}
	t.Logf("%d corps, %d first calls at once across 3 processes: %d get_corp_token calls; a corp's keys in Redis: %d, %d bytes", corps, corps*callers, corpTokenFetches(srv), nkeys, bytes)
	if n := corpTokenFetches(srv); n != corps {
		t.Errorf("%d get_corp_token calls for %d corps, want one each", n, corps)
	}
	keys := func() int {
		t.Helper()
		n := 0
		iter := rdb.Scan(ctx, 0, "*token:wecom:*{wwfleetcorp0}*", 0).Iterator()
		for iter.Next(ctx) {
			n++
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if keys() == 0 {
		t.Fatal("no key of the corp's token in the shared store")
	}
	if err := srv.Deauthorize(testSuiteID, "wwfleetcorp0"); err != nil {
		t.Fatal(err)
	}
	cancel := &callback.AuthEvent{Header: callback.Header{SuiteID: testSuiteID, InfoType: wecom.InfoCancelAuth, AuthCorpID: "wwfleetcorp0"}}
	if _, err := ins[1].Receive(ctx, cancel); err != nil {
		t.Fatal(err)
	}
	if n := keys(); n != 0 {
		t.Errorf("%d keys of the cancelled corp's token left in the shared store", n)
	}
	if _, err := ins[1].Client(ctx, "wwfleetcorp0"); !errors.Is(err, wecom.ErrUnknownApp) {
		t.Errorf("the cancelled corp's client: %v, want ErrUnknownApp", err)
	}
	if n := ins[1].Registry().Len(); n != corps-1 {
		t.Errorf("the registry that received cancel_auth holds %d clients, want %d", n, corps-1)
	}
}

// TestInstallationsRefusedPermanentCode: a corp whose permanent code WeCom
// refuses (40084: a wrong code, or one a process kept after the corp
// cancelled) fails its calls with ErrBadCredentials, and get_corp_token is
// not asked again for each of them.
func TestInstallationsRefusedPermanentCode(t *testing.T) {
	t.Parallel()
	const ticket, corp = "ticket-refused", "wwrefusedcode1"
	srv, base := suiteMock(t, mock.Config{}, ticket)
	ctx := context.Background()
	suite := newSuite(t, wecom.WithBaseURL(base))
	if err := suite.SetTicket(ctx, ticket, time.Now()); err != nil {
		t.Fatal(err)
	}
	authCode, err := srv.Authorize(testSuiteID, corp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := suite.PermanentCode(ctx, authCode); err != nil { // the corp installs the suite
		t.Fatal(err)
	}
	codes := &wecom.MemoryPermanentCodes{}
	if err := codes.Set(ctx, corp, wecom.Installation{PermanentCode: "not-the-code", AgentID: 1}); err != nil {
		t.Fatal(err)
	}
	in, err := wecom.NewInstallations(suite, codes, wecom.WithClientOptions(wecom.WithBaseURL(base)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := in.Client(ctx, corp)
	if err != nil {
		t.Fatal(err)
	}
	before := corpTokenFetches(srv)
	for i := range 5 {
		if _, err := c.Tags.List(ctx); !errors.Is(err, wecom.ErrBadCredentials) {
			t.Errorf("call %d: %v, want ErrBadCredentials", i+1, err)
		}
	}
	if n := corpTokenFetches(srv) - before; n != 1 {
		t.Errorf("%d get_corp_token for 5 calls, want 1", n)
	}
}
