package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// Redis killed and restarted empty with the fleet far below a window's
// limit: the reserve is what the fleet saw in the window (a process that
// died before the restart included) plus what it could have taken at the
// window's average rate until the restart, not the whole limit, so calls go
// on at once; and never more than the limit in any sliding window.
// A daily window, the hardest case of the old reserve (a day), included.
func TestRedisRestartBelowLimitsResumes(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	for _, tc := range []struct {
		name         string
		w            throttle.Window
		dead, before int // taken before the restart by the process that dies, then by the live one
	}{
		{"minute-like", throttle.Window{Limit: 200, Period: 20 * time.Second}, 5, 15},
		{"daily", throttle.Window{Limit: 1000, Period: 24 * time.Hour}, 30, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, restart, _ := redistest.StartServer(t)
			prefix := "wt:below:"
			alive, dead := restartBackend(t, addr, prefix), restartBackend(t, addr, prefix)
			ctx := context.Background()
			r := throttle.Request{Key: "{corp}/below", Windows: []throttle.Window{tc.w}}
			var log grantLog
			take := func(b *throttleredis.Backend, n int) {
				t.Helper()
				for range n {
					l, err := b.TryAcquire(ctx, r)
					if err != nil {
						t.Fatal(err)
					}
					log.add(l)
				}
			}
			take(dead, tc.dead)
			take(alive, tc.before) // the live process's last answer saw the dead one's grants
			_ = dead.Close()

			restart()
			if !robustEventually(30*time.Second, func() bool {
				_, err := alive.TryAcquire(ctx, throttle.Request{Key: "{corp}/probe"})
				return err == nil
			}) {
				t.Fatal("Redis did not answer after the restart")
			}
			after := 0
			for {
				l, err := alive.TryAcquire(ctx, r)
				var le *throttle.LimitError
				if errors.As(err, &le) {
					t.Logf("refused after %d: %v", after, le)
					if le.Reason != throttle.ReasonReserve {
						t.Errorf("refused by %s, want %s (the limit is not reached)", le.Reason, throttle.ReasonReserve)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				log.add(l)
				after++
			}
			seen := tc.dead + tc.before
			if want := (tc.w.Limit - seen) * 3 / 4; after < want {
				t.Errorf("%d granted at once after the restart, want at least %d of the %d the fleet had not used", after, want, tc.w.Limit-seen)
			}
			if most := log.worst(tc.w.Period); most > tc.w.Limit {
				t.Errorf("%d grants in one sliding window of %s, limit %d", most, tc.w.Period, tc.w.Limit)
			}
		})
	}
}

// A Redis that hangs (SIGSTOP) for longer than a round trip's timeout, then
// resumes (SIGCONT), runs the scripts that waited in its sockets: an
// acquisition whose caller had its ErrUnavailable long ago must not take a
// slot then (nobody would use it until its TTL, an hour here), nor a count
// of a window. Once Redis answers, every slot and the whole window serve
// again. The wait on the stopped Redis is told to the request's OnStall.
func TestRedisPauseLeavesNoGhostGrants(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	addr, pause := redistest.StartPausableServer(t)
	b := restartBackend(t, addr, "wt:ghost:") // OpTimeout 1s
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/ghost", Concurrency: 2, TTL: time.Hour, Windows: []throttle.Window{{Limit: 2, Period: time.Hour}}}
	probe := throttle.Request{Key: "{corp}/ghost-probe"}
	if _, err := b.TryAcquire(ctx, probe); err != nil { // the backend has seen the server's clock
		t.Fatal(err)
	}

	resume := pause()
	told := make(chan throttle.Stall, 1)
	sr := r
	sr.OnStall = func(s throttle.Stall) { told <- s }
	if _, err := b.TryAcquire(ctx, sr); !errors.Is(err, throttle.ErrUnavailable) {
		t.Fatalf("TryAcquire with Redis stopped: %v, want ErrUnavailable", err)
	}
	// Not silent: the second without an answer was told.
	select {
	case s := <-told:
		if s.Key != r.Key || s.Reason != throttle.ReasonUnavailable || !s.Until.IsZero() {
			t.Errorf("told %+v, want %s on %q with no end", s, throttle.ReasonUnavailable, r.Key)
		}
	default:
		t.Error("a round trip to a stopped Redis was not told")
	}
	time.Sleep(1500 * time.Millisecond) // past the request's timeout and the second of margin
	resume()

	if !robustEventually(30*time.Second, func() bool {
		_, err := b.TryAcquire(ctx, probe)
		return err == nil
	}) {
		t.Fatal("Redis did not answer after it resumed")
	}
	for i := range 2 {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("acquisition %d of 2 after the pause: %v (a request its caller gave up took a slot or a count)", i+1, err)
		}
		defer b.Release(ctx, l)
	}
}
