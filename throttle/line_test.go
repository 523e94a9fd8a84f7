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
		v        Verdict
		r        Request
		deadline time.Time
		want     bool
	}{
		{"granted", Verdict{OK: true}, plain, now, false},
		{"want of a slot, deadline before its expiry", Verdict{Reason: ReasonConcurrency, At: at}, plain, now, false},
		{"rate, no deadline", Verdict{Reason: ReasonRate, At: at}, plain, time.Time{}, false},
		{"rate, deadline before it opens", Verdict{Reason: ReasonRate, At: at}, plain, at.Add(-time.Millisecond), true},
		{"rate, deadline as it opens", Verdict{Reason: ReasonRate, At: at}, plain, at, false},
		{"rate, opening unknown", Verdict{Reason: ReasonRate}, plain, now, false},
		{"cooldown, not waited out", Verdict{Reason: ReasonCooldown, At: at}, plain, time.Time{}, true},
		{"cooldown, waited out", Verdict{Reason: ReasonCooldown, At: at}, patient, time.Time{}, false},
		{"cooldown, waited out past the deadline", Verdict{Reason: ReasonCooldown, At: at}, patient, now, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.Fails(tc.r, tc.deadline, tc.v.At); got != tc.want {
				t.Errorf("fails = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLine: arrival order, the head, leaving twice, and failBehind sparing
// the head and those who wait.
func TestLine(t *testing.T) {
	t.Parallel()
	var l Line[*Waiter]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mk := func(ctx context.Context, wait bool) *Waiter {
		w := NewWaiter(ctx, Request{Key: "k", WaitCooldown: wait})
		return &w
	}
	a, b, c, d := mk(context.Background(), false), mk(context.Background(), true), mk(ctx, false), mk(context.Background(), true)
	for i, w := range []*Waiter{a, b, c, d} {
		if head := l.Push(w); head != (i == 0) {
			t.Fatalf("push %d: head = %v", i, head)
		}
	}
	if got := slices.Collect(l.All()); !slices.Equal(got, []*Waiter{a, b, c, d}) {
		t.Fatalf("all = %v", got)
	}
	cool := Verdict{Reason: ReasonCooldown, At: time.Now().Add(time.Hour)}
	err := errors.New("cooling")
	l.FailBehind(cool, cool.At, err) // c fails (not waiting, and past its deadline); a is the head
	select {
	case <-c.Turn:
		if c.Err != err {
			t.Fatalf("c.err = %v", c.Err)
		}
	default:
		t.Fatal("c was not failed")
	}
	if got := slices.Collect(l.All()); !slices.Equal(got, []*Waiter{a, b, d}) {
		t.Fatalf("after failBehind: %v", got)
	}
	if l.Leave(b) || !l.Leave(a) || l.Leave(a) {
		t.Fatal("leave: wasHead wrong")
	}
	if h, ok := l.Head(); !ok || h != d || l.Len() != 1 {
		t.Fatalf("head = %v, %v; len %d", h, ok, l.Len())
	}
	l.done(d, nil)
	if _, ok := l.Head(); ok || l.Len() != 0 {
		t.Fatal("the line is not empty")
	}
	<-d.Turn
}
