package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// stats are gathered by the observer and the workers.
type stats struct {
	attempts, retries atomic.Int64
	pages             atomic.Int64 // batch/get_by_user answers read
	sending           atomic.Int64 // total ns from sending to answer
	mu                sync.Mutex
	failures          map[string]int // by errcode or error class
	latencies         []time.Duration
	// waiting is what the marks last waited for besides slots (see
	// waitingFor), nil when nothing.
	waiting atomic.Pointer[waitNote]
}

// waitNote is a wait the progress line tells of: why, and until when (zero:
// not known, noted at noted).
type waitNote struct {
	why          string
	until, noted time.Time
}

// stalled is the client's stall observer: the marks wait for a limit.
func (s *stats) stalled(_ context.Context, _ string, st throttle.Stall) {
	why := st.Reason.String() + " on " + st.Key
	switch st.Reason {
	case throttle.ReasonReserve:
		why = "the reserve the limiter holds after its Redis lost its state"
	case throttle.ReasonCooldown:
		why = "WeCom's cooldown after a 45009"
	case throttle.ReasonRate:
		why = "a full rate window"
	case throttle.ReasonUnavailable: // no end known: why is the whole note
		why = "waiting on Redis: the limiter's Redis does not answer"
	}
	s.waiting.Store(&waitNote{why: why, until: st.Until, noted: time.Now()})
}

// waitingFor returns what the marks wait for at now, for the progress
// line: "" when nothing but slots.
func (s *stats) waitingFor(now time.Time) string {
	w := s.waiting.Load()
	switch {
	case w == nil:
		return ""
	case !w.until.IsZero() && w.until.After(now):
		return fmt.Sprintf("waiting for %s until %s", w.why, w.until.Format("15:04:05"))
	case w.until.IsZero() && now.Sub(w.noted) < 2*time.Second:
		return fmt.Sprintf("%s (at %s)", w.why, w.noted.Format("15:04:05"))
	}
	return ""
}

func newStats() *stats { return &stats{failures: map[string]int{}} }

// observe is the client's observer: it counts the mark_tag attempts and
// the pages of customers read.
func (s *stats) observe(_ context.Context, a wecom.Attempt) {
	if a.Path == batchPath && a.Err == nil {
		s.pages.Add(1)
	}
	if a.Path != markPath {
		return
	}
	s.attempts.Add(1)
	s.sending.Add(int64(a.Duration))
	if a.Number > 1 {
		s.retries.Add(1)
	}
}

func (s *stats) latency(d time.Duration) {
	s.mu.Lock()
	s.latencies = append(s.latencies, d)
	s.mu.Unlock()
}

func (s *stats) fail(err error) {
	key := "other"
	var ae *wecom.APIError
	switch {
	case errors.As(err, &ae):
		key = fmt.Sprintf("errcode %d", ae.Code)
	case errors.Is(err, wecom.ErrRateLimited):
		key = "rate limited (cooldown)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		key = "cancelled"
	case errors.Is(err, throttle.ErrUnavailable):
		key = "the limiter's Redis unreachable"
		s.waiting.Store(&waitNote{why: "the limiter's Redis has not answered for too long: marks fail", noted: time.Now()})
	}
	s.mu.Lock()
	s.failures[key]++
	s.mu.Unlock()
}

// print writes the summary of the marks and returns the exit status they
// call for.
func (o outcome) print(w io.Writer, st *stats, cfg config, srv *mock.Server) int {
	if o.found != nil {
		o.found.print(w, st.pages.Load())
	}
	fmt.Fprintf(w, "marks:      %d requested, %d done, %d failed, %d not started\n", o.total, o.ok, o.failed, o.notStarted())
	if o.stopped {
		fmt.Fprintf(w, "stopped:    by interrupt with %d marks in flight: %d ended within the %s drain, %d cancelled when it ran out\n",
			o.inFlightAtStop, o.inFlightAtStop-o.cutShort, cfg.drain, o.cutShort)
	}
	if o.undrained {
		fmt.Fprintf(w, "abandoned:  calls given up were still in flight when the drain ended: their slots stay taken until their lease TTL\n")
	}
	fmt.Fprintf(w, "calls:      %d mark_tag attempts, %d retries, mean round trip %s\n", st.attempts.Load(), st.retries.Load(),
		time.Duration(st.sending.Load()/max(1, st.attempts.Load())).Round(10*time.Microsecond))
	st.mu.Lock()
	defer st.mu.Unlock()
	keys := make([]string, 0, len(st.failures))
	for k := range st.failures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "failures:   %s: %d\n", k, st.failures[k])
	}
	elapsed := o.end.Sub(o.start)
	rate := float64(o.ok) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "elapsed:    %s (marking from %s to %s)\n", elapsed.Round(time.Millisecond),
		o.start.Format("15:04:05.000"), o.end.Format("15:04:05.000 MST"))
	fmt.Fprintf(w, "throughput: %.1f marks/s\n", rate)
	if len(st.latencies) > 0 {
		slices.Sort(st.latencies)
		fmt.Fprintf(w, "latency:    p50 %s, p99 %s per mark, from the worker's call to its return: the wait for a free slot included\n",
			pct(st.latencies, 0.50), pct(st.latencies, 0.99))
	}
	// The same times for scripts that add up copies running at once.
	fmt.Fprintf(w, "unix:       %d.%09d %d.%09d (start and end of the marking, unix seconds, for scripts)\n",
		o.start.Unix(), o.start.Nanosecond(), o.end.Unix(), o.end.Nanosecond())
	switch {
	case o.ok == o.total && (o.found == nil || o.found.err == nil && !o.found.stoppedWalking):
		return exitOK
	case o.stopped:
		return exitStopped
	default:
		return exitFailed
	}
}

// printFleet adds the marks of every copy sharing Redis and their combined
// rate since the first started; copies still running add to it later.
func printFleet(w io.Writer, f *fleetCount) {
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	marks, since, known, err := f.total(ctx)
	switch {
	case err != nil:
		return
	case !known:
		fmt.Fprintf(w, "fleet:      %d marks by every copy sharing Redis since the first started (when is unknown: Redis lost the fleet's counters)\n", marks)
		return
	}
	d := time.Since(since)
	fmt.Fprintf(w, "fleet:      %d marks by every copy sharing Redis since the first started %s ago: %.1f marks/s together (final once the last copy ends)\n",
		marks, d.Round(100*time.Millisecond), float64(marks)/max(d.Seconds(), 1e-9))
}

// printMockStats adds the mock's counters: the embedded mock's, or those
// examples/mockserver serves at -base-url (if it serves them).
func printMockStats(w io.Writer, cfg config, srv *mock.Server, tokenCalls int, o outcome) {
	if srv == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if ms, err := remoteStats(ctx, cfg.baseURL); err == nil {
			fmt.Fprintf(w, "mock:       (all processes so far) max in flight %d, 45033 answered %d, 45009 answered %d, gettoken calls %d, marks %d\n",
				ms.MaxInFlight[markPath], ms.Refusals[wecom.CodeConcurrencyLimited], ms.Refusals[wecom.CodeFrequencyLimited], ms.GetTokenCalls, ms.MarkCalls)
		}
		return
	}
	s := srv.Stats()
	rate := float64(o.ok) / max(o.end.Sub(o.start).Seconds(), 1e-9)
	allowed := markConcurrency()
	if cfg.wecomConcurrency > 0 {
		allowed = min(allowed, cfg.wecomConcurrency)
	}
	bound := float64(allowed) / cfg.latency.Seconds()
	fmt.Fprintf(w, "mock:       max in flight %d, 45033 answered %d, 45009 answered %d, gettoken calls %d\n",
		s.MaxInFlight[markPath], s.Refusals[wecom.CodeConcurrencyLimited], s.Refusals[wecom.CodeFrequencyLimited], tokenCalls+s.GetTokenCalls)
	fmt.Fprintf(w, "bound:      %.1f%% of the concurrency bound %d/latency = %.0f marks/s\n", 100*rate/bound, allowed, bound)
}

// mockStats are the counters examples/mockserver serves.
type mockStats struct {
	MaxInFlight   map[string]int
	Refusals      map[int]int
	GetTokenCalls int
	MarkCalls     int
}

// remoteStats reads the counters of a mock served by examples/mockserver.
func remoteStats(ctx context.Context, baseURL string) (*mockStats, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(baseURL, "/")+"/mock/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var ms mockStats
	return &ms, json.NewDecoder(resp.Body).Decode(&ms)
}

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(10 * time.Microsecond)
}

// markConcurrency is mark_tag's documented cap of calls in flight per corp.
func markConcurrency() int {
	for _, r := range wecom.DefaultLimits(markPath) {
		if r.Name == catalog.RuleInFlight {
			return r.InFlight
		}
	}
	return 0
}
