// Conformance tests of waiting: cooldowns, deadlines, cancellation, arrival order and independent keys.
package throttletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

func testCooldown(t *testing.T, e *env) {
	ctx := context.Background()
	d := 50 * e.u // wide: the checks below must happen within it, even on a loaded machine
	probe, err := e.b.TryAcquire(ctx, throttle.Request{Key: "cool-probe"})
	if err != nil {
		t.Fatal(err)
	}
	r := throttle.Request{Key: "cool", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, ctx, e.b, r)
	// A waiter queued for the slot that does not wait out cooldowns fails
	// when the cooldown starts.
	queued := make(chan error, 1)
	go func() {
		l, err := e.b.Acquire(ctx, r)
		if err == nil {
			_ = e.b.Release(ctx, l)
		}
		queued <- err
	}()
	e.settle()
	if err := e.b.Cooldown(ctx, "cool", d); err != nil {
		t.Fatal(err)
	}
	limitError(t, <-queued, throttle.ReasonCooldown)
	mustRelease(t, e.b, holder)

	_, err = e.b.TryAcquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonCooldown); le.RetryAfter <= 0 || le.RetryAfter > d {
		t.Errorf("RetryAfter = %s, want in (0, %s]", le.RetryAfter, d)
	}
	_, err = e.b.Acquire(ctx, r)
	limitError(t, err, throttle.ReasonCooldown)

	waiting := r
	waiting.WaitCooldown = true
	short, cancel := context.WithTimeout(ctx, d/2)
	defer cancel()
	_, err = e.b.Acquire(short, waiting)
	limitError(t, err, throttle.ReasonCooldown)

	long, cancel2 := context.WithTimeout(ctx, 100*e.u)
	defer cancel2()
	l := mustAcquire(t, long, e.b, waiting)
	if l.Granted.Before(probe.Granted.Add(d)) {
		t.Errorf("granted at %v, before the cooldown's end (at least %v)", l.Granted, probe.Granted.Add(d))
	}
	mustRelease(t, e.b, l)
}

// testDeadlineFailsFast: a wait known to outlast the deadline fails at once.
func testDeadlineFailsFast(t *testing.T, e *env) {
	r := throttle.Request{Key: "deadline", Windows: []throttle.Window{{Limit: 1, Period: 100 * e.u}}}
	mustAcquire(t, context.Background(), e.b, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*e.u)
	defer cancel()
	start := time.Now()
	_, err := e.b.Acquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonRate); le.RetryAfter <= 10*e.u {
		t.Errorf("RetryAfter = %s, want beyond the deadline (%s)", le.RetryAfter, 10*e.u)
	}
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("Acquire waited %s before failing", time.Since(start))
	}
}

// testCancelManyWaiters: 300 waiters cancelled at once (while the holders
// release) leave no lease and no goroutine behind.
func testCancelManyWaiters(t *testing.T, e *env) {
	const slots, waiters = 2, 300
	r := throttle.Request{Key: "cancel", Concurrency: slots, TTL: 1000 * e.u}
	var holders []throttle.Lease
	for range slots {
		holders = append(holders, mustAcquire(t, context.Background(), e.b, r))
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, waiters)
	// The waiters, and every goroutine they start, carry the label id: what
	// is left of them is told apart from the goroutines of tests running
	// beside this one.
	id := fmt.Sprintf("%s %p", t.Name(), e)
	pprof.Do(ctx, pprof.Labels("throttletest", id), func(ctx context.Context) {
		for range waiters {
			go func() {
				l, err := e.b.Acquire(ctx, r)
				if err == nil {
					// Granted before the cancel reached it: a normal holder.
					err = e.b.Release(context.Background(), l)
				}
				errs <- err
			}()
		}
	})
	e.settle()
	var wg sync.WaitGroup
	wg.Go(cancel)
	for _, h := range holders {
		wg.Go(func() { mustRelease(t, e.b, h) })
	}
	wg.Wait()
	for range waiters {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("waiter: %v", err)
		}
	}
	// Every slot is free again.
	var got []throttle.Lease
	for i := range slots {
		l, err := e.b.TryAcquire(context.Background(), r)
		if err != nil {
			t.Fatalf("slot %d after the cancellations: %v (a lease was left behind)", i+1, err)
		}
		got = append(got, l)
	}
	_, err := e.b.TryAcquire(context.Background(), r)
	limitError(t, err, throttle.ReasonConcurrency)
	for _, l := range got {
		mustRelease(t, e.b, l)
	}
	if !e.synthetic { // in a bubble, synctest.Test itself fails on a leaked goroutine
		deadline := time.Now().Add(200 * e.u)
		for labeled("throttletest", id) > 0 && time.Now().Before(deadline) {
			time.Sleep(e.u)
		}
		if n := labeled("throttletest", id); n > 0 {
			t.Errorf("%d goroutines of the waiters left after the cancellations", n)
		}
	}
}

// labeled counts the goroutines labeled key=value (a goroutine inherits
// the labels of the one that starts it).
func labeled(key, value string) int {
	want := fmt.Sprintf("%q:%q", key, value) // as the profile prints labels
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n, count := 0, 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(c)
		}
		if rest, ok := strings.CutPrefix(line, "# labels: "); ok && strings.Contains(rest, want) {
			n += count
		}
	}
	return n
}

func testKeysIndependent(t *testing.T, e *env) {
	ctx := context.Background()
	a := throttle.Request{Key: "ind-a", Concurrency: 1, TTL: 100 * e.u, Windows: []throttle.Window{{Limit: 1, Period: 100 * e.u}}}
	la := mustAcquire(t, ctx, e.b, a)
	if err := e.b.Cooldown(ctx, "ind-c", 100*e.u); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Key = "ind-b"
	lb, err := e.b.TryAcquire(ctx, b)
	if err != nil {
		t.Fatalf("key b limited by key a: %v", err)
	}
	mustRelease(t, e.b, la)
	mustRelease(t, e.b, lb)
}

// testArrivalOrder: waiters on one key are served in arrival order.
func testArrivalOrder(t *testing.T, e *env) {
	const n = 20
	r := throttle.Request{Key: "fifo", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, context.Background(), e.b, r)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l, err := e.b.Acquire(context.Background(), r)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			mustRelease(t, e.b, l)
		})
		e.settle() // waiter i is queued before i+1 starts
	}
	mustRelease(t, e.b, holder)
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
}

// testCooldownMixedWaiters: a waiter that does not wait out cooldowns fails
// when one starts, even behind a waiter that does.
func testCooldownMixedWaiters(t *testing.T, e *env) {
	ctx := context.Background()
	r := throttle.Request{Key: "mixed", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, ctx, e.b, r)
	patient := r
	patient.WaitCooldown = true
	got := make(chan error, 2)
	for _, req := range []throttle.Request{patient, r} {
		go func() {
			l, err := e.b.Acquire(ctx, req)
			if err == nil {
				err = e.b.Release(ctx, l)
			}
			got <- err
		}()
		e.settle() // patient queues first
	}
	if err := e.b.Cooldown(ctx, "mixed", 5*e.u); err != nil {
		t.Fatal(err)
	}
	limitError(t, <-got, throttle.ReasonCooldown) // the impatient one, at once
	mustRelease(t, e.b, holder)
	if err := <-got; err != nil {
		t.Errorf("the waiter that waits out cooldowns: %v", err)
	}
}

// testWaiterBehindFailsFast: a waiter that arrives behind a waiting one fails
// at once when its own wait is known to outlast its deadline, or is a
// cooldown it does not wait out, as the first one would.
func testWaiterBehindFailsFast(t *testing.T, e *env) {
	ctx := context.Background()
	r := throttle.Request{Key: "behind", Windows: []throttle.Window{{Limit: 1, Period: 50 * e.u}}}
	mustAcquire(t, ctx, e.b, r)
	long, cancel := context.WithTimeout(ctx, 100*e.u)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := e.b.Acquire(long, r)
		first <- err
	}()
	e.settle() // the first waiter waits for the window
	short, cancel2 := context.WithTimeout(ctx, 5*e.u)
	defer cancel2()
	start := time.Now()
	_, err := e.b.Acquire(short, r)
	limitError(t, err, throttle.ReasonRate)
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("the waiter behind waited %s before failing", time.Since(start))
	}
	if err := <-first; err != nil {
		t.Errorf("the first waiter: %v", err)
	}

	long, cancel3 := context.WithTimeout(ctx, 100*e.u) // the window above used half of the first
	defer cancel3()
	c := throttle.Request{Key: "behind-cool", Concurrency: 1, TTL: 100 * e.u}
	if err := e.b.Cooldown(ctx, "behind-cool", 50*e.u); err != nil {
		t.Fatal(err)
	}
	patient := c
	patient.WaitCooldown = true
	done := make(chan error, 1)
	go func() {
		l, err := e.b.Acquire(long, patient)
		if err == nil {
			err = e.b.Release(ctx, l)
		}
		done <- err
	}()
	e.settle()
	start = time.Now()
	_, err = e.b.Acquire(long, c)
	limitError(t, err, throttle.ReasonCooldown)
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("the impatient waiter behind waited %s before failing", time.Since(start))
	}
	if err := <-done; err != nil {
		t.Errorf("the patient waiter: %v", err)
	}
}

// testWaitersBehindFailOnWindow: when the head of a line, asking for a slot
// that has freed up, is refused for a rate window, a waiter behind it whose
// deadline comes before the window opens fails at once for the window,
// rather than at its deadline; one that can wait waits on. (The slot frees
// up by its lease's expiry, so that the head asks: a Redis backend whose
// Release hands a slot over lets the next head wait without asking, as the
// slot is taken.)
func testWaitersBehindFailOnWindow(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := throttle.Request{Key: "behind-window", Concurrency: 1, TTL: 800 * e.u,
		Windows: []throttle.Window{{Limit: 2, Period: 400 * e.u}}}
	short := r
	short.TTL = 20 * e.u
	mustAcquire(t, ctx, e.b, short) // 1 of the window's 2; its slot expires
	type result struct {
		l   throttle.Lease
		err error
	}
	wait := func(ctx context.Context) chan result {
		c := make(chan result, 1)
		go func() {
			l, err := e.b.Acquire(ctx, r)
			c <- result{l, err}
		}()
		e.settle()
		return c
	}
	first, patient := wait(ctx), wait(ctx)                // in line for the slot
	soon, cancelSoon := context.WithTimeout(ctx, 200*e.u) // before the window opens, after a head that waits a second for a hand-over asks
	defer cancelSoon()
	hasty := wait(soon)

	got := <-first // the slot and the window's last unit
	if got.err != nil {
		t.Fatalf("the first waiter: %v", got.err)
	}
	defer mustRelease(t, e.b, got.l)
	limitError(t, (<-hasty).err, throttle.ReasonRate)
	select {
	case res := <-patient:
		t.Fatalf("the waiter that can wait out the window left: %+v, %v", res.l, res.err)
	default:
	}
	cancel()
	if err := (<-patient).err; !errors.Is(err, context.Canceled) {
		t.Errorf("the patient waiter, cancelled: %v", err)
	}
}

// testCooldownOutlastsHolder: a cooldown keeps a key's slots from a new
// holder until it ends, even when the holders' leases end first,
// unreleased (their process died): on a key of one slot (a lock) as on a
// key of several.
func testCooldownOutlastsHolder(t *testing.T, e *env) {
	ctx := context.Background()
	for _, conc := range []int{1, 2} {
		r := throttle.Request{Key: "cool-outlast" + strconv.Itoa(conc), Concurrency: conc, TTL: 5 * e.u}
		for range conc {
			mustAcquire(t, ctx, e.b, r) // never released
		}
		if err := e.b.Cooldown(ctx, r.Key, 100*e.u); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * e.u) // the holders' leases end
		_, err := e.b.TryAcquire(ctx, r)
		if le := limitError(t, err, throttle.ReasonCooldown); le.RetryAfter <= 0 {
			t.Errorf("concurrency %d: RetryAfter = %s, want the rest of the cooldown", conc, le.RetryAfter)
		}
	}
}
