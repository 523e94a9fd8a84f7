package throttle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// A Redis that hangs (SIGSTOP) for longer than a round trip's timeout, then
// resumes (SIGCONT), runs the scripts that waited in its sockets: an
// acquisition whose caller had its ErrUnavailable long ago must not take a
// slot then (nobody would use it until its TTL, an hour here), nor a count
// of a window. Once Redis answers, every slot and the whole window serve
// again. The wait on the stopped Redis is told to the caller's StallFunc.
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
	sctx := throttle.WithStallFunc(ctx, func(s throttle.Stall) { told <- s })
	if _, err := b.TryAcquire(sctx, r); !errors.Is(err, throttle.ErrUnavailable) {
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
