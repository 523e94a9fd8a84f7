package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleetIdle is how long the fleet's counters outlive the last copy that
// wrote them: copies whose runs overlap (or follow within it) add up, and a
// later run starts afresh.
const fleetIdle = time.Minute

// fleetCount counts the marks done by every copy sharing one Redis, so that each
// can show the fleet's combined rate. A nil *fleetCount (no -redis) counts
// nothing. Counts go to Redis with the progress ticks, not with every mark.
type fleetCount struct {
	rdb        redis.UniversalClient
	marks, set string // keys: the marks done, when the first copy started

	mu   sync.Mutex
	sent int64 // marks of this copy already added
}

// newFleetCount returns the counter of corp's copies under prefix.
func newFleetCount(rdb redis.UniversalClient, prefix, corp string) *fleetCount {
	return &fleetCount{rdb: rdb, marks: prefix + "fleet:{" + corp + "}:marks", set: prefix + "fleet:{" + corp + "}:start"}
}

// begin notes that this copy starts marking at start: the fleet's start, if
// it is the first.
func (f *fleetCount) begin(start time.Time) {
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f.rdb.SetNX(ctx, f.set, strconv.FormatInt(start.UnixMicro(), 10), fleetIdle)
}

// add records that this copy has done ok marks in all.
func (f *fleetCount) add(ok int64) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok == f.sent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.IncrBy(ctx, f.marks, ok-f.sent)
		p.Expire(ctx, f.marks, fleetIdle)
		p.Expire(ctx, f.set, fleetIdle)
		return nil
	})
	if err == nil {
		f.sent = ok
	}
}

// total returns the marks the fleetCount has done and when its first copy
// started.
func (f *fleetCount) total(ctx context.Context) (marks int64, since time.Time, err error) {
	vals, err := f.rdb.MGet(ctx, f.marks, f.set).Result()
	if err != nil {
		return 0, time.Time{}, err
	}
	m, _ := vals[0].(string)
	s, _ := vals[1].(string)
	marks, _ = strconv.ParseInt(m, 10, 64)
	us, _ := strconv.ParseInt(s, 10, 64)
	return marks, time.UnixMicro(us), nil
}
