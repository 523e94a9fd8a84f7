package callback_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// serve posts a signed callback straight to h, in the test's bubble.
func serve(h http.Handler, s signed) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/callback?"+s.query.Encode(), strings.NewReader(s.body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHandlerDeadline: a handler gets a context with the configured
// deadline; one that ignores it does not hold the answer past it.
func TestHandlerDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := callback.NewCrypto(testToken, testKey, testCorpID)
		if err != nil {
			t.Fatal(err)
		}
		h, err := callback.NewHandler(c, callback.WithTimeout(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var deadline time.Time
		start := time.Now()
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			deadline, _ = ctx.Deadline()
			if m.Content == "slow" {
				<-release // ignores ctx, as careless code does
				return errors.New("late failure")
			}
			return nil
		})
		if rec := serve(h, seal(t, c, textXML("1", "fast"), start.Unix())); rec.Code != http.StatusOK {
			t.Fatalf("fast: %d", rec.Code)
		}
		if want := start.Add(3 * time.Second); !deadline.Equal(want) {
			t.Fatalf("handler deadline %v, want %v", deadline, want)
		}
		rec := serve(h, seal(t, c, textXML("2", "slow"), start.Unix()))
		if rec.Code != http.StatusOK || time.Since(start) != 3*time.Second {
			t.Fatalf("slow: %d after %v, want 200 at the 3s deadline", rec.Code, time.Since(start))
		}
		if s := h.Stats(); s.Overran != 1 || s.Delivered != 1 {
			t.Fatalf("stats %+v", s)
		}
		close(release)
		synctest.Wait()
		if s := h.Stats(); s.Failed != 1 || s.Lost != 1 {
			t.Fatalf("the late failure is not counted as lost: %+v", s)
		}
	})
}

// TestQueueRefusesWhenFull: a queue of 1 with 1 worker takes a callback
// while the worker is busy and refuses the next (503), then delivers that
// one when WeCom retries it.
func TestQueueRefusesWhenFull(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := callback.NewCrypto(testToken, testKey, testCorpID)
		if err != nil {
			t.Fatal(err)
		}
		logs := &logBuf{}
		h, err := callback.NewHandler(c, callback.WithQueue(1, 1), callback.WithLogger(newLogger(logs)))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var texts collector[*callback.TextMessage]
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			if m.Content == "A" {
				<-release
			}
			return texts.handle(ctx, m)
		})
		now := time.Now().Unix()
		post := func(id, content string) int {
			return serve(h, seal(t, c, textXML(id, content), now)).Code
		}
		if code := post("1", "A"); code != http.StatusOK {
			t.Fatalf("A: %d", code)
		}
		synctest.Wait() // the worker holds A
		if code := post("2", "B"); code != http.StatusOK {
			t.Fatalf("B (queued): %d", code)
		}
		if code := post("3", "C"); code != http.StatusServiceUnavailable {
			t.Fatalf("C (queue full): %d, want 503", code)
		}
		if s := h.Stats(); s.Refused != 1 || !strings.Contains(logs.String(), "refused") {
			t.Fatalf("stats %+v, logs %s", s, logs.String())
		}
		close(release)
		synctest.Wait()
		// WeCom retries C: it was forgotten when refused, so it is delivered.
		if code := post("3", "C"); code != http.StatusOK {
			t.Fatalf("C retried: %d", code)
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range texts.all() {
			got = append(got, m.Content)
		}
		if strings.Join(got, ",") != "A,B,C" {
			t.Fatalf("delivered %v, want A,B,C", got)
		}
		if code := post("4", "D"); code != http.StatusServiceUnavailable {
			t.Fatalf("after Close: %d, want 503", code)
		}
	})
}
