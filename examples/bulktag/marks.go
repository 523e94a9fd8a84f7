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
	// found, with -members or -all-members: what the walk over the
	// members' customers found (see walked).
	found *walked
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

// counts are the workers' running tallies; queued counts the marks handed
// out so far (the total, once the feed has ended).
type counts struct {
	queued, started, ok, failed, inFlight atomic.Int64
}

// job is one mark: a customer of a member.
type job struct{ user, ext string }

// feeder hands out marks on jobs until it has no more or stop ends, counting
// each in n.queued before it is handed out.
type feeder func(stop context.Context, jobs chan<- job, n *counts)

// markAll makes every mark feed hands out with cfg.workers workers, as it
// hands them out. Once stop ends, no new mark is started; the marks in flight get cfg.drain
// from then to finish, after which their calls are cancelled; then it waits
// (within the same drain) for the client's background attempts, so that
// their slots go back to the fleet rather than expire.
func markAll(stop context.Context, c *wecom.Client, cfg config, tagID string, st *stats, fleet *fleetCount, stderr io.Writer, feed feeder) outcome {
	calls, cancelCalls := context.WithCancel(context.Background())
	defer cancelCalls()
	o := outcome{start: time.Now()}
	fleet.begin(o.start)
	var n counts
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for j := range jobs {
				n.started.Add(1)
				n.inFlight.Add(1)
				markOne(calls, c, j, tagID, st, &n)
				n.inFlight.Add(-1)
			}
		})
	}
	fed := make(chan struct{})
	defer startProgress(stderr, cfg.tty, cfg.progress, &n, fed, o.start, st.waitingFor, func() { _ = fleet.add(n.ok.Load()) })()
	go func() {
		feed(stop, jobs, &n)
		close(fed)
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
	o.total, o.ok, o.failed = int(n.queued.Load()), int(n.ok.Load()), int(n.failed.Load())
	o.undrained = !drainClient(c, drainBy)
	return o
}

// synthetic returns the feeder of the benchmark mode: customers made-up
// customers of member userID, each handed out repeat times, adjacent so
// that several workers want it at once. It counts every mark as queued at
// once, as their number is known.
func synthetic(userID string, customers, repeat int) feeder {
	return func(stop context.Context, jobs chan<- job, n *counts) {
		n.queued.Store(int64(customers * repeat))
		for i := range customers {
			j := job{userID, fmt.Sprintf("wm%08d", i)}
			for range repeat {
				if !handOut(stop, jobs, j) {
					return
				}
			}
		}
	}
}

// handOut gives j to a worker unless stop ends first; a ready worker never
// wins over a stop that has come.
func handOut(stop context.Context, jobs chan<- job, j job) bool {
	if stop.Err() != nil {
		return false
	}
	select {
	case jobs <- j:
		return true
	case <-stop.Done():
		return false
	}
}

// markOne makes one mark and records it.
func markOne(ctx context.Context, c *wecom.Client, j job, tagID string, st *stats, n *counts) {
	t0 := time.Now()
	err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: j.user, ExternalUserID: j.ext, AddTags: []string{tagID}})
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
