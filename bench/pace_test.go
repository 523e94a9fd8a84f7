package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom/throttle"
)

// emptyScript is the least a script costs: a call, and no work.
var emptyScript = redis.NewScript(`return 0`)

// setScript is one SET NX PX inside a script: what a lock's take costs in
// Lua, against the same SET sent alone.
var setScript = redis.NewScript(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 60000) and 1 or 0`)

// giveBack gives back a lock held as a STRING (KEYS[1], whose value is the
// holder's id, ARGV[1]) and wakes the process that has waited longest on
// the waiting ZSET (KEYS[2]): what a one-slot key would cost as a STRING,
// taken with SET NX PX, for comparison.
var giveBack = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
local w = redis.call('ZPOPMIN', KEYS[2])
if #w > 0 then redis.call('PUBLISH', 'wake:' .. w[1], KEYS[1]) end
return 1`)

// TestScriptCostByPace: the Redis CPU (usec of EVAL, EVALSHA and SET in
// INFO commandstats) of one run, back to back and paced as the main job
// paces them (bulktag at 5 in flight and 20 ms a mark runs a script about
// every 4 ms): the empty script; one SET NX PX inside a script, and alone,
// as the limiter takes a customer lock (a key with one slot and no window,
// a fresh one each time, as `bulktag -customers 2000 -repeat 1` takes
// them); and a lock taken with SET NX PX and given back with giveBack. The
// figure per mark on the main job reads against it: a script run every few
// milliseconds costs several times what it costs back to back. The STRING
// lock idles Redis as long between its take and its give-back as between
// runs.
//
//	REDIS_ADDR=127.0.0.1:6379 go test -run TestScriptCostByPace -v -count=1 .
func TestScriptCostByPace(t *testing.T) {
	rdb := newRedis(t)
	prefix := uniquePrefix(t, rdb)
	lim := newLimiter(t, rdb, prefix)
	ctx := context.Background()
	if err := emptyScript.Run(ctx, rdb, nil).Err(); err != nil { // loads it
		t.Fatal(err)
	}
	if err := giveBack.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name string
		also []string // commands sent outside a script, counted in the run
		run  func(n int, gap time.Duration) error
	}{
		{"empty script", nil, func(int, time.Duration) error { return emptyScript.Run(ctx, rdb, nil).Err() }},
		{"SET NX PX in a script", nil, func(n int, _ time.Duration) error {
			return setScript.Run(ctx, rdb, []string{fmt.Sprintf("%s{wwbench}ss|wm%08d", prefix, n)}, "holder").Err()
		}},
		{"SET NX PX alone (a customer lock's take)", []string{"set"}, func(n int, _ time.Duration) error {
			_, err := lim.TryAcquire(ctx, throttle.Request{Key: fmt.Sprintf("{wwbench}/pace|wm%08d", n), Concurrency: 1, TTL: time.Minute})
			return err
		}},
		{"STRING lock, taken and given back", []string{"set"}, func(n int, gap time.Duration) error {
			key := fmt.Sprintf("%s{wwbench}str|wm%08d", prefix, n)
			if err := rdb.SetNX(ctx, key, "holder", time.Minute).Err(); err != nil {
				return err
			}
			time.Sleep(gap) // held as a call holds it: Redis idles between the two
			return giveBack.Run(ctx, rdb, []string{key, prefix + "{wwbench}str-waiting"}, "holder").Err()
		}},
	}
	n := 0 // every run a key of its own
	for _, r := range runs {
		for _, gap := range []time.Duration{0, time.Millisecond, 4 * time.Millisecond} {
			_, cpu0 := evalStats(t, rdb, r.also...)
			runs := 0
			for start := time.Now(); time.Since(start) < 2*time.Second; n, runs = n+1, runs+1 {
				if err := r.run(n, gap); err != nil {
					t.Fatal(err)
				}
				time.Sleep(gap)
			}
			_, cpu := evalStats(t, rdb, r.also...)
			t.Logf("%s, %s between runs: %d runs, %.1f us of Redis CPU a run",
				r.name, gap, runs, float64(cpu-cpu0)/float64(runs))
		}
	}
}

// evalStats returns the calls and usec of EVAL and EVALSHA so far, the
// usec of the commands named in also (sent outside a script) added.
func evalStats(t *testing.T, rdb *redis.Client, also ...string) (calls, usec int64) {
	t.Helper()
	cs, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(cs, "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		switch {
		case name == "eval" || name == "evalsha":
			calls += infoField(line, "calls=")
			usec += infoField(line, "usec=")
		case slices.Contains(also, name):
			usec += infoField(line, "usec=")
		}
	}
	return calls, usec
}
