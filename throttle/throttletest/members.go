// Conformance tests of requests with Members: rate windows counted on each
// member's key, all of them or none.
package throttletest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// membersReq returns a request counting ws on each of members, under key.
func membersReq(key string, ws []throttle.Window, members ...string) throttle.Request {
	return throttle.Request{Key: key, Windows: ws, Members: members}
}

// room returns how many single acquisitions of member under key fit now,
// taking them.
func room(t *testing.T, e *env, key string, ws []throttle.Window, member string) int {
	t.Helper()
	n := 0
	for ; n < 1000; n++ {
		_, err := e.b.TryAcquire(context.Background(), membersReq(key, ws, member))
		if err != nil {
			limitError(t, err, throttle.ReasonRate)
			return n
		}
	}
	t.Fatalf("member %q: more than 1000 acquisitions fit", member)
	return n
}

// testMembersInvalid: a request with Members is rate windows only, on
// distinct, non-empty members.
func testMembersInvalid(t *testing.T, e *env) {
	ws := []throttle.Window{{Limit: 3, Period: 100 * e.u}}
	for _, r := range []throttle.Request{
		{Key: "m", Members: []string{"a"}},
		{Key: "m", Windows: ws, Members: []string{"a"}, Concurrency: 1},
		{Key: "m", Windows: ws, Members: []string{"a"}, With: []throttle.Request{{Key: "w", Concurrency: 1}}},
		{Key: "m", Windows: ws, Members: []string{"a", "a"}},
		{Key: "m", Windows: ws, Members: []string{""}},
		{Key: "m", Windows: ws, Members: []string{"a\nb"}},
	} {
		for _, try := range []bool{true, false} {
			var err error
			if try {
				_, err = e.b.TryAcquire(context.Background(), r)
			} else {
				_, err = e.b.Acquire(context.Background(), r)
			}
			if !errors.Is(err, throttle.ErrInvalidRequest) {
				t.Errorf("%+v (try %v): err = %v, want ErrInvalidRequest", r, try, err)
			}
		}
	}
}

// testMembersAllOrNothing: a member without room refuses the whole
// request, names that member, and takes nothing from the others; each
// member counts the request once, on its own key.
func testMembersAllOrNothing(t *testing.T, e *env) {
	ctx := context.Background()
	ws := []throttle.Window{{Limit: 3, Period: 1000 * e.u}, {Limit: 50, Period: 2000 * e.u}}
	for range 3 {
		if _, err := e.b.TryAcquire(ctx, membersReq("send", ws, "full")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.b.TryAcquire(ctx, membersReq("send", ws, "a", "b")); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_, err := e.b.TryAcquire(ctx, membersReq("send", ws, "a", "full", "c", "b"))
		le := limitError(t, err, throttle.ReasonRate)
		if !slices.Equal(le.Members, []string{"full"}) {
			t.Fatalf("Members = %q, want [full]", le.Members)
		}
		if le.RetryAfter <= 0 || le.RetryAfter > 1000*e.u+1000*e.u/throttle.BucketsPerWindow {
			t.Fatalf("RetryAfter = %s, want when full's minute opens", le.RetryAfter)
		}
	}
	// Refusals took nothing; the one grant counted once on a and b.
	for m, want := range map[string]int{"a": 2, "b": 2, "c": 3, "full": 0} {
		if got := room(t, e, "send", ws, m); got != want {
			t.Errorf("member %q: %d fit, want %d", m, got, want)
		}
	}
	// Another key's members are other keys.
	if got := room(t, e, "other", ws, "full"); got != 3 {
		t.Errorf("member full under another key: %d fit, want 3", got)
	}
}

// testMembersWait: a waiter for members of whom one has no room waits
// until every one has, never sending a member over its window; one whose
// deadline comes first fails at once, naming the member.
func testMembersWait(t *testing.T, e *env) {
	ctx := context.Background()
	w := throttle.Window{Limit: 2, Period: 20 * e.u}
	ws := []throttle.Window{w}
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	take := func(r throttle.Request) error {
		l, err := e.b.Acquire(ctx, r)
		if err != nil {
			return err
		}
		mu.Lock()
		for _, m := range r.Members {
			starts[m] = append(starts[m], l.Granted)
		}
		mu.Unlock()
		return nil
	}
	// x is used up; sends to {x, y} and {y, z} come after.
	for range 2 {
		if err := take(membersReq("wait", ws, "x")); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 5*e.u)
	defer cancel()
	_, err := e.b.Acquire(short, membersReq("wait", ws, "y", "x"))
	le := limitError(t, err, throttle.ReasonRate)
	if !slices.Equal(le.Members, []string{"x"}) || le.RetryAfter <= 5*e.u {
		t.Fatalf("a deadline before x has room: %v, want x named, retry after more than %s", err, 5*e.u)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		r := membersReq("wait", ws, "x", "y")
		if i%2 == 1 {
			r = membersReq("wait", ws, "y", "z")
		}
		wg.Go(func() {
			if err := take(r); err != nil {
				t.Errorf("Acquire(%q): %v", r.Members, err)
			}
		})
	}
	wg.Wait()
	for m, s := range starts {
		slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
		if n, at := maxInWindow(s, w.Period); n > w.Limit {
			t.Errorf("member %q: %d grants in the %s ending %v, over %s", m, n, w.Period, at, w)
		}
	}
	if len(starts["y"]) != 6 || len(starts["x"]) != 5 || len(starts["z"]) != 3 {
		t.Errorf("grants per member: x %d, y %d, z %d, want 5, 6, 3", len(starts["x"]), len(starts["y"]), len(starts["z"]))
	}
}

// testMembersCancel: a waiter whose caller gives up counts nothing on any
// member.
func testMembersCancel(t *testing.T, e *env) {
	ctx := context.Background()
	ws := []throttle.Window{{Limit: 2, Period: 1000 * e.u}}
	for range 2 {
		if _, err := e.b.TryAcquire(ctx, membersReq("cancel", ws, "busy")); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.b.Acquire(wctx, membersReq("cancel", ws, "free", "busy"))
		done <- err
	}()
	e.settle()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	if got := room(t, e, "cancel", ws, "free"); got != 2 {
		t.Errorf("member free: %d fit after a cancelled wait, want 2", got)
	}
}

// testMembersMany: a thousand members are taken in one request, and the
// next request to any of them sees its count.
func testMembersMany(t *testing.T, e *env) {
	ctx := context.Background()
	ws := []throttle.Window{{Limit: 1, Period: 1000 * e.u}}
	members := make([]string, 1000)
	for i := range members {
		members[i] = fmt.Sprintf("user%04d", i)
	}
	if _, err := e.b.TryAcquire(ctx, membersReq("many", ws, members...)); err != nil {
		t.Fatal(err)
	}
	_, err := e.b.TryAcquire(ctx, membersReq("many", ws, "new", members[999], "other", members[0]))
	le := limitError(t, err, throttle.ReasonRate)
	if !slices.Equal(le.Members, []string{members[999], members[0]}) {
		t.Errorf("Members = %q, want [%s %s]", le.Members, members[999], members[0])
	}
	if _, err := e.b.TryAcquire(ctx, membersReq("many", ws, "new", "other")); err != nil {
		t.Errorf("members outside the first request: %v", err)
	}
}

// testMembersCooldown: a cooldown on the request's key refuses it.
func testMembersCooldown(t *testing.T, e *env) {
	ctx := context.Background()
	if err := e.b.Cooldown(ctx, "cool", 100*e.u); err != nil {
		t.Fatal(err)
	}
	_, err := e.b.TryAcquire(ctx, membersReq("cool", []throttle.Window{{Limit: 5, Period: 100 * e.u}}, "a"))
	limitError(t, err, throttle.ReasonCooldown)
}

// testMembersOthersGoOn: a waiter for a member without room holds up
// only the requests naming that member: one to other members goes on at
// once, and a TryAcquire that would overtake it on its member is refused.
func testMembersOthersGoOn(t *testing.T, e *env) {
	ctx := context.Background()
	ws := []throttle.Window{{Limit: 1, Period: 1000 * e.u}}
	if _, err := e.b.TryAcquire(ctx, membersReq("hol", ws, "x")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.b.Acquire(wctx, membersReq("hol", ws, "x", "w"))
		done <- err
	}()
	e.settle()
	short, stop := context.WithTimeout(ctx, 50*e.u)
	defer stop()
	if _, err := e.b.Acquire(short, membersReq("hol", ws, "y", "z")); err != nil {
		t.Errorf("a request to other members behind a waiter: %v", err)
	}
	_, err := e.b.TryAcquire(ctx, membersReq("hol", ws, "w"))
	if le := limitError(t, err, throttle.ReasonConcurrency); !slices.Equal(le.Members, []string{"w"}) {
		t.Errorf("Members = %q, want [w]: the member a waiter is in line for", le.Members)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiter: %v, want context.Canceled", err)
	}
	if _, err := e.b.TryAcquire(ctx, membersReq("hol", ws, "w")); err != nil {
		t.Errorf("w once its waiter left, which took nothing: %v", err)
	}
}
