package throttle

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestVerdictFails: which refusals fail a waiter at once.
func TestVerdictFails(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	at := now.Add(time.Second)
	plain := Request{Key: "k"}
	patient := Request{Key: "k", WaitCooldown: true}
	tests := []struct {
		name     string
		v        verdict
		r        Request
		deadline time.Time
		want     bool
	}{
		{"granted", verdict{ok: true}, plain, now, false},
		{"want of a slot, deadline before its expiry", verdict{reason: ReasonConcurrency, at: at}, plain, now, false},
		{"rate, no deadline", verdict{reason: ReasonRate, at: at}, plain, time.Time{}, false},
		{"rate, deadline before it opens", verdict{reason: ReasonRate, at: at}, plain, at.Add(-time.Millisecond), true},
		{"rate, deadline as it opens", verdict{reason: ReasonRate, at: at}, plain, at, false},
		{"rate, opening unknown", verdict{reason: ReasonRate}, plain, now, false},
		{"cooldown, not waited out", verdict{reason: ReasonCooldown, at: at}, plain, time.Time{}, true},
		{"cooldown, waited out", verdict{reason: ReasonCooldown, at: at}, patient, time.Time{}, false},
		{"cooldown, waited out past the deadline", verdict{reason: ReasonCooldown, at: at}, patient, now, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.fails(tc.r, tc.deadline, tc.v.at); got != tc.want {
				t.Errorf("fails = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLine: arrival order, the head, leaving twice, and failBehind sparing
// the head and those who wait.
func TestLine(t *testing.T) {
	t.Parallel()
	var l line[*waiter]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mk := func(ctx context.Context, wait bool) *waiter {
		w := newWaiter(ctx, Request{Key: "k", WaitCooldown: wait})
		return &w
	}
	a, b, c, d := mk(context.Background(), false), mk(context.Background(), true), mk(ctx, false), mk(context.Background(), true)
	for i, w := range []*waiter{a, b, c, d} {
		if head := l.push(w); head != (i == 0) {
			t.Fatalf("push %d: head = %v", i, head)
		}
	}
	if got := slices.Collect(l.all()); !slices.Equal(got, []*waiter{a, b, c, d}) {
		t.Fatalf("all = %v", got)
	}
	cool := verdict{reason: ReasonCooldown, at: time.Now().Add(time.Hour)}
	err := errors.New("cooling")
	l.failBehind(cool, cool.at, err) // c fails (not waiting, and past its deadline); a is the head
	select {
	case <-c.turn:
		if c.err != err {
			t.Fatalf("c.err = %v", c.err)
		}
	default:
		t.Fatal("c was not failed")
	}
	if got := slices.Collect(l.all()); !slices.Equal(got, []*waiter{a, b, d}) {
		t.Fatalf("after failBehind: %v", got)
	}
	if l.leave(b) || !l.leave(a) || l.leave(a) {
		t.Fatal("leave: wasHead wrong")
	}
	if h, ok := l.head(); !ok || h != d || l.len() != 1 {
		t.Fatalf("head = %v, %v; len %d", h, ok, l.len())
	}
	l.done(d, nil)
	if _, ok := l.head(); ok || l.len() != 0 {
		t.Fatal("the line is not empty")
	}
	<-d.turn
}
