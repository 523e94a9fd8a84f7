package mock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// maxBodyBytes bounds the request body read (a 20 MB upload and its
// multipart framing); a longer body answers 47001.
const maxBodyBytes int64 = 21 << 20

// input is what an endpoint sees of a request.
type input struct {
	endpoint *catalog.Endpoint // the row called
	app      string            // the app (or suite) the call's token was issued to
	query    url.Values
	header   http.Header
	body     []byte
	bodyErr  bool // the body could not be read whole
	now      time.Time
	// dropped are the members the call's silent limits drop it for (an
	// app message over a member's minute): WeCom answers success.
	dropped map[string]bool
	// events are the callbacks the call makes WeCom send (callback_events.go),
	// pushed when it succeeds.
	events []callbackEvent
	// jobs are the batch jobs the call started (jobs.go), whose ends are
	// scheduled when it succeeds.
	jobs []*batchJob
}

// decode unmarshals the JSON body into v; any failure is 47001.
func (in *input) decode(v any) *apiError {
	if in.bodyErr || json.Unmarshal(in.body, v) != nil {
		return errf(catalog.CodeDataFormat, "data format error")
	}
	return nil
}

// wrongMethod refuses a call made with another HTTP method than its API's,
// as WeCom does (43001 "require GET method", 43002 "require POST method").
func wrongMethod(got, want string) *apiError {
	switch {
	case got == want:
		return nil
	case want == http.MethodGet:
		return errf(catalog.CodeRequireGET, "require GET method")
	}
	return errf(catalog.CodeRequirePOST, "require POST method")
}

// apiError is an error answer before its errmsg gets WeCom's suffix.
type apiError struct {
	code int
	msg  string
}

func errf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// status is the errcode/errmsg pair that starts every answer.
type status struct {
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

func okStatus(msg string) status { return status{ErrMsg: msg} }

type tokenAnswer struct {
	status
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
}

// token is an issued access token.
type token struct {
	value   string
	corp    string
	app     string // the app it was issued to (appOf its secret)
	expires time.Time
}

type faultKind int

const (
	faultNone faultKind = iota
	faultBusy
	fault5xx
	faultMalformed
)

const badGatewayBody = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n" +
	"<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"

// serve answers one request. Like WeCom, it goes on when the client hangs
// up: a call admitted stays in flight for its whole service time and is
// applied, and only then are its slots released.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	path := r.URL.Path
	s.mu.Lock()
	s.stats.Calls[path]++
	s.pushSuiteTicketsLocked(s.now())
	s.mu.Unlock()

	body, bodyErr := readBody(r)
	if s.scripted(w, r, body) {
		return
	}
	rt, ok := s.routes[path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	ip := clientIP(r)
	query := r.URL.Query()
	switch {
	case rt.apply == nil && r.Method != rt.Method:
		s.mu.Lock()
		out := s.errorAnswer(wrongMethod(r.Method, rt.Method), ip, s.now(), true)
		s.mu.Unlock()
		writeJSON(w, out)
		return
	case rt.ID == catalog.GetSuiteToken:
		writeJSON(w, s.getSuiteToken(body, ip))
		return
	case rt.ID == catalog.GetProviderToken:
		writeJSON(w, s.getProviderToken(body, ip))
		return
	case rt.apply == nil:
		writeJSON(w, s.getToken(query, ip))
		return
	}
	in := &input{endpoint: &rt.Endpoint, query: query, header: r.Header, body: body, bodyErr: bodyErr}

	s.mu.Lock()
	now := s.now()
	var (
		c   *corp
		tok *token
		cs  []counted
	)
	aerr := wrongMethod(r.Method, rt.Method)
	if aerr == nil {
		c, tok, aerr = s.checkCredential(rt.Token, query, now)
	}
	if aerr == nil {
		in.app = tok.app
	}
	if aerr == nil {
		var units int
		cs, units = countedKeys(rt, c, tok, ip, in, now)
		if !s.admitRate(cs, units, now) {
			aerr = errf(catalog.CodeFrequencyLimited, "api freq out of limit")
		} else {
			in.dropped = s.dropped(cs, now)
		}
	}
	if aerr != nil {
		out := s.errorAnswer(aerr, ip, now, true)
		s.mu.Unlock()
		writeJSON(w, out)
		return
	}
	fault, slow := s.drawFault()
	switch fault {
	case faultBusy:
		s.stats.Refusals[catalog.CodeSystemBusy]++
		out := mustMarshal(status{ErrCode: catalog.CodeSystemBusy, ErrMsg: "system busy"})
		s.mu.Unlock()
		writeJSON(w, out)
		return
	case fault5xx:
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(badGatewayBody)))
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, badGatewayBody)
		return
	}
	adm, aerr := s.admit(rt, cs)
	if aerr != nil {
		out := s.errorAnswer(aerr, ip, now, true)
		s.mu.Unlock()
		writeJSON(w, out)
		return
	}
	// The service time counts from the request's arrival, so the mock's own
	// work is part of it, as it is of a real server's.
	wait := s.serviceTime() - time.Since(arrived)
	if slow {
		wait += s.faults.SlowLatency
	}
	s.mu.Unlock()

	out, file := s.execute(adm, wait, c, rt, in, ip, fault == faultMalformed)
	if file != nil {
		// A download is in flight until its last byte: its slots go back
		// just before it, so that the client cannot see the file whole
		// and send its next call before they do.
		s.writeFile(w, in, file, ip, func() { s.release(adm) })
		return
	}
	writeJSON(w, out)
}

// execute waits the service time, then applies the call, and releases the
// call's concurrency slots before its answer can be seen (a file's, as
// writeFile ends). Nothing the client does ends it early.
func (s *Server) execute(adm admission, wait time.Duration,
	c *corp, rt *route, in *input, ip string, malformed bool) (out []byte, file *fileAnswer) {
	defer func() {
		if file == nil {
			s.release(adm)
		}
	}()
	sleepCtx(context.Background(), wait)
	s.mu.Lock()
	defer s.mu.Unlock()
	in.now = s.now()
	if c != nil { // jobs due (batch, upload_by_url) end before any API is served
		s.settleJobsLocked(c, in.now)
		s.finishUploadJobsLocked(c, in.now)
	}
	answer, aerr := rt.apply(c, in)
	if aerr == nil && c != nil {
		s.pushEventsLocked(c.id, in.now, in.events)
		for _, j := range in.jobs {
			s.scheduleJobLocked(c, j)
		}
	}
	if f, ok := answer.(*fileAnswer); ok && aerr == nil && !malformed {
		return nil, f
	}
	if aerr != nil {
		out = s.errorAnswer(aerr, ip, in.now, !malformed)
	} else {
		out = mustMarshal(answer)
		if rt.ID == catalog.MarkTag {
			s.stats.MarkCalls++
		}
	}
	if malformed {
		// Half of a JSON object never holds its closing brace.
		out = out[:len(out)/2]
	}
	return out, nil
}

// sleepCtx waits d, or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	deadline := time.Now().Add(d)
	if d > spinFor {
		t := time.NewTimer(d - spinFor)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	for i := 0; ; i++ {
		rest := time.Until(deadline)
		if rest <= 0 {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if i == 10000 {
			// The clock does not move while we run (a testing/synctest
			// bubble): a timer is exact there.
			return sleepTimer(ctx, rest)
		}
		runtime.Gosched()
	}
}

func sleepTimer(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Token registers gettoken, which serve answers itself (getToken).
func (handlerSets) Token() handlers {
	return handlers{
		catalog.GetToken: nil,
	}
}

// getToken answers gettoken.
func (s *Server) getToken(q url.Values, ip string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.GetTokenCalls++
	now := s.now()
	corpID, secret := q.Get("corpid"), q.Get("corpsecret")
	if corpID == "" {
		return s.errorAnswer(errf(catalog.CodeCorpIDMissing, "corpid missing"), ip, now, true)
	}
	c := s.corps[corpID]
	if c == nil || len(c.apps) == 0 {
		return s.errorAnswer(errf(catalog.CodeInvalidCorpID, "invalid corpid"), ip, now, true)
	}
	if secret == "" {
		return s.errorAnswer(errf(catalog.CodeSecretMissing, "corpsecret missing"), ip, now, true)
	}
	tok, ok := c.apps[secret]
	if !ok {
		return s.errorAnswer(errf(catalog.CodeInvalidSecret, "invalid credential"), ip, now, true)
	}
	if tok == nil || !now.Before(tok.expires) {
		tok = &token{value: newTokenValue(), corp: c.id, app: appOf(secret), expires: now.Add(s.tokenTTL)}
		s.tokens[tok.value] = tok
		c.apps[secret] = tok
	}
	return mustMarshal(tokenAnswer{
		status:      okStatus("ok"),
		AccessToken: tok.value,
		ExpiresIn:   int(tok.expires.Sub(now) / time.Second),
	})
}

// newTokenValue returns 96 random hex characters.
func newTokenValue() string {
	var b [48]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

// checkToken finds the corp of an access token. s.mu must be held.
func (s *Server) checkToken(value string, now time.Time) (*corp, *token, *apiError) {
	if value == "" {
		return nil, nil, errf(catalog.CodeAccessTokenMissing, "access_token missing")
	}
	tok := s.tokens[value]
	if tok == nil {
		return nil, nil, errf(catalog.CodeInvalidAccessToken, "invalid access_token")
	}
	if !now.Before(tok.expires) {
		return nil, nil, errf(catalog.CodeAccessTokenExpired, "access_token expired")
	}
	return s.corps[tok.corp], tok, nil
}

// checkCredential checks the credential a call of an endpoint carrying
// kind must have in its query.
func (s *Server) checkCredential(kind catalog.Token, q url.Values, now time.Time) (*corp, *token, *apiError) {
	switch kind {
	case catalog.SuiteToken:
		return s.suites.check(s, q.Get(kind.String()), now)
	case catalog.ProviderToken:
		return s.providers.check(s, q.Get(kind.String()), now)
	case catalog.RobotKey:
		return s.checkRobot(q)
	}
	return s.checkToken(q.Get("access_token"), now)
}

// drawFault decides the fault of one call. s.mu must be held.
func (s *Server) drawFault() (kind faultKind, slow bool) {
	f := s.faults
	if sum := f.SystemBusy + f.HTTP5xx + f.Malformed; sum > 0 {
		switch u := s.rng.Float64(); {
		case u < f.SystemBusy:
			kind = faultBusy
		case u < f.SystemBusy+f.HTTP5xx:
			kind = fault5xx
		case u < sum:
			kind = faultMalformed
		}
	}
	if f.Slow > 0 && s.rng.Float64() < f.Slow {
		slow = true
	}
	return kind, slow
}

// serviceTime draws one call's service time: the latency, spread by the
// jitter. The caller holds s.mu.
func (s *Server) serviceTime() time.Duration {
	d := s.latency
	if s.jitter > 0 {
		d += time.Duration((2*s.rng.Float64() - 1) * float64(s.jitter))
	}
	return max(d, 0)
}

// errorAnswer renders an error answer with WeCom's errmsg suffix and, when
// count is set, counts it in Stats.Refusals. s.mu must be held.
func (s *Server) errorAnswer(e *apiError, ip string, now time.Time, count bool) []byte {
	if count {
		s.stats.Refusals[e.code]++
	}
	s.hintSeq++
	msg := fmt.Sprintf("%s, hint: [%d_%d_%016x], from ip: %s, more info at https://open.work.weixin.qq.com/devtool/query?e=%d",
		e.msg, now.Unix(), s.hintSeq, s.hintSeq*0x9e3779b97f4a7c15, ip, e.code)
	return mustMarshal(status{ErrCode: e.code, ErrMsg: msg})
}

// mustMarshal encodes an answer type of this package; they cannot fail.
func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only reachable through a bug in this package's answer types.
		return []byte(`{"errcode":-1,"errmsg":"system busy"}`)
	}
	return b
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// readBody reads at most maxBodyBytes of the body; it reports true when
// the body could not be read whole. A body of known length is read into one
// buffer of its size (a 20 MB upload read by doubling allocated about three
// times its size).
func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil {
		return nil, false
	}
	b := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), maxBodyBytes)+bytes.MinRead))
	_, err := b.ReadFrom(io.LimitReader(r.Body, maxBodyBytes+1))
	return b.Bytes(), err != nil || int64(b.Len()) > maxBodyBytes
}

// clientIP is the host of the request's remote address, or 127.0.0.1 when
// there is none (httpmock requests).
func clientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && host != "" {
		return host
	}
	return "127.0.0.1"
}
