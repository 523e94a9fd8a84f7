package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// memberGrant is a grant of weight units to a member at a server time.
type memberGrant struct {
	at     time.Time
	weight int
}

// overLimit returns a description of the first sliding interval of w's
// period in which gs (sorted by time) count more than w's limit, or "".
func overLimit(gs []memberGrant, w throttle.Window) string {
	for i, g := range gs {
		n := 0
		for _, h := range gs[:i+1] {
			if h.at.After(g.at.Add(-w.Period)) {
				n += h.weight
			}
		}
		if n > w.Limit {
			return fmt.Sprintf("%d units in the %s ending %s", n, w.Period, g.at.Format("15:04:05.000"))
		}
	}
	return ""
}

// Three processes send to random sets of six members at once, some
// waiting, some trying, some giving up as they are served, with weights of
// 1 and 2: no member is ever counted over either of its windows in any
// sliding interval, on a single node and on a cluster, and every member is
// served.
func TestRedisMembersNeverOverUnderConcurrency(t *testing.T) {
	t.Parallel()
	for name, rdb := range map[string]redis.UniversalClient{"Single": redistest.Single(t), "Cluster": redistest.Cluster(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			membersUnderConcurrency(t, rdb)
		})
	}
}

func membersUnderConcurrency(t *testing.T, rdb redis.UniversalClient) {
	prefix := redistest.Prefix(t, rdb)
	procs := make([]*Backend, 3)
	for i := range procs {
		b, err := newRedis(rdb, Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		procs[i] = b
	}
	ws := []throttle.Window{{Limit: 4, Period: 300 * time.Millisecond}, {Limit: 10, Period: 1200 * time.Millisecond}}
	pool := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	var (
		mu     sync.Mutex
		grants = map[string][]memberGrant{}
		wg     sync.WaitGroup
	)
	end := time.Now().Add(1500 * time.Millisecond)
	for g := range 12 {
		b := procs[g%len(procs)]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 33))
			for time.Now().Before(end) {
				members := slices.Clone(pool)
				rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
				r := throttle.Request{Key: "{corp}/send", Windows: ws, Members: members[:1+rng.IntN(4)], Weight: 1 + rng.IntN(2)}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(300))*time.Millisecond)
				var l throttle.Lease
				var err error
				if rng.IntN(2) == 0 {
					l, err = b.TryAcquire(ctx, r)
				} else {
					l, err = b.Acquire(ctx, r)
				}
				cancel()
				var le *throttle.LimitError
				switch {
				case err == nil:
					mu.Lock()
					for _, m := range r.Members {
						grants[m] = append(grants[m], memberGrant{l.Granted, r.Units()})
					}
					mu.Unlock()
				case !errors.As(err, &le) && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("Acquire(%q): %v", r.Members, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, m := range pool {
		gs := grants[m]
		slices.SortFunc(gs, func(a, b memberGrant) int { return a.at.Compare(b.at) })
		for _, w := range ws {
			if over := overLimit(gs, w); over != "" {
				t.Errorf("member %s: %s, over %s", m, over, w)
			}
		}
		if len(gs) < ws[0].Limit/2 {
			t.Errorf("member %s: %d grants in 1.5 s, want at least %d", m, len(gs), ws[0].Limit/2)
		}
	}
}

// membersTake runs the members script's take of ws on members under key,
// in generations of gen ms, and returns its answer. A take Redis ran too
// late to count (reasonStale: the machine held it back) is sent again, as
// the backend does, up to 10 times.
func membersTake(t *testing.T, b *Backend, gen int64, key string, ws []throttle.Window, members ...string) membersAnswer {
	t.Helper()
	for try := 1; ; try++ {
		args := []any{newLeaseID(), b.ledger.epoch(key, true), 1, 0, 0, len(ws)}
		for _, w := range ws {
			args = append(args, w.Limit, w.Period.Milliseconds())
		}
		for _, m := range members {
			args = append(args, m)
		}
		raw, err := b.membersRunIn(context.Background(), gen, key, membersTTL(ws), "take", args...)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := parseMembersAnswer(raw, len(members), len(ws))
		if err != nil {
			t.Fatal(err)
		}
		b.ref.saw(ans.now)
		if ans.epoch != "" {
			b.ledger.learn(key, ans.epoch)
		}
		if ans.reason != reasonStale || try == 10 {
			return ans
		}
	}
}

// A member's state is read from the generation it was written in for as
// long as its window counts it, whatever generation a take then writes in,
// and the generation HASHes expire once they hold nothing counted.
func TestRedisMembersAcrossGenerations(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	b, err := newRedis(rdb, Options{Prefix: redistest.Prefix(t, rdb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	const gen = 50 // ms
	ws := []throttle.Window{{Limit: 3, Period: 600 * time.Millisecond}}
	first := membersTake(t, b, gen, "{g}/send", ws, "a", "b")
	for range 2 {
		if ans := membersTake(t, b, gen, "{g}/send", ws, "a", "b"); ans.reason != 0 {
			t.Fatalf("grants 2 and 3: %+v", ans)
		}
	}
	time.Sleep(3 * gen * time.Millisecond) // generations later, within the window
	ans := membersTake(t, b, gen, "{g}/send", ws, "c", "a")
	if ans.reason != throttle.ReasonRate || !slices.Equal(ans.refused, []int{2}) || ans.at < first.now+600 {
		t.Fatalf("a fourth send to a within its window, generations later: %+v, want a refusal of a until %d", ans, first.now+600)
	}
	for time.Now().Before(time.UnixMilli(ans.at).Add(10 * time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	if ans := membersTake(t, b, gen, "{g}/send", ws, "c", "a"); ans.reason != 0 {
		t.Fatalf("a send to a once its window slid past the first three: %+v", ans)
	}
	// Every state expires with its generation: nothing is left once the
	// last take's window and a generation have passed.
	k := b.names("{g}/send", nil)
	deadline := time.Now().Add(gen*time.Millisecond + time.Duration(membersTTL(ws))*time.Millisecond + 5*time.Second)
	for {
		keys, err := rdb.Keys(context.Background(), k.members+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("generation HASHes still there long after their windows: %q", keys)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The members script's answers to a take of two members on one window, as
// go-redis hands them over: what each becomes, and every shape the script
// never gives refused.
func TestParseMembersAnswer(t *testing.T) {
	t.Parallel()
	kv := func(reason any, now any, refused, fills []any, extra ...any) []any {
		return append([]any{"reason", reason, "now", now, "at", int64(5000), "epoch", "", "refused", refused, "fills", fills}, extra...)
	}
	l := func(v ...any) []any { return v }
	for _, tc := range []struct {
		name string
		raw  []any
		want membersAnswer // ignored when bad
		bad  bool
	}{
		{"grant", kv("", int64(1000), l(), l(int64(1), int64(2))),
			membersAnswer{now: 1000, at: 5000, fills: []int64{1, 2}}, false},
		{"refusal", kv("rate", int64(1000), l(int64(2)), l(int64(0), int64(3))),
			membersAnswer{reason: throttle.ReasonRate, now: 1000, at: 5000, refused: []int{2}, fills: []int64{0, 3}}, false},
		{"reserve", kv("reserve", int64(1000), l(int64(1)), l(int64(3), int64(3))),
			membersAnswer{reason: throttle.ReasonReserve, now: 1000, at: 5000, refused: []int{1}, fills: []int64{3, 3}}, false},
		{"lost, no fills", kv("lost", int64(1000), l(), l()), membersAnswer{reason: reasonLost, now: 1000, at: 5000}, false},
		{"keys in another order", append(kv("", int64(1000), l(), l())[2:], "reason", "stale"),
			membersAnswer{reason: reasonStale, now: 1000, at: 5000}, false},
		{"an unknown reason", kv("slow", int64(1000), l(), l()), membersAnswer{}, true},
		{"a number for the reason", kv(int64(2), int64(1000), l(), l()), membersAnswer{}, true},
		{"no time", kv("", int64(0), l(), l()), membersAnswer{}, true},
		{"a string for the time", kv("", "1000", l(), l()), membersAnswer{}, true},
		{"a member past the request's", kv("rate", int64(1000), l(int64(3)), l()), membersAnswer{}, true},
		{"member 0", kv("rate", int64(1000), l(int64(0)), l()), membersAnswer{}, true},
		{"fills of one member", kv("", int64(1000), l(), l(int64(1))), membersAnswer{}, true},
		{"a negative fill", kv("", int64(1000), l(), l(int64(1), int64(-2))), membersAnswer{}, true},
		{"a key missing", kv("", int64(1000), l(), l())[2:], membersAnswer{}, true},
		{"a key without its value", kv("", int64(1000), l(), l(), "at"), membersAnswer{}, true},
		{"a key twice", kv("", int64(1000), l(), l(), "at", int64(1)), membersAnswer{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMembersAnswer(tc.raw, 2, 1)
			if tc.bad {
				if err == nil {
					t.Fatalf("parseMembersAnswer(%v) = %+v, want an error", tc.raw, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseMembersAnswer(%v) = %+v, %v, want %+v", tc.raw, got, err, tc.want)
			}
		})
	}
}

// Requests on one key whose windows differ, or come in another order,
// count on the same member state: a take of some windows keeps the others'
// counts, and each window refuses as its own count says.
func TestRedisMembersWindowsInAnyOrder(t *testing.T) {
	t.Parallel()
	bs, _ := twoProcesses(t)
	b := bs[0]
	ctx := context.Background()
	a, long := throttle.Window{Limit: 2, Period: time.Minute}, throttle.Window{Limit: 5, Period: time.Hour}
	for i, tc := range []struct {
		ws   []throttle.Window
		want throttle.Reason // 0: granted
	}{
		{[]throttle.Window{a}, 0},
		{[]throttle.Window{a}, 0},    // a full
		{[]throttle.Window{long}, 0}, // long before a in the state, a kept
		{[]throttle.Window{a}, throttle.ReasonRate},
		{[]throttle.Window{long, a}, throttle.ReasonRate},
		{[]throttle.Window{{Limit: 9, Period: 2 * time.Minute}}, 0}, // a third window beside them
		{[]throttle.Window{a, long}, throttle.ReasonRate},
		{[]throttle.Window{long}, 0},
	} {
		_, err := b.TryAcquire(ctx, throttle.Request{Key: "{o}/send", Windows: tc.ws, Members: []string{"x"}})
		var le *throttle.LimitError
		switch {
		case tc.want == 0 && err != nil:
			t.Fatalf("take %d of %v: %v, want a grant", i+1, tc.ws, err)
		case tc.want != 0 && (!errors.As(err, &le) || le.Reason != tc.want || !slices.Equal(le.Members, []string{"x"})):
			t.Fatalf("take %d of %v: %v, want a refusal naming x", i+1, tc.ws, err)
		}
	}
}
