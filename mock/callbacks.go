package mock

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// Callbacks: the Server pushes WeCom's callbacks to a receiver, as WeCom
// does (document/path/96466 for the delivery, 91144 for the envelope): the
// XML encrypted with callback.Crypto under the receiver's token and
// EncodingAESKey, posted as <xml><ToUserName/><Encrypt/><AgentID/></xml>
// with msg_signature, timestamp and nonce in the query. An answer that is
// not an HTTP 200 within CallbackTimeout is a failure, and the callback is
// tried again, CallbackAttempts times in all. The plaintext is the same at
// every attempt (new random bytes, timestamp and nonce), so a receiver's
// deduplication sees a retry as one callback.

// CallbackTimeout is how long WeCom waits for the answer to a callback
// before it drops the connection and tries again (document/path/96466).
const CallbackTimeout = 5 * time.Second

// CommandTimeout is how long WeCom waits for the answer to a suite's
// command callback (an InfoType: suite_ticket, create_auth, ...): 1000 ms,
// and the answer must be the body "success" (document/path/97172).
const CommandTimeout = time.Second

// CallbackAttempts is how many times WeCom tries one callback in all.
const CallbackAttempts = 3

// The waits before the second and the third attempt when
// CallbackConfig.RetryDelays is nil. WeCom's page says it retries, not
// when; the mock waits 1 s, then 2 s.
const (
	DefaultCallbackRetry1 = time.Second
	DefaultCallbackRetry2 = 2 * time.Second
)

// CallbackConfig is where and how a Server pushes a corp's callbacks.
type CallbackConfig struct {
	// URL is the receiver's callback URL (http or https). Its query, if
	// any, is kept; msg_signature, timestamp and nonce are added.
	URL string
	// Token and EncodingAESKey are the receiver's, as set in WeCom's
	// admin console.
	Token, EncodingAESKey string
	// ReceiveID is the id appended to every plaintext (default: the corp
	// id, as for a corp's own app).
	ReceiveID string
	// AgentID is the envelope's AgentID (0: an empty element, as in
	// contact and customer-contact callbacks).
	AgentID int64
	// Transport carries the pushes (default: a transport of the Server's
	// own, closed by Close); an httpmock transport or an httptest server's
	// client transport works.
	Transport http.RoundTripper
	// Timeout is how long an attempt waits for its answer (default
	// CallbackTimeout; a suite's command callbacks wait at most
	// CommandTimeout).
	Timeout time.Duration
	// RetryDelays are the waits before the second and the third attempt
	// (nil: DefaultCallbackRetry1, DefaultCallbackRetry2); when set it
	// holds CallbackAttempts-1 durations, none negative.
	RetryDelays []time.Duration
}

// CallbackDelivery is one attempt to deliver a callback.
type CallbackDelivery struct {
	// Push numbers the callback within the Server, from 1; a callback's
	// attempts share it.
	Push int
	// CorpID is the corp whose receiver it was for.
	CorpID string
	// Event is the callback's Event (or MsgType when not an event), and
	// ChangeType its ChangeType, when the Server built it.
	Event, ChangeType string
	// XML is the callback before encryption.
	XML []byte
	// Attempt counts from 1 to CallbackAttempts.
	Attempt int
	// Status is the HTTP status answered, 0 when none came in time.
	Status int
	// Err says why the attempt failed ("" when it did not).
	Err string
	// Delivered is true when the answer was a 200 within the timeout (and,
	// for a suite's command callback, its body "success").
	Delivered bool
}

// callbackTarget is a corp's receiver, ready to push to.
type callbackTarget struct {
	url     *url.URL
	crypto  *callback.Crypto
	client  *http.Client
	toUser  string
	agentID string
	timeout time.Duration
	delays  []time.Duration
}

// pushes is the Server's callback state. Its mutex comes after Server.mu
// (it is taken with Server.mu held, never the other way round).
type pushes struct {
	mu      sync.Mutex
	targets map[string]*callbackTarget
	log     []CallbackDelivery
	seq     int
	pending int
	idle    chan struct{} // closed when pending falls to 0
	closed  bool
	wg      sync.WaitGroup
	owned   []*http.Transport // closed by Close
	// jobClient pushes to the callbacks batch jobs name when the corp has
	// no receiver whose transport to take (jobs.go; nil until needed).
	jobClient *http.Client
	ctx       context.Context
	stop      context.CancelFunc
}

func newPushes() *pushes {
	ctx, stop := context.WithCancel(context.Background())
	return &pushes{targets: make(map[string]*callbackTarget), ctx: ctx, stop: stop}
}

// SetCallback makes the Server push corp corpID's callbacks to cb.URL:
// those of the changes made through the API that WeCom reports (tag
// members, customer tags, remarks), those AddExternalContact makes and
// those PushCallback is given. WeCom sends each kind to the URL of the app
// it concerns (contacts, customer contact); the mock sends a corp's all to
// one. A push's timestamp and CreateTime are the Server's clock
// (Config.Now), which a receiver checks against its own. A zero
// CallbackConfig (empty URL) stops the pushes of later changes.
// It fails on a URL that is not absolute http(s), a bad token or key, or
// bad delays.
func (s *Server) SetCallback(corpID string, cb CallbackConfig) error {
	if cb.URL == "" {
		s.push.mu.Lock()
		delete(s.push.targets, corpID)
		s.push.mu.Unlock()
		return nil
	}
	u, err := url.Parse(cb.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("mock: callback URL must be absolute http or https")
	}
	rid := cb.ReceiveID
	if rid == "" {
		rid = corpID
	}
	crypto, err := callback.NewCrypto(cb.Token, cb.EncodingAESKey, rid)
	if err != nil {
		return fmt.Errorf("mock: callback: %w", err)
	}
	t := &callbackTarget{url: u, crypto: crypto, toUser: corpID, timeout: cb.Timeout,
		delays: []time.Duration{DefaultCallbackRetry1, DefaultCallbackRetry2}}
	if cb.AgentID != 0 {
		t.agentID = strconv.FormatInt(cb.AgentID, 10)
	}
	if t.timeout <= 0 {
		t.timeout = CallbackTimeout
	}
	if cb.RetryDelays != nil {
		if len(cb.RetryDelays) != CallbackAttempts-1 || slices.ContainsFunc(cb.RetryDelays, func(d time.Duration) bool { return d < 0 }) {
			return fmt.Errorf("mock: callback RetryDelays must hold %d durations, none negative", CallbackAttempts-1)
		}
		t.delays = slices.Clone(cb.RetryDelays)
	}
	rt := cb.Transport
	if rt == nil {
		own := http.DefaultTransport.(*http.Transport).Clone() // closed by Close
		rt = own
		s.push.mu.Lock()
		s.push.owned = append(s.push.owned, own)
		s.push.mu.Unlock()
	}
	// WeCom posts to the URL given; a redirect is an answer that is not 200.
	t.client = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	s.push.targets[corpID] = t
	return nil
}

// PushCallback pushes msg, the plaintext XML of a message or an event
// (<xml><ToUserName>…</xml>), to corp corpID's receiver as WeCom would,
// retries included. It fails when the corp has no callback set or the
// Server is closed.
func (s *Server) PushCallback(corpID string, msg []byte) error {
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	t := s.push.targets[corpID]
	switch {
	case s.push.closed:
		return errors.New("mock: server closed")
	case t == nil:
		return errors.New("mock: no callback set for corp " + corpID)
	}
	p, ev, command := probeOf(msg)
	s.startPushLocked(t, &delivery{corpID: corpID, event: p, changeType: ev, command: command, xml: bytes.Clone(msg)})
	return nil
}

// CallbackDeliveries returns every attempt to deliver a callback so far, in
// the order they ended.
func (s *Server) CallbackDeliveries() []CallbackDelivery {
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	out := slices.Clone(s.push.log)
	for i := range out {
		out[i].XML = bytes.Clone(out[i].XML)
	}
	return out
}

// WaitCallbacks waits until no callback is being delivered (every one
// delivered or given up), or ctx ends.
func (s *Server) WaitCallbacks(ctx context.Context) error {
	s.push.mu.Lock()
	if s.push.pending == 0 {
		s.push.mu.Unlock()
		return nil
	}
	idle := s.push.idle
	s.push.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the callbacks being pushed (an attempt in flight is
// cancelled, no retry is made) and the timers that end batch jobs (a job
// then ends at the next call to its corp), and waits for their goroutines
// to end. The Server still serves API calls; it pushes no more callbacks.
func (s *Server) Close() {
	s.mu.Lock()
	s.stopJobsLocked()
	s.mu.Unlock()
	s.push.mu.Lock()
	s.push.closed = true
	s.push.mu.Unlock()
	s.push.stop()
	s.push.wg.Wait()
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	for _, t := range s.push.owned {
		t.CloseIdleConnections()
	}
}

// delivery is one callback to deliver.
type delivery struct {
	corpID, event, changeType string
	// command: a suite's command callback (InfoType), answered "success"
	// within CommandTimeout.
	command bool
	xml     []byte
	push    int
}

// startPushLocked delivers d on a goroutine of the Server. s.push.mu must
// be held.
func (s *Server) startPushLocked(t *callbackTarget, d *delivery) {
	if s.push.closed {
		return
	}
	s.push.seq++
	d.push = s.push.seq
	if s.push.pending == 0 {
		s.push.idle = make(chan struct{})
	}
	s.push.pending++
	s.push.wg.Go(func() {
		defer s.pushDone()
		s.deliver(t, d)
	})
}

func (s *Server) pushDone() {
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	s.push.pending--
	if s.push.pending == 0 {
		close(s.push.idle)
	}
}

// deliver tries d up to CallbackAttempts times, waiting t.delays between.
func (s *Server) deliver(t *callbackTarget, d *delivery) {
	ctx := s.push.ctx
	for attempt := 1; attempt <= CallbackAttempts; attempt++ {
		if attempt > 1 && !sleepTimer(ctx, t.delays[attempt-2]) {
			return
		}
		status, err := s.attempt(ctx, t, d)
		if ctx.Err() != nil {
			return // closed: not an answer of the receiver's
		}
		rec := CallbackDelivery{Push: d.push, CorpID: d.corpID, Event: d.event, ChangeType: d.changeType,
			XML: d.xml, Attempt: attempt, Status: status, Delivered: err == nil}
		if err != nil {
			rec.Err = err.Error()
		}
		s.push.mu.Lock()
		s.push.log = append(s.push.log, rec)
		s.push.mu.Unlock()
		if err == nil {
			return
		}
	}
}

// attempt posts d once; it fails unless the answer is a 200 read whole
// within t.timeout.
func (s *Server) attempt(ctx context.Context, t *callbackTarget, d *delivery) (int, error) {
	timeout := t.timeout
	if d.command {
		timeout = min(timeout, CommandTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.mu.Lock()
	ts := strconv.FormatInt(s.now().Unix(), 10)
	s.mu.Unlock()
	enc, err := t.crypto.Encrypt(d.xml)
	if err != nil {
		return 0, err
	}
	nonce := newNonce()
	u := *t.url
	q := u.Query()
	q.Set("msg_signature", t.crypto.Sign(ts, nonce, enc))
	q.Set("timestamp", ts)
	q.Set("nonce", nonce)
	u.RawQuery = q.Encode()
	var body bytes.Buffer
	body.WriteString("<xml>")
	writeCDATA(&body, "ToUserName", t.toUser)
	writeCDATA(&body, "Encrypt", enc)
	writeCDATA(&body, "AgentID", t.agentID)
	body.WriteString("</xml>")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), &body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/xml")
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no answer within %v", timeout)
		}
		return 0, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil && ctx.Err() != nil:
		return resp.StatusCode, fmt.Errorf("answer not read within %v", timeout)
	case err != nil:
		return resp.StatusCode, err
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	case d.command && string(answer) != "success":
		return resp.StatusCode, fmt.Errorf("a command callback answered %q, not \"success\"", truncate(answer, 32))
	}
	return resp.StatusCode, nil
}

// truncate returns at most n bytes of b.
func truncate(b []byte, n int) string { return string(b[:min(len(b), n)]) }

// newNonce returns 10 random digits, as WeCom's nonces are.
func newNonce() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	return string(b[:])
}
