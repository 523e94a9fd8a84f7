package wecom_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// changeLog records the limit changes the observer sees.
type changeLog struct {
	mu      sync.Mutex
	changes []wecom.LimitChange
}

func (l *changeLog) observe(_ context.Context, a wecom.Attempt) {
	l.mu.Lock()
	l.changes = append(l.changes, a.LimitChanges...)
	l.mu.Unlock()
}

func (l *changeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.changes)
}

// markMany marks n customers from 32 goroutines and returns the calls that
// failed.
func markMany(t *testing.T, c *wecom.Client, from, n int) int {
	t.Helper()
	ctx := context.Background()
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "g", Tags: []wecom.CorpTagSpec{{Name: fmt.Sprint("t", from)}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range jobs {
				err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "u1", ExternalUserID: fmt.Sprintf("wm%05d", i), AddTags: []string{g.Tags[0].ID}})
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	for i := from; i < from+n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return failed
}

// TestLimitLearnedFromWeCom: WeCom gives the corp fewer mark_tag calls in
// flight than the SDK is told (5): another system shares the budget. The
// client learns it from the first 45033s, then sends no call over it: the
// second batch gets no 45033 at all, and no mark fails. With learning off,
// the 45033s go on.
func TestLimitLearnedFromWeCom(t *testing.T) {
	t.Parallel()
	retries := wecom.WithRetryPolicy(wecom.RetryPolicy{MaxConcurrencyRetries: 20, InitialInterval: time.Millisecond, MaxInterval: 4 * time.Millisecond})
	for _, allowed := range []int{3, 1} {
		cfg := mock.Config{Concurrency: allowed, Latency: 3 * time.Millisecond, LatencyJitter: time.Millisecond}
		t.Run(fmt.Sprintf("%d allowed", allowed), func(t *testing.T) {
			t.Parallel()
			var log changeLog
			srv := newMock(t, cfg)
			c := setup(t, on(srv), retries, wecom.WithObserver(log.observe))
			if failed := markMany(t, c, 0, 200); failed != 0 {
				t.Errorf("%d marks failed while learning", failed)
			}
			learning := srv.Stats().Refusals[wecom.CodeConcurrencyLimited]
			srv.ResetStats()
			if failed := markMany(t, c, 200, 300); failed != 0 {
				t.Errorf("%d marks failed after learning", failed)
			}
			st := srv.Stats()
			t.Logf("45033 answers: %d while learning, %d after; changes %s", learning, st.Refusals[wecom.CodeConcurrencyLimited], &log)
			if n := st.Refusals[wecom.CodeConcurrencyLimited]; n != 0 || st.MaxInFlight[catalog.MarkTag.Path()] != allowed {
				t.Errorf("after learning: %d answers 45033, %d in flight at most; want 0 and %d", n, st.MaxInFlight[catalog.MarkTag.Path()], allowed)
			}
			if learning == 0 || learning > 4*(5-allowed) {
				t.Errorf("%d answers 45033 while learning, want a few", learning)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			// Each change is told once, by the attempt whose 45033 made it;
			// attempts in other goroutines may tell theirs in another order.
			slices.SortFunc(log.changes, func(a, b wecom.LimitChange) int { return b.From - a.From })
			for i, ch := range log.changes {
				if want := (wecom.LimitChange{Path: catalog.MarkTag.Path(), From: 5 - i, To: 4 - i, Configured: 5, Refused: true}); ch != want {
					t.Errorf("change %d: the observer saw %+v, want %+v", i, ch, want)
				}
			}
			if len(log.changes) != 5-allowed {
				t.Errorf("%d changes, want %d", len(log.changes), 5-allowed)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{Concurrency: 3, Latency: 3 * time.Millisecond, LatencyJitter: time.Millisecond})
		c := setup(t, on(srv), retries, wecom.WithoutAdaptiveLimits())
		markMany(t, c, 0, 200)
		srv.ResetStats()
		markMany(t, c, 200, 300)
		if n := srv.Stats().Refusals[wecom.CodeConcurrencyLimited]; n < 20 {
			t.Errorf("without learning, %d answers 45033 in the second batch: the test cannot tell learning from luck", n)
		}
	})
}

// TestLimitLearnedFleetWide: what one process learns from a 45033 holds for
// another process sharing the Redis limiter, which never sends a call over
// the learned limit, and which the observer tells.
func TestLimitLearnedFleetWide(t *testing.T) {
	t.Parallel() // a mock, and a key prefix, of its own
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	srv := newMock(t, mock.Config{Concurrency: 2, Latency: 3 * time.Millisecond})
	hs := srv.Start()
	t.Cleanup(hs.Close)
	var logs [2]changeLog
	var clients [2]*wecom.Client
	for i := range clients {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		clients[i] = setup(t, wecom.WithBaseURL(hs.URL), wecom.WithLimiter(b), wecom.WithObserver(logs[i].observe),
			wecom.WithRetryPolicy(wecom.RetryPolicy{MaxConcurrencyRetries: 20, InitialInterval: time.Millisecond, MaxInterval: 4 * time.Millisecond}))
	}
	if failed := markMany(t, clients[0], 0, 150); failed != 0 {
		t.Errorf("%d marks failed in the first process", failed)
	}
	srv.ResetStats()
	time.Sleep(1100 * time.Millisecond) // the second reads the learned limit again after a second at most
	if failed := markMany(t, clients[1], 150, 150); failed != 0 {
		t.Errorf("%d marks failed in the second process", failed)
	}
	st := srv.Stats()
	if n := st.Refusals[wecom.CodeConcurrencyLimited]; n != 0 || st.MaxInFlight[catalog.MarkTag.Path()] > 2 {
		t.Errorf("second process: %d answers 45033, %d in flight; want 0 and at most 2 (first process: %s)", n, st.MaxInFlight[catalog.MarkTag.Path()], &logs[0])
	}
	logs[1].mu.Lock()
	defer logs[1].mu.Unlock()
	if len(logs[1].changes) == 0 || logs[1].changes[0].To != 2 || logs[1].changes[0].Refused {
		t.Errorf("the second process's observer saw %v, want a change to 2 it did not make", logs[1].changes)
	}
}
