package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

const (
	// embeddedBase is the base URL of the embedded mock.
	embeddedBase = "https://qyapi.weixin.qq.com"
	// commandURL is the suite's command URL, served in process.
	commandURL          = "https://provider.example/wecom/command"
	suiteID, suiteCode  = "wwprovsuite", "suite-secret-of-the-example"
	cbToken, cbKey      = "commandToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	egress              = "203.0.113.10" // the provider's egress IP (TEST-NET-3)
	member              = "member001"    // the member whose customers a corp tags
	groupName, tagName  = "provider", "served"
	workersPerCorp      = 10 // over the corp's 5 in flight: the client holds each corp to its bound
	codeBusy, codeLimit = wecom.CodeConcurrencyLimited, wecom.CodeFrequencyLimited
)

// corpStats are what one corp's run tagged and met.
type corpStats struct {
	id             string
	tagged, failed atomic.Int64
	busy, limited  atomic.Int64 // 45033 and 45009 answered to the corp
	firstErr       atomic.Pointer[error]
	customers      int
	start, end     time.Time
	marking        time.Time // when the first mark started
	// firstSent: when its first mark_tag went out (unix ns; 0: none yet),
	// how long after marking its first call waited for its leases
	firstSent atomic.Int64
}

// sent records a mark_tag sent at t.
func (cs *corpStats) sent(t time.Time) {
	for {
		cur := cs.firstSent.Load()
		if cur != 0 && cur <= t.UnixNano() || cs.firstSent.CompareAndSwap(cur, t.UnixNano()) {
			return
		}
	}
}

func (cs *corpStats) fail(n int, err error) {
	cs.failed.Add(int64(n))
	cs.firstErr.CompareAndSwap(nil, &err)
}

// corpKey carries a call's *corpStats to the observer, which every corp's
// client shares.
type corpKey struct{}

// observe counts the refusals of each corp's calls.
func observe(ctx context.Context, a wecom.Attempt) {
	cs, _ := ctx.Value(corpKey{}).(*corpStats)
	if cs == nil {
		return
	}
	if a.Path == markPath && a.Duration > 0 {
		cs.sent(time.Now().Add(-a.Duration))
	}
	switch a.ErrCode {
	case codeBusy:
		cs.busy.Add(1)
	case codeLimit:
		cs.limited.Add(1)
	}
}

func corpID(i int) string { return fmt.Sprintf("wwprov%04d", i+1) }

func customerID(corp, j int) string { return fmt.Sprintf("wmprov%04dc%05d", corp+1, j+1) }

// embedded returns the mock WeCom: the suite, and corps each with
// cfg.customers customers of member, behind an httpmock transport.
func embedded(cfg config) (*mock.Server, *httpmock.MockTransport, error) {
	window := cfg.ipPerMinute
	if cfg.mockIPPerMinute > 0 {
		window = cfg.mockIPPerMinute
	}
	srv, err := mock.New(mock.Config{Latency: cfg.latency, IPWindows: []mock.Window{{Limit: window, Period: time.Minute}}})
	if err != nil {
		return nil, nil, err
	}
	srv.AddSuite(suiteID, suiteCode, "") // no ticket until one is pushed
	for i := range cfg.corps {
		ids := make([]string, cfg.customers)
		for j := range ids {
			ids[j] = customerID(i, j)
		}
		srv.AddCustomers(corpID(i), member, ids...)
	}
	mt := httpmock.NewMockTransport()
	srv.Register(mt, embeddedBase)
	return srv, mt, nil
}

// inProcess is a transport that hands every request to h, in process: the
// mock's pushes to the command URL.
func inProcess(h http.Handler) http.RoundTripper {
	mt := httpmock.NewMockTransport()
	mt.RegisterNoResponder(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	})
	return mt
}

// provider is the set-up of a run: the mock, and the suite's
// installations, every corp authorized.
type provider struct {
	srv   *mock.Server
	in    *wecom.Installations
	codes *wecom.MemoryPermanentCodes
}

// run sets up the mock, the suite and its command URL, receives the
// authorizations, and tags every customer of every corp.
func run(ctx context.Context, cfg config, stdout io.Writer) (*summary, error) {
	if cfg.baseURL != "" {
		return runShard(ctx, cfg, stdout)
	}
	p, err := start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer p.srv.Close()
	sum := tagAll(ctx, p.in, cfg, firstCorps(cfg.corps))
	sum.mock = p.srv.Stats()
	return sum, nil
}

// start makes the mock and the suite's installations, and has every corp
// authorize the suite by callback.
func start(ctx context.Context, cfg config) (*provider, error) {
	srv, mt, err := embedded(cfg)
	if err != nil {
		return nil, err
	}
	opts := []wecom.Option{wecom.WithBaseURL(embeddedBase), wecom.WithTransport(mt),
		wecom.WithLimiter(throttle.NewMemory()), wecom.WithTokenStore(wecom.NewMemoryTokenStore()),
		wecom.WithEgress(egress), wecom.WithIPLimits(cfg.ipPerMinute, 0), wecom.WithObserver(observe)}
	p := &provider{srv: srv, codes: &wecom.MemoryPermanentCodes{}}
	suite, err := wecom.NewSuite(suiteID, suiteCode, opts...)
	if err == nil {
		p.in, err = wecom.NewInstallations(suite, p.codes, wecom.WithClientOptions(opts...))
	}
	if err == nil {
		err = authorize(ctx, srv, p.in, cfg)
	}
	if n := p.codes.Len(); err == nil && n != cfg.corps {
		err = fmt.Errorf("%d of %d authorizations received", n, cfg.corps)
	}
	if err != nil {
		srv.Close()
		return nil, err
	}
	return p, nil
}

// authorize serves the suite's command URL, on which the mock pushes the
// suite_ticket and then each corp's create_auth, and waits for them all.
func authorize(ctx context.Context, srv *mock.Server, in *wecom.Installations, cfg config) error {
	crypto, err := callback.NewCrypto(cbToken, cbKey, suiteID)
	if err != nil {
		return err
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		return err
	}
	defer h.Close(context.WithoutCancel(ctx))
	in.Handle(h, nil)
	if err := srv.SetSuiteCallback(suiteID, mock.CallbackConfig{URL: commandURL, Token: cbToken, EncodingAESKey: cbKey, Transport: inProcess(h)}); err != nil {
		return err
	}
	if err := srv.WaitCallbacks(ctx); err != nil { // the ticket first
		return err
	}
	for i := range cfg.corps {
		if _, err := srv.Authorize(suiteID, corpID(i)); err != nil {
			return err
		}
	}
	if err := srv.WaitCallbacks(ctx); err != nil {
		return err
	}
	if st := h.Stats(); st.Failed+st.Rejected > 0 {
		return fmt.Errorf("the command URL failed %d and rejected %d callbacks", st.Failed, st.Rejected)
	}
	return nil
}

// firstCorps returns the indices of the first n corps.
func firstCorps(n int) []int {
	corps := make([]int, n)
	for i := range corps {
		corps[i] = i
	}
	return corps
}

// tagAll tags every customer of the corps (indices), all at once.
func tagAll(ctx context.Context, in *wecom.Installations, cfg config, corps []int) *summary {
	cfg.corps = len(corps)
	sum := &summary{cfg: cfg, start: time.Now()}
	var wg sync.WaitGroup
	for _, i := range corps {
		cs := &corpStats{id: corpID(i), customers: cfg.customers}
		sum.corps = append(sum.corps, cs)
		wg.Go(func() { tagCorp(context.WithValue(ctx, corpKey{}, cs), in, i, cs) })
	}
	wg.Wait()
	sum.end = time.Now()
	return sum
}

// tagCorp tags the customers of corp i with workersPerCorp goroutines; the
// corp's client holds them to the corp's bound.
func tagCorp(ctx context.Context, in *wecom.Installations, i int, cs *corpStats) {
	cs.start = time.Now()
	defer func() { cs.end = time.Now() }()
	c, err := in.Client(ctx, cs.id)
	var tag string
	if err == nil {
		tag, err = ensureTag(ctx, c)
	}
	if err != nil {
		cs.fail(cs.customers, err)
		return
	}
	cs.marking = time.Now()
	next := make(chan string)
	var wg sync.WaitGroup
	for range workersPerCorp {
		wg.Go(func() {
			for ext := range next {
				err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: member, ExternalUserID: ext, AddTags: []string{tag}})
				if err != nil {
					cs.fail(1, err)
					continue
				}
				cs.tagged.Add(1)
			}
		})
	}
	for j := range cs.customers {
		next <- customerID(i, j)
	}
	close(next)
	wg.Wait()
}

// ensureTag returns the id of the tag in the corp, made if need be (a
// second run against the same mock finds it).
func ensureTag(ctx context.Context, c *wecom.Client) (string, error) {
	groups, err := c.CustomerTags.List(ctx, wecom.CorpTagListRequest{})
	if err != nil {
		return "", err
	}
	for _, g := range groups {
		for _, t := range g.Tags {
			if g.GroupName == groupName && t.Name == tagName {
				return t.ID, nil
			}
		}
	}
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: groupName, Tags: []wecom.CorpTagSpec{{Name: tagName}}})
	if err != nil {
		return "", err
	}
	if len(g.Tags) == 0 {
		return "", errors.New("add_corp_tag answered no tag")
	}
	return g.Tags[0].ID, nil
}

var markPath = catalog.MarkTag.Path()
