package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
)

// Redis restarted empty under two copies: the fleet's start is never read
// as the epoch. Until a copy writes again it is said to be unknown; then the
// copies' next ticks rebuild the marks (each writes all of its own) and the
// start (the earliest of theirs).
func TestFleetCountRebuiltAfterRedisRestart(t *testing.T) {
	t.Parallel() // a Redis of its own
	addr, restart, _ := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	t0 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	a, b := newFleetCount(rdb, "ft:", "corp"), newFleetCount(rdb, "ft:", "corp")
	a.begin(t0)
	b.begin(t0.Add(time.Second))
	a.add(10)
	b.add(5)
	checkFleet(t, a, "before the restart", 15, t0)

	restart()
	marks, _, known := fleetTotal(t, a)
	if known || marks != 0 {
		t.Errorf("after the restart, before any add: %d marks, start known %v; want 0, unknown", marks, known)
	}
	var out bytes.Buffer
	printFleet(&out, a)
	if s := out.String(); !strings.Contains(s, "unknown") || strings.Contains(s, " ago") {
		t.Errorf("summary with the start lost: %q, want it said unknown", s)
	}

	addUntil(t, b, 7)
	checkFleet(t, b, "after one copy added again", 7, t0.Add(time.Second))
	addUntil(t, a, 12)
	checkFleet(t, a, "after both added again", 19, t0)
	b.add(9)
	checkFleet(t, b, "after a later tick", 21, t0)
}

// fleetTotal reads f's totals, retrying while the client reconnects.
func fleetTotal(t *testing.T, f *fleetCount) (marks int64, since time.Time, known bool) {
	t.Helper()
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		marks, since, known, err := f.total(ctx)
		cancel()
		if err == nil {
			return marks, since, known
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the fleet's counters could not be read")
	return 0, time.Time{}, false
}

// addUntil adds ok marks to f, retrying while the client reconnects.
func addUntil(t *testing.T, f *fleetCount, ok int64) {
	t.Helper()
	for range 50 {
		if f.add(ok) == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the fleet's counters could not be written")
}

// checkFleet asserts the fleet's marks and start as f reads them.
func checkFleet(t *testing.T, f *fleetCount, when string, marks int64, start time.Time) {
	t.Helper()
	m, since, known := fleetTotal(t, f)
	if m != marks || !known || !since.Equal(start) {
		t.Errorf("%s: %d marks since %v (known %v), want %d since %v", when, m, since, known, marks, start)
	}
}
