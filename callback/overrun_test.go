package callback_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// TestInlineOverrunsBounded: handlers that ignore their deadline pile up
// to WithMaxOverruns and no further: beyond it callbacks are refused (503)
// and counted; Close waits for the overruns, until its ctx ends.
func TestInlineOverrunsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		logs := &logBuf{}
		h, err := callback.NewHandler(c, callback.WithTimeout(time.Second), callback.WithMaxOverruns(5), callback.WithLogger(newLogger(logs)))
		if err != nil {
			t.Fatal(err)
		}
		block := make(chan struct{})
		var running, most atomic.Int32
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-block // ignores ctx
			return nil
		})
		codes := map[int]int{}
		for i := range 50 {
			codes[serve(h, seal(t, c, textXML(strconv.Itoa(i), "x"), time.Now().Unix())).Code]++
		}
		if codes[http.StatusOK] != 5 || codes[http.StatusServiceUnavailable] != 45 || most.Load() != 5 {
			t.Fatalf("answers %v, at most %d handlers running", codes, most.Load())
		}
		if s := h.Stats(); s.Overran != 5 || s.Refused != 45 || !strings.Contains(logs.String(), "too many handlers overrunning") {
			t.Fatalf("stats %+v", s)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := h.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close with overruns running: %v", err)
		}
		close(block)
		if err := h.Close(t.Context()); err != nil || running.Load() != 0 {
			t.Fatalf("Close: %v, %d running", err, running.Load())
		}
		// The overruns are over: a refused callback, retried, is delivered.
		if rec := serve(h, seal(t, c, textXML("49", "x"), time.Now().Unix())); rec.Code != http.StatusOK {
			t.Fatalf("retry after the overruns: %d", rec.Code)
		}
	})
}

// TestQueueCloseCancels: Close whose ctx ends before the queue drains
// cancels the running handlers' contexts and drops the rest, counting all
// as lost; nothing runs after.
func TestQueueCloseCancels(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		logs := &logBuf{}
		h, _ := callback.NewHandler(c, callback.WithQueue(50, 2), callback.WithLogger(newLogger(logs)))
		var running atomic.Int32
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return ctx.Err()
		})
		for i := range 20 {
			if rec := serve(h, seal(t, c, textXML(strconv.Itoa(i), "x"), time.Now().Unix())); rec.Code != http.StatusOK {
				t.Fatal(rec.Code)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := h.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v", err)
		}
		synctest.Wait()
		if s := h.Stats(); running.Load() != 0 || s.Lost != 20 || s.Delivered != 0 {
			t.Fatalf("%d running after Close; stats %+v", running.Load(), s)
		}
		if !strings.Contains(logs.String(), "lost") || strings.Contains(logs.String(), "retried") {
			t.Fatalf("logs %s", logs.String())
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// TestQueuedFailureIsLost: a queued handler's failure comes after the
// acknowledgement: it is counted as lost, not left for a retry.
func TestQueuedFailureIsLost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		h, _ := callback.NewHandler(c, callback.WithQueue(1, 1))
		callback.Handle(h, func(context.Context, *callback.TextMessage) error { return errors.New("db down") })
		if rec := serve(h, seal(t, c, textXML("1", "x"), time.Now().Unix())); rec.Code != http.StatusOK {
			t.Fatal(rec.Code)
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s := h.Stats(); s.Failed != 1 || s.Lost != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}
