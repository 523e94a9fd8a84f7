package main

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleetIdle is how long the fleet's counters outlive the last copy that
// wrote them: copies whose runs overlap (or follow within it) add up, and a
// later run starts afresh.
const fleetIdle = time.Minute

// fleetCount counts the marks done by every copy sharing one Redis, so that
// each can show the fleet's combined rate. Each copy writes its own count
// and start, whole, under an id of its own (a HASH of counts, a ZSET of
// starts), so that a Redis restarted empty gets them back at the copies'
// next ticks. A nil *fleetCount (no -redis) counts nothing. Counts go to
// Redis with the progress ticks, not with every mark.
type fleetCount struct {
	rdb           redis.UniversalClient
	marks, starts string // keys: each copy's marks, each copy's start (unix µs)
	id            string // this copy's
	start         time.Time
}

// newFleetCount returns the counter of corp's copies under prefix.
func newFleetCount(rdb redis.UniversalClient, prefix, corp string) *fleetCount {
	base := prefix + "fleet:{" + corp + "}:"
	return &fleetCount{rdb: rdb, marks: base + "marks", starts: base + "starts", id: rand.Text()}
}

// begin notes that this copy starts marking at start. It is called before
// the first add.
func (f *fleetCount) begin(start time.Time) {
	if f == nil {
		return
	}
	f.start = start
	_ = f.add(0) // the first tick writes it again
}

// add records that this copy has done ok marks in all, and its start, and
// returns Redis's error, if any (the next tick writes them again). It runs
// at every tick, so that a copy writes back what Redis lost even while it
// does no mark.
func (f *fleetCount) add(ok int64) error {
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, f.marks, f.id, ok)
		p.ZAdd(ctx, f.starts, redis.Z{Score: float64(f.start.UnixMicro()), Member: f.id})
		p.Expire(ctx, f.marks, fleetIdle)
		p.Expire(ctx, f.starts, fleetIdle)
		return nil
	})
	return err
}

// total returns the marks the fleet has done and when its first copy
// started; known is false when Redis holds no start (it lost the counters,
// and no copy has written them back since).
func (f *fleetCount) total(ctx context.Context) (marks int64, since time.Time, known bool, err error) {
	var counts *redis.StringSliceCmd
	var first *redis.ZSliceCmd
	if _, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		counts = p.HVals(ctx, f.marks)
		first = p.ZRangeWithScores(ctx, f.starts, 0, 0)
		return nil
	}); err != nil {
		return 0, time.Time{}, false, err
	}
	for _, c := range counts.Val() {
		n, _ := strconv.ParseInt(c, 10, 64)
		marks += n
	}
	if z := first.Val(); len(z) == 1 && z[0].Score > 0 {
		return marks, time.UnixMicro(int64(z[0].Score)), true, nil
	}
	return marks, time.Time{}, false, nil
}
