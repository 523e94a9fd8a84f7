package main

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleetIdle is how long the fleet's counters outlive the last copy that
// wrote them: copies whose runs overlap (or follow within it) add up, and a
// later run starts afresh.
const fleetIdle = time.Minute

// fleetAdd adds a copy's marks to the fleet's counters and keeps the
// fleet's start the earliest of its copies'. The counters carry an epoch:
// a copy that finds another than the one it added under (Redis lost the
// counters, restarted empty) adds all its marks again under the epoch in
// force, so that the counters are rebuilt as the copies tick.
//
// KEYS[1] marks, KEYS[2] start (unix µs), KEYS[3] epoch
// ARGV[1] the epoch this copy added under ("" before its first add)
// ARGV[2] an epoch to make if none is in force
// ARGV[3] this copy's start (unix µs)
// ARGV[4] this copy's marks since its last add, ARGV[5] all of them
// ARGV[6] how long the counters live (ms)
//
// Returns the epoch in force.
var fleetAdd = redis.NewScript(`
local ep, n = redis.call('GET', KEYS[3]), ARGV[4]
if ep ~= ARGV[1] then
  if not ep then
    ep = ARGV[2]
    redis.call('SET', KEYS[3], ep)
  end
  n = ARGV[5]
end
local s = redis.call('GET', KEYS[2])
if not s or tonumber(ARGV[3]) < tonumber(s) then
  redis.call('SET', KEYS[2], ARGV[3])
end
redis.call('INCRBY', KEYS[1], n)
for i = 1, 3 do
  redis.call('PEXPIRE', KEYS[i], ARGV[6])
end
return ep
`)

// fleetCount counts the marks done by every copy sharing one Redis, so that each
// can show the fleet's combined rate. A nil *fleetCount (no -redis) counts
// nothing. Counts go to Redis with the progress ticks, not with every mark.
type fleetCount struct {
	rdb   redis.UniversalClient
	keys  []string // marks, the fleet's start, the counters' epoch (fleetAdd)
	start time.Time

	mu    sync.Mutex
	sent  int64  // marks of this copy already added
	epoch string // the epoch they were added under
}

// newFleetCount returns the counter of corp's copies under prefix.
func newFleetCount(rdb redis.UniversalClient, prefix, corp string) *fleetCount {
	base := prefix + "fleet:{" + corp + "}:"
	return &fleetCount{rdb: rdb, keys: []string{base + "marks", base + "start", base + "epoch"}}
}

// begin notes that this copy starts marking at start: the fleet's start, if
// it is the first.
func (f *fleetCount) begin(start time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.start = start
	f.mu.Unlock()
	f.add(0)
}

// add records that this copy has done ok marks in all. It runs at every
// tick, new marks or not, so that a copy rebuilds counters Redis lost even
// while it waits.
func (f *fleetCount) add(ok int64) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ep, err := fleetAdd.Run(ctx, f.rdb, f.keys, f.epoch, rand.Text(), f.start.UnixMicro(), ok-f.sent, ok, fleetIdle.Milliseconds()).Text()
	if err == nil {
		f.sent, f.epoch = ok, ep
	}
}

// total returns the marks the fleet has done and when its first copy
// started; known is false when Redis holds no start (it lost the counters,
// and no copy has added since).
func (f *fleetCount) total(ctx context.Context) (marks int64, since time.Time, known bool, err error) {
	vals, err := f.rdb.MGet(ctx, f.keys[0], f.keys[1]).Result()
	if err != nil {
		return 0, time.Time{}, false, err
	}
	m, _ := vals[0].(string)
	s, _ := vals[1].(string)
	marks, _ = strconv.ParseInt(m, 10, 64)
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil || us <= 0 {
		return marks, time.Time{}, false, nil
	}
	return marks, time.UnixMicro(us), true, nil
}
