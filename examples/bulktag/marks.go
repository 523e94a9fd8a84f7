package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wecomkit/wecom"
)

// outcome is what became of the marks of one run.
type outcome struct {
	total, ok, failed int // not started: total - ok - failed
	// stopped: a stop came before the last mark ended.
	stopped bool
	// inFlightAtStop were the marks being made when the stop came; cutShort
	// of them were still running when the drain ran out, and were cancelled.
	inFlightAtStop, cutShort int
	// undrained: calls given up by their caller were still running in the
	// background when the drain ended (their slots stay taken until their
	// lease TTL, since they may be running at WeCom).
	undrained  bool
	start, end time.Time
}

func (o outcome) notStarted() int { return o.total - o.ok - o.failed }

// counts are the workers' running tallies.
type counts struct {
	started, ok, failed, inFlight atomic.Int64
}

// markAll marks every customer cfg.repeat times with cfg.workers workers.
// Once stop ends, no new mark is started; the marks in flight get cfg.drain
// from then to finish, after which their calls are cancelled; then it waits
// (within the same drain) for the client's background attempts, so that
// their slots go back to the fleet rather than expire.
func markAll(stop context.Context, c *wecom.Client, cfg config, tagID string, st *stats, fleet *fleetCount, stderr io.Writer) outcome {
	calls, cancelCalls := context.WithCancel(context.Background())
	defer cancelCalls()
	o := outcome{total: cfg.customers * cfg.repeat, start: time.Now()}
	fleet.begin(o.start)
	var n counts
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for ext := range jobs {
				n.started.Add(1)
				n.inFlight.Add(1)
				markOne(calls, c, cfg.userID, ext, tagID, st, &n)
				n.inFlight.Add(-1)
			}
		})
	}
	defer startProgress(stderr, cfg.tty, cfg.progress, &n, o.total, o.start, func() { fleet.add(n.ok.Load()) })()
	go func() {
		feed(stop, jobs, cfg.customers, cfg.repeat)
		close(jobs)
	}()
	workersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(workersDone)
	}()

	drainBy := time.Now().Add(cfg.drain) // reset when the stop comes
	stopped, drainEnd := stop.Done(), (<-chan time.Time)(nil)
	drainTimer := time.NewTimer(time.Hour)
	drainTimer.Stop()
	defer drainTimer.Stop()
wait:
	for {
		select {
		case <-workersDone:
			break wait
		case <-stopped:
			stopped, o.stopped = nil, true
			o.inFlightAtStop = int(n.inFlight.Load())
			drainBy = time.Now().Add(cfg.drain)
			drainTimer.Reset(cfg.drain)
			drainEnd = drainTimer.C
			fmt.Fprintf(stderr, "\nbulktag: stopping: no new marks; %d in flight get %s to finish (a second signal aborts)\n", o.inFlightAtStop, cfg.drain)
		case <-drainEnd:
			drainEnd = nil
			o.cutShort = int(n.inFlight.Load())
			fmt.Fprintf(stderr, "bulktag: drain of %s over: cancelling the %d marks still in flight\n", cfg.drain, o.cutShort)
			cancelCalls()
		}
	}
	o.end = time.Now()
	o.ok, o.failed = int(n.ok.Load()), int(n.failed.Load())
	o.undrained = !drainClient(c, drainBy)
	return o
}

// feed hands out each customer repeat times, adjacent so that several
// workers want it at once, until stop ends.
func feed(stop context.Context, jobs chan<- string, customers, repeat int) {
	for i := range customers {
		ext := fmt.Sprintf("wm%08d", i)
		for range repeat {
			if stop.Err() != nil { // a ready worker must not win over a stop
				return
			}
			select {
			case jobs <- ext:
			case <-stop.Done():
				return
			}
		}
	}
}

// markOne makes one mark and records it.
func markOne(ctx context.Context, c *wecom.Client, userID, ext, tagID string, st *stats, n *counts) {
	t0 := time.Now()
	err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: userID, ExternalUserID: ext, AddTags: []string{tagID}})
	st.latency(time.Since(t0))
	if err != nil {
		st.fail(err)
		n.failed.Add(1)
		return
	}
	n.ok.Add(1)
}

// drainClient waits until deadline for the client's attempts whose callers
// have gone; it reports whether none is left.
func drainClient(c *wecom.Client, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return c.Drain(ctx) == nil
}
