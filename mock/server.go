package mock

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/wecomkit/wecom/catalog"
)

// defaultTokenTTL is WeCom's expires_in, applied by New when
// Config.TokenTTL is zero.
const defaultTokenTTL = 7200 * time.Second

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Latency is the service time of every API call except gettoken
	// (default 0). As at WeCom, a call stays in flight for its whole
	// service time and is applied even when its client hangs up.
	Latency time.Duration

	// LatencyJitter spreads the service time: each call's is drawn
	// uniformly from [Latency-LatencyJitter, Latency+LatencyJitter] with
	// the seeded source (Config.Seed), so that its mean stays Latency while
	// calls stop finishing in step, as real ones do (default 0: every call
	// takes Latency). It must not exceed Latency.
	LatencyJitter time.Duration

	// TokenTTL is the lifetime of an access token (default 7200 s, WeCom's
	// expires_in).
	TokenTTL time.Duration

	// Concurrency is the most calls in flight per (corp, API) for every
	// API the catalog caps so (catalog.RuleInFlight: the contact-tag and
	// customer-contact-tag APIs, remark); a call over it gets 45033. Zero
	// means each API's cap in the catalog (5); negative means unlimited.
	Concurrency int

	// PerCustomerConcurrency is the most calls in flight per (corp,
	// userid, external_userid) among the APIs that share the catalog's
	// per-customer lock (catalog.RuleCustomer: mark_tag and remark); a call
	// over it gets 45033. Zero means the catalog's cap (1); negative means
	// unlimited.
	PerCustomerConcurrency int

	// Windows are the rate windows applied per (corp, API) to every API
	// except gettoken. A nil slice means each API's per-minute and per-hour
	// rules in the catalog (WeCom's 10,000 calls per minute and 150,000 per
	// hour); a non-nil empty slice means no rate limit at all. The
	// catalog's calendar rules (a CST day's or month's count, such as
	// uploadimg's) are enforced either way.
	Windows []Window

	// IPWindows are the rate windows applied per (source IP, API) to every
	// API except gettoken, across every corp calling from the IP (WeCom's
	// per-IP limits; the source IP is the request's remote address). A nil
	// slice means each API's per-IP rules in the catalog
	// (catalog.IPPerMinute and catalog.IPPerHour), and for a third-party
	// app's call (on a corp token from get_corp_token) WeCom's higher
	// catalog.ThirdPartyIPPerMinute and catalog.ThirdPartyIPPerHour; a
	// non-nil empty slice means none. Going over one answers 45009 and blocks the (IP, API)
	// for the window's period, whichever corp calls.
	IPWindows []Window

	// Now is the clock used for token expiry, rate windows and create
	// times (default time.Now). It is called with the server's lock held
	// and must not call back into the Server.
	Now func() time.Time

	// Seed seeds the randomness of fault injection (0 means 1), so a run
	// with faults can be repeated exactly.
	Seed int64
}

// Window is one rate window: at most Limit calls in any Period. Going over
// it answers 45009 and blocks the (corp, API) for Period.
type Window struct {
	Limit  int
	Period time.Duration
}

// Faults configures fault injection. Each fraction is clamped to [0, 1].
// Faults apply to every API except gettoken; whether a call is faulted is
// decided with a math/rand/v2 source seeded by Config.Seed, under the
// server's lock, after the token and rate checks.
type Faults struct {
	// SystemBusy is the fraction of calls answered at once with
	// {"errcode":-1,"errmsg":"system busy"}; nothing is applied.
	SystemBusy float64
	// HTTP5xx is the fraction of calls answered at once with HTTP 502 and
	// a non-JSON (HTML) body; nothing is applied.
	HTTP5xx float64
	// Malformed is the fraction of calls answered HTTP 200 with truncated,
	// invalid JSON. These calls are otherwise served normally, so their
	// change IS applied: the answer is lost, not the request.
	Malformed float64
	// Slow is the fraction of calls delayed by SlowLatency on top of the
	// configured latency.
	Slow float64
	// SlowLatency is the extra delay of a slow call.
	SlowLatency time.Duration
}

// Stats counts what a Server has seen since New or the last ResetStats.
type Stats struct {
	// Calls counts every request received, by URL path (gettoken and
	// unknown paths included).
	Calls map[string]int
	// MaxInFlight is, by API path, the highest number of admitted calls in
	// flight at once for any one corp.
	MaxInFlight map[string]int
	// Refusals counts, by errcode, the answers that carried each non-zero
	// errcode (truncated answers from the Malformed fault excluded).
	Refusals map[int]int
	// GetTokenCalls counts every gettoken request, failed ones included.
	GetTokenCalls int
	// MarkCalls counts the mark_tag calls that succeeded (errcode 0).
	MarkCalls int
	// Scripted counts the calls answered by a Script instead of the model.
	Scripted int
}

// Tag is a contact tag (通讯录标签) as held by a Server.
type Tag struct {
	ID      int
	Name    string
	Users   []string // sorted; nil when empty
	Parties []int    // sorted; nil when empty
}

// CorpTagGroup is a customer-contact tag group (企业客户标签组) as held by a
// Server.
type CorpTagGroup struct {
	ID    string
	Name  string
	Order uint32
	Tags  []CorpTag
}

// CorpTag is a customer-contact tag (企业客户标签) as held by a Server.
type CorpTag struct {
	ID    string
	Name  string
	Order uint32
}

// corp is the state of one corp, a part per domain, each in the file of
// its APIs. Every access holds Server.mu.
type corp struct {
	id   string
	apps map[string]*token // app secret → current token (nil before the first gettoken)

	contacts     // contact_tags.go
	customerTags // customer_tags.go
	customerBook // customers.go
	// transfers: the customer transfers (nil until the first is used).
	transfers *transferBook
	// groupChats: chat_id → the customer group chat (nil until one is
	// added).
	groupChats map[string]*GroupChat
	// media: the files (media.go; nil until one is stored).
	media *mediaStore
	// tickets: the JS-SDK tickets, "jsapi" and "agent:<app>"
	// (credentials.go; nil until one is asked).
	tickets map[string]*token
	// suite: a suite's installations, in its corp suite:<id> (suites.go;
	// nil until one is made).
	suite *suiteBook
	// logins: a provider's web logins by auth_code, {corp, user}
	// (credentials.go; nil until one is added).
	logins map[string][2]string
	// messages: the app messages (messages.go; nil until one is sent).
	messages *messageBook
	// robots: the group robots by webhook key (robots.go): set only in
	// the Server's robot host, a corp of their own.
	robots map[string]*robot
	// appChats: the app group chats (appchats.go; nil until one is
	// used).
	appChats *appChatBook
	// welcomes: welcome codes and messages (welcome.go; nil until one is
	// issued).
	welcomes *welcomeBook
	// directory: the members and departments (directory.go; nil until
	// used).
	directory *directory
	// signIns: sign-in codes and user tickets (signin.go; nil until one is
	// issued).
	signIns *signInBook
	// jobs: the batch jobs (jobs.go; nil until one is started).
	jobs *jobBook
}

func newCorp(id string) *corp {
	return &corp{id: id, apps: make(map[string]*token), contacts: newContacts(), customerTags: newCustomerTags(), customerBook: newCustomerBook()}
}

// Server is a fake WeCom server. Create it with New; it is safe for
// concurrent use.
type Server struct {
	// Fixed by New.
	now      func() time.Time
	tokenTTL time.Duration
	routes   map[string]*route
	jitter   time.Duration

	mu      sync.Mutex
	latency time.Duration
	faults  Faults
	rng     *rand.Rand
	corps   map[string]*corp
	tokens  map[string]*token
	// suites and providers, with their tokens (credentials.go).
	suites, providers *tokenBook
	// robotHost holds the group robots (robots.go).
	robotHost *corp
	rates     map[limitKey]*rateLog
	inFlight  map[limitKey]int
	stats     Stats
	scripts   []*Script
	hintSeq   uint64
	// push holds the callbacks pushed to receivers (callbacks.go).
	push *pushes
}

// New returns a Server configured by cfg. It fails when cfg.Latency or
// cfg.TokenTTL is negative, when cfg.LatencyJitter is negative or over
// cfg.Latency, or when a Window has a Limit or Period that is not positive.
func New(cfg Config) (*Server, error) {
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("mock: negative Latency %v", cfg.Latency)
	}
	if cfg.LatencyJitter < 0 || cfg.LatencyJitter > cfg.Latency {
		return nil, fmt.Errorf("mock: LatencyJitter %v not within [0, Latency %v]", cfg.LatencyJitter, cfg.Latency)
	}
	if cfg.TokenTTL < 0 {
		return nil, fmt.Errorf("mock: negative TokenTTL %v", cfg.TokenTTL)
	}
	for _, ws := range []struct {
		name string
		ws   *[]Window
	}{{"Windows", &cfg.Windows}, {"IPWindows", &cfg.IPWindows}} {
		for i, w := range *ws.ws {
			if w.Limit <= 0 {
				return nil, fmt.Errorf("mock: %s[%d]: Limit %d is not positive", ws.name, i, w.Limit)
			}
			if w.Period <= 0 {
				return nil, fmt.Errorf("mock: %s[%d]: Period %v is not positive", ws.name, i, w.Period)
			}
		}
		if *ws.ws != nil {
			*ws.ws = slices.Clone(*ws.ws)
		}
	}
	routes, err := newRoutes(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		now:       cfg.Now,
		tokenTTL:  cfg.TokenTTL,
		routes:    routes,
		jitter:    cfg.LatencyJitter,
		latency:   cfg.Latency,
		corps:     make(map[string]*corp),
		tokens:    make(map[string]*token),
		suites:    newTokenBook("suite", catalog.CodeInvalidSuiteToken, catalog.CodeSuiteTokenExpired),
		providers: newTokenBook("provider", catalog.CodeInvalidAccessToken, catalog.CodeAccessTokenExpired),
		robotHost: newCorp(""),
		rates:     make(map[limitKey]*rateLog),
		inFlight:  make(map[limitKey]int),
		stats:     newStats(),
		push:      newPushes(),
	}
	s.robotHost.robots = make(map[string]*robot)
	if s.now == nil {
		s.now = time.Now
	}
	if s.tokenTTL == 0 {
		s.tokenTTL = defaultTokenTTL
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = 1
	}
	s.rng = rand.New(rand.NewPCG(uint64(seed), 0))
	return s, nil
}

func newStats() Stats {
	return Stats{
		Calls:       make(map[string]int),
		MaxInFlight: make(map[string]int),
		Refusals:    make(map[int]int),
	}
}

// corpLocked returns the corp with that id, creating it. s.mu must be held.
func (s *Server) corpLocked(id string) *corp {
	c := s.corps[id]
	if c == nil {
		c = newCorp(id)
		s.corps[id] = c
	}
	return c
}

// AddApp registers the credentials of one app of a corp. A corp may have
// many apps; each gets its own token. Registering the same pair twice is a
// no-op.
func (s *Server) AddApp(corpID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	if _, ok := c.apps[secret]; !ok {
		c.apps[secret] = nil
	}
}

// AddUsers adds members to a corp's contact directory. Only these userids
// are valid in addtagusers.
func (s *Server) AddUsers(corpID string, userIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	for _, u := range userIDs {
		c.users[u] = true
	}
}

// AddParties adds departments to a corp's contact directory. Only these ids
// are valid in addtagusers.
func (s *Server) AddParties(corpID string, partyIDs ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	for _, p := range partyIDs {
		c.parties[p] = true
	}
}

// Handler returns an http.Handler serving every WeCom path under /cgi-bin/
// that the Server knows; other paths get a plain HTTP 404.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r)
	})
}

// Start starts an httptest.Server serving Handler. The caller must Close
// it.
func (s *Server) Start() *httptest.Server {
	return httptest.NewServer(s.Handler())
}

// Responder returns an httpmock.Responder that behaves exactly as Handler.
// When the request's context ends first, the responder returns the context's
// error at once, and the call goes on without its client as it would at
// WeCom: it stays in flight for its whole service time and is applied.
func (s *Server) Responder() httpmock.Responder {
	return s.responder("")
}

// responder serves req with the Handler logic after removing prefix (the
// path of a registered base URL) from the request path.
func (s *Server) responder(prefix string) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		r := req
		if prefix != "" && strings.HasPrefix(req.URL.Path, prefix+"/") {
			r = req.Clone(req.Context())
			r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
			r.URL.RawPath = ""
		}
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serve(rec, r)
		}()
		select {
		case <-done:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		resp := rec.Result()
		resp.Request = req
		return resp, nil
	}
}

// Register registers Responder on mt for every API the Server knows, with
// the HTTP method that API uses, under baseURL (for example
// "https://qyapi.weixin.qq.com"). A path in baseURL is accepted and removed
// before routing. Register does nothing when mt is nil.
func (s *Server) Register(mt *httpmock.MockTransport, baseURL string) {
	if mt == nil {
		return
	}
	base := strings.TrimRight(baseURL, "/")
	prefix := ""
	if u, err := url.Parse(base); err == nil {
		prefix = strings.TrimRight(u.Path, "/")
	}
	resp := s.responder(prefix)
	for _, rt := range s.routes {
		mt.RegisterResponder(rt.Method, base+string(rt.ID), resp)
	}
}

// SetLatency changes the service time of every later API call except
// gettoken. A negative d counts as 0. Config.LatencyJitter still applies; a
// drawn service time under 0 counts as 0.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = max(d, 0)
}

// SetFaults replaces the fault injection settings for later calls.
func (s *Server) SetFaults(f Faults) {
	clamp := func(x float64) float64 {
		if !(x > 0) { // also catches NaN
			return 0
		}
		return min(x, 1)
	}
	f.SystemBusy = clamp(f.SystemBusy)
	f.HTTP5xx = clamp(f.HTTP5xx)
	f.Malformed = clamp(f.Malformed)
	f.Slow = clamp(f.Slow)
	f.SlowLatency = max(f.SlowLatency, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// InvalidateTokens makes every token issued so far invalid at once: calls
// with one get 40014, and the next gettoken of each app issues a new token.
func (s *Server) InvalidateTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = make(map[string]*token)
	for _, c := range s.corps {
		for secret := range c.apps {
			c.apps[secret] = nil
		}
	}
}

// Stats returns a deep copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Calls:         maps.Clone(s.stats.Calls),
		MaxInFlight:   maps.Clone(s.stats.MaxInFlight),
		Refusals:      maps.Clone(s.stats.Refusals),
		GetTokenCalls: s.stats.GetTokenCalls,
		MarkCalls:     s.stats.MarkCalls,
		Scripted:      s.stats.Scripted,
	}
}

// ResetStats zeroes every counter of Stats.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = newStats()
}

// Tags returns the contact tags of a corp sorted by id, with their members
// sorted. It returns nil for an unknown corp.
func (s *Server) Tags(corpID string) []Tag {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return nil
	}
	var out []Tag
	for _, t := range c.sortedTags() {
		out = append(out, Tag{
			ID:      t.id,
			Name:    t.name,
			Users:   sortedKeys(t.users),
			Parties: sortedKeys(t.parties),
		})
	}
	return out
}

// CorpTagGroups returns the customer-contact tag groups of a corp, and their
// tags, in the order get_corp_tag_list answers them: larger order first,
// then oldest first. It returns nil for an unknown corp.
func (s *Server) CorpTagGroups(corpID string) []CorpTagGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return nil
	}
	var out []CorpTagGroup
	for _, g := range c.sortedGroups() {
		cg := CorpTagGroup{ID: g.id, Name: g.name, Order: g.order}
		for _, t := range g.sortedTags() {
			cg.Tags = append(cg.Tags, CorpTag{ID: t.id, Name: t.name, Order: t.order})
		}
		out = append(out, cg)
	}
	return out
}

// Marks returns the ids of the customer-contact tags currently marked on
// one customer of one member, sorted; nil when there are none.
func (s *Server) Marks(corpID, userID, externalUserID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return nil
	}
	return sortedKeys(c.marks[markKey{userID, externalUserID}])
}
