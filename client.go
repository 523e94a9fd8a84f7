package wecom

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/wecomkit/wecom/throttle"
)

// DefaultBaseURL is WeCom's API endpoint.
const DefaultBaseURL = "https://qyapi.weixin.qq.com"

// Client calls the WeCom server API for one app of one corp. It is safe for
// concurrent use, cheap to create, and starts no goroutine: run one Client per
// (corp, app) and let them share one limiter backend, one token store and one
// HTTP transport through the options.
type Client struct {
	corpID          string
	secret          string
	agentID         int
	baseURL         string
	http            *resty.Client
	limiter         throttle.Backend
	tokens          *credential // the corp's access token
	suite           *credential // WithSuite's suite_access_token, or nil
	suiteCfg        *suiteConfig
	provider        *credential // WithProvider's provider_access_token, or nil
	robot           *credential // a Robot's webhook key, or nil
	providerCfg     *providerConfig
	jsapi, agentTkt *credential // the JS-SDK tickets
	overrides       map[string]*override
	endpoints       map[string]*endpointLimits
	generic         *endpointLimits
	egress          string
	now             func() time.Time
	retry           RetryPolicy
	logger          *slog.Logger
	observer        Observer
	stallObserver   StallObserver
	stalls          stallLog
	waitOnRateLimit bool
	attemptTimeout  time.Duration
	leaseTTLOpt     time.Duration
	abandonedHold   time.Duration
	adaptive        adaptive
	learner         *throttle.Learner
	blocks          blockLog
	near            nearCache
	background      tracker
	chats           chatBook // the members of app group chats (AppChats)

	// Tags calls the contact tag (通讯录标签) APIs.
	Tags *TagService
	// CustomerTags calls the customer-contact corp tag (客户联系企业标签) APIs.
	CustomerTags *CustomerTagService
	// Customers calls the customer contact (客户联系) APIs about customers.
	Customers *CustomerService
	// Media uploads and downloads files (素材).
	Media *MediaService
	// Messages sends app messages (应用消息).
	Messages *MessageService
	// AppChats creates app group chats (群聊会话) and posts to them.
	AppChats *AppChatService
}

type service struct{ client *Client }

// New returns a client for the app whose secret is given, in the corp whose id
// is given. Without options it calls DefaultBaseURL through a transport of its
// own (pass one to WithTransport to share connections among clients), throttles with a private in-process limiter and caches
// tokens in memory.
func New(corpID, secret string, opts ...Option) (*Client, error) {
	c, err := newClient(corpID, secret, opts)
	if err != nil {
		return nil, err
	}
	switch {
	case corpID == "" || strings.ContainsAny(corpID, " \t\r\n{}|"):
		return nil, invalid("corp id", "%q is empty or holds a space, brace or bar", corpID)
	case secret == "" && c.tokens.source == nil:
		return nil, invalid("secret", "empty (give a secret, or WithTokenSource)")
	case secret == "" && c.agentID == 0:
		return nil, invalid("agent id", "required with a token source and no secret, to keep apps' tokens apart")
	}
	return c, c.finish()
}

// newClient returns a client with its defaults and opts applied.
func newClient(corpID, secret string, opts []Option) (*Client, error) {
	c := &Client{
		corpID:         corpID,
		secret:         secret,
		baseURL:        DefaultBaseURL,
		overrides:      make(map[string]*override),
		now:            time.Now,
		retry:          DefaultRetryPolicy(),
		logger:         slog.New(slog.DiscardHandler),
		attemptTimeout: 30 * time.Second,
		leaseTTLOpt:    DefaultLeaseTTL,
	}
	c.tokens = &credential{store: NewMemoryTokenStore(), refreshAhead: 5 * time.Minute, badFor: time.Minute}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("option", "nil")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// finish completes a client whose options are in: its transport, limiter,
// credentials, limits and services.
func (c *Client) finish() error {
	if c.http == nil {
		c.http = newResty(&http.Client{Transport: defaultTransport()})
	}
	if c.limiter == nil {
		c.limiter = throttle.NewMemory()
	}
	c.tokens.initCorp(c)
	c.tokens.env = c.credentialEnv()
	if c.robot != nil {
		c.robot.env = c.credentialEnv()
	}
	c.initTickets()
	if c.suiteCfg != nil {
		c.initSuite()
	}
	if c.providerCfg != nil {
		c.initProvider()
	}
	c.learner = c.newLearner()
	if err := c.resolveLimits(); err != nil {
		return err
	}
	c.Tags = &TagService{client: c}
	c.CustomerTags = &CustomerTagService{client: c}
	c.Customers = &CustomerService{client: c}
	c.Media = &MediaService{client: c}
	c.Messages = &MessageService{client: c}
	c.AppChats = &AppChatService{client: c}
	return nil
}

// CorpID returns the corp id the client calls for.
func (c *Client) CorpID() string { return c.corpID }

// defaultTransport is http.DefaultTransport with enough idle connections per
// host for the calls in flight: the standard 2 would reopen a TCP (and TLS)
// connection for most calls of a busy client. When http.DefaultTransport is
// not an *http.Transport (httpmock.Activate, a tracing wrapper), it is used
// as it is.
func defaultTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

func newResty(hc *http.Client) *resty.Client {
	r := resty.NewWithClient(hc)
	r.SetLogger(quietLogger{}) // resty's own logs may carry URLs with tokens
	r.SetRetryCount(0)
	return r
}

type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
