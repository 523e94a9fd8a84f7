package mock

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Script makes the Server answer the next calls matching a path with a given
// answer instead of modelling them, so a test can drive its own error
// handling: "the next 2 mark_tag calls for customer wmA answer 45033", "the
// next gettoken answers HTTP 502". A scripted call is answered at once; it
// takes no slot, counts against no window and changes nothing.
type Script struct {
	// Path is the API path, such as "/cgi-bin/externalcontact/mark_tag".
	Path string
	// Match, when not nil, narrows the calls to Path to those it accepts; it
	// sees the request and its body. It is called with the Server's lock
	// held and must not call back into the Server.
	Match func(r *http.Request, body []byte) bool
	// Times is how many matching calls get this answer; 0 means 1.
	Times int
	// ErrCode and ErrMsg are the errcode answer, {"errcode":…,"errmsg":…},
	// sent with HTTP 200 (ErrMsg defaults to "scripted error").
	ErrCode int
	ErrMsg  string
	// Status, when neither 0 nor 200, is the HTTP status answered instead,
	// with Body (or an empty body).
	Status int
	// Body, when not empty, is the body answered as it is (for a gateway's
	// JSON, null, a truncated object...), with HTTP 200 unless Status says
	// otherwise. It replaces the errcode answer.
	Body string
}

// AddScript queues sc. Scripts are tried in the order they were added; a
// call takes the first one that matches, and a script is gone once it has
// answered Times calls.
func (s *Server) AddScript(sc Script) error {
	switch {
	case sc.Path == "":
		return errors.New("mock: Script without Path")
	case sc.Times < 0:
		return fmt.Errorf("mock: Script for %s: negative Times %d", sc.Path, sc.Times)
	case sc.Status != 0 && (sc.Status < 100 || sc.Status > 599):
		return fmt.Errorf("mock: Script for %s: HTTP status %d", sc.Path, sc.Status)
	}
	if sc.Times == 0 {
		sc.Times = 1
	}
	if sc.ErrMsg == "" {
		sc.ErrMsg = "scripted error"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, &sc)
	return nil
}

// scripted answers r from the first matching script and reports whether it
// did.
func (s *Server) scripted(w http.ResponseWriter, r *http.Request, body []byte) bool {
	s.mu.Lock()
	var sc *Script
	for i, c := range s.scripts {
		if c.Path == r.URL.Path && (c.Match == nil || c.Match(r, body)) {
			sc = c
			if c.Times--; c.Times == 0 {
				s.scripts = append(s.scripts[:i:i], s.scripts[i+1:]...)
			}
			break
		}
	}
	if sc == nil {
		s.mu.Unlock()
		return false
	}
	s.stats.Scripted++
	if sc.Body == "" && (sc.Status == 0 || sc.Status == http.StatusOK) && sc.ErrCode != 0 {
		s.stats.Refusals[sc.ErrCode]++
	}
	s.mu.Unlock()

	code := http.StatusOK
	if sc.Status != 0 {
		code = sc.Status
	}
	out := []byte(sc.Body)
	if sc.Body == "" && code == http.StatusOK {
		out = mustMarshal(status{ErrCode: sc.ErrCode, ErrMsg: sc.ErrMsg})
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(code)
	_, _ = w.Write(out)
	return true
}
