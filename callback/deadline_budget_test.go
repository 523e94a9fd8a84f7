package callback_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// slowDeduper is a shared deduper (Redis) having a slow moment: Seen and
// Forget take their delay, ignoring their context.
type slowDeduper struct {
	inner             callback.Deduper
	seenDelay, forget time.Duration
}

func (d slowDeduper) Seen(ctx context.Context, k string, ttl time.Duration) (bool, error) {
	time.Sleep(d.seenDelay)
	return d.inner.Seen(ctx, k, ttl)
}

func (d slowDeduper) Forget(ctx context.Context, k string) error {
	time.Sleep(d.forget)
	return d.inner.Forget(ctx, k)
}

// TestDeadlineCoversSlowDeduper: the handler's deadline starts when the
// request arrives, and a deduper slower than its share of it is passed
// over (the callback delivered): the answer goes out at the deadline.
func TestDeadlineCoversSlowDeduper(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		mem, _ := callback.NewMemoryDeduper(10)
		h, err := callback.NewHandler(c, callback.WithDeduper(slowDeduper{inner: mem, seenDelay: 10 * time.Second}, 0))
		if err != nil {
			t.Fatal(err)
		}
		deadlines := make(chan time.Time, 1)
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			d, _ := ctx.Deadline()
			deadlines <- d
			<-ctx.Done()
			return nil
		})
		start := time.Now()
		rec := serve(h, seal(t, c, textXML("1", "x"), start.Unix()))
		if took := time.Since(start); rec.Code != http.StatusOK || took != callback.DefaultTimeout {
			t.Fatalf("answered %d after %v, want 200 at the %v deadline", rec.Code, took, callback.DefaultTimeout)
		}
		if deadline, want := <-deadlines, start.Add(callback.DefaultTimeout); !deadline.Equal(want) {
			t.Fatalf("handler deadline %v, want %v (from the request's arrival)", deadline, want)
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLateForgetLosesNothing: a handler fails near its deadline and the
// Forget that should let WeCom's retry through is late; the 500 still goes
// out within the deadline and a small margin, and the retry is delivered.
func TestLateForgetLosesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		mem, _ := callback.NewMemoryDeduper(10)
		h, _ := callback.NewHandler(c, callback.WithDeduper(slowDeduper{inner: mem, forget: 1500 * time.Millisecond}, 0))
		var calls, ok atomic.Int32
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			if calls.Add(1) == 1 {
				time.Sleep(3800 * time.Millisecond)
				return errors.New("db down")
			}
			ok.Add(1)
			return nil
		})
		start := time.Now()
		rec := serve(h, seal(t, c, textXML("77", "x"), start.Unix()))
		if took := time.Since(start); rec.Code != http.StatusInternalServerError || took > callback.DefaultTimeout+500*time.Millisecond { // the Forget's margin at most
			t.Fatalf("failure answered %d after %v", rec.Code, took)
		}
		time.Sleep(5*time.Second - time.Since(start)) // WeCom's retry
		if rec := serve(h, seal(t, c, textXML("77", "x"), time.Now().Unix())); rec.Code != http.StatusOK || ok.Load() != 1 {
			t.Fatalf("retry answered %d, delivered %d times (handler calls %d)", rec.Code, ok.Load(), calls.Load())
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// firstSeenSlow is a deduper whose first Seen is slow (ignoring its
// context) and records its key late.
type firstSeenSlow struct {
	callback.Deduper
	calls *atomic.Int32
}

func (d firstSeenSlow) Seen(ctx context.Context, k string, ttl time.Duration) (bool, error) {
	if d.calls.Add(1) == 1 {
		time.Sleep(2 * time.Second)
	}
	return d.Deduper.Seen(ctx, k, ttl)
}

// TestLateSeenThenFailureLosesNothing: a Seen passed over records its key
// after the failed handler's Forget; WeCom's retry is delivered all the
// same.
func TestLateSeenThenFailureLosesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		mem, _ := callback.NewMemoryDeduper(10)
		h, _ := callback.NewHandler(c, callback.WithDeduper(firstSeenSlow{mem, new(atomic.Int32)}, 0))
		var calls, ok atomic.Int32
		callback.Handle(h, func(ctx context.Context, m *callback.TextMessage) error {
			if calls.Add(1) == 1 {
				return errors.New("db down")
			}
			ok.Add(1)
			return nil
		})
		start := time.Now()
		if rec := serve(h, seal(t, c, textXML("78", "x"), start.Unix())); rec.Code != http.StatusInternalServerError {
			t.Fatalf("failure answered %d", rec.Code)
		}
		time.Sleep(5*time.Second - time.Since(start))
		if rec := serve(h, seal(t, c, textXML("78", "x"), time.Now().Unix())); rec.Code != http.StatusOK || ok.Load() != 1 {
			t.Fatalf("retry answered %d, delivered %d times", rec.Code, ok.Load())
		}
		if err := h.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
