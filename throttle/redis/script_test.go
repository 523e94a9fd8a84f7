package redis

import (
	"context"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// The acquire script's answers, as go-redis hands them over (field names
// and values, "now" first, a field left out zero): what each becomes, and
// every shape that is not the script's refused, never guessed at.
func TestParseAnswer(t *testing.T) {
	t.Parallel()
	// kv turns name, value, ... into the reply, numbers as int64.
	kv := func(v ...any) []any {
		out := make([]any, len(v))
		for j, x := range v {
			if n, ok := x.(int); ok {
				x = int64(n)
			}
			out[j] = x
		}
		return out
	}
	fills := []any{int64(7), int64(120)}
	for _, tc := range []struct {
		name string
		raw  []any
		want answer // ignored when bad
		bad  bool
	}{
		{"grant", kv("now", 1000, "held", 1, "expires", 2000, "n", 3),
			answer{now: 1000, held: true, expires: 2000, n: 3}, false},
		{"grant, a block, others waiting", kv("now", 1000, "held", 1, "expires", 2000, "n", 1, "blk", 40, "block_at", 1600, "others", 1),
			answer{now: 1000, held: true, expires: 2000, n: 1, blk: 40, blockAt: 1600, others: true}, false},
		{"grant, epoch, fills", kv("now", 1000, "n", 1, "epoch", "1000:ab", "fills", fills),
			answer{now: 1000, n: 1, epoch: "1000:ab", fills: []int64{7, 120}}, false},
		{"refusal", kv("now", 1000, "reason", 2, "at", 5000, "held", 1),
			answer{reason: throttle.ReasonRate, now: 1000, at: 5000, held: true}, false},
		{"refusal for a reserve, fills", kv("now", 1000, "reason", 7, "at", 5000, "fills", fills),
			answer{reason: throttle.ReasonReserve, now: 1000, at: 5000, fills: []int64{7, 120}}, false},
		{"lost, epoch", kv("now", 1000, "reason", 5, "epoch", "9:x"),
			answer{reason: reasonLost, now: 1000, epoch: "9:x"}, false},
		{"others not a flag", kv("now", 1000, "n", 1, "others", 2), answer{}, true},
		{"held not a flag", kv("now", 1000, "n", 1, "held", 2), answer{}, true},
		{"no time", kv("n", 1), answer{}, true},
		{"time zero", kv("now", 0, "n", 1), answer{}, true},
		{"time not first", kv("n", 1, "now", 1000), answer{}, true},
		{"a name without its value", kv("now", 1000, "n"), answer{}, true},
		{"an unknown name", kv("now", 1000, "nn", 1), answer{}, true},
		{"a name not a string", kv("now", 1000, 5, 1), answer{}, true},
		{"a string for a number", kv("now", "1000"), answer{}, true},
		{"negative count", kv("now", 1000, "n", -1), answer{}, true},
		{"epoch not a string", kv("now", 1000, "epoch", 5), answer{}, true},
		{"fills not a list", kv("now", 1000, "fills", "7"), answer{}, true},
		{"a fill not a number", kv("now", 1000, "fills", []any{"7"}), answer{}, true},
		{"a negative fill", kv("now", 1000, "fills", []any{int64(-7)}), answer{}, true},
		{"members refused, which only the members script answers", kv("now", 1000, "reason", 2, "refused", kv(1)), answer{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAnswer(tc.raw)
			if tc.bad {
				if err == nil {
					t.Fatalf("parseAnswer(%v) = %+v, want an error", tc.raw, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseAnswer(%v) = %+v, want %+v", tc.raw, got, tc.want)
			}
		})
	}
}

// Each script is self-contained: the constants it carries are the Go ones
// (buckets, lock_mark and the reasons), and it reads no helper of another
// file.
func TestScriptConstants(t *testing.T) {
	t.Parallel()
	reasons := map[string]throttle.Reason{"concurrency": throttle.ReasonConcurrency, "rate": throttle.ReasonRate,
		"cooldown": throttle.ReasonCooldown, "reserve": throttle.ReasonReserve, "yielded": reasonYielded, "lost": reasonLost, "stale": reasonStale}
	files, err := luaFiles.ReadDir("lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("lua: %v, %v", files, err)
	}
	for _, f := range files {
		src := lua(strings.TrimSuffix(f.Name(), ".lua"))
		if m := regexp.MustCompile(`(?m)^local buckets = (\d+)`).FindStringSubmatch(src); m != nil && m[1] != strconv.Itoa(throttle.BucketsPerWindow) {
			t.Errorf("%s: buckets = %s, want %d", f.Name(), m[1], throttle.BucketsPerWindow)
		}
		if m := regexp.MustCompile(`(?m)^local lock_mark = '([^']*)'`).FindStringSubmatch(src); m != nil && m[1] != lockMark {
			t.Errorf("%s: lock_mark = %q, want %q", f.Name(), m[1], lockMark)
		}
		if m := regexp.MustCompile(`(?m)^local R = \{(.*)\}`).FindStringSubmatch(src); m != nil {
			got := map[string]throttle.Reason{}
			for _, kv := range regexp.MustCompile(`(\w+) = (\d+)`).FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(kv[2])
				got[kv[1]] = throttle.Reason(n)
			}
			if !maps.Equal(got, reasons) {
				t.Errorf("%s: R = %v, want %v", f.Name(), got, reasons)
			}
		}
		for _, name := range []string{"buckets", "lock_mark", "R", "now", "is_lock", "unlock", "slide", "opening"} {
			used := regexp.MustCompile(`\b` + name + `\b[^ =]`).MatchString(src)
			declared := regexp.MustCompile(`(?m)^local (function )?` + name + `\b|^local \w+, ` + name + ` =`).MatchString(src)
			if used && !declared {
				t.Errorf("%s uses %s without declaring it", f.Name(), name)
			}
		}
	}
}

// A grant with Members to a caller that gave up as it came is given back on
// every member's windows: they admit as much as before it.
func TestRedisMembersRefund(t *testing.T) {
	t.Parallel()
	bs, _ := twoProcesses(t)
	b := bs[0]
	ctx := context.Background()
	r := throttle.Request{Key: "refund", Windows: []throttle.Window{{Limit: 2, Period: time.Minute}, {Limit: 5, Period: time.Hour}},
		Members: []string{"a", "b"}}
	res, err := b.attempt(ctx, acquireArgs{r: r, take: true})
	if err != nil || !res.v.OK {
		t.Fatalf("first grant: %+v, %v", res, err)
	}
	b.refundMembers(res.lease, r)
	for i := range 2 {
		if res, err = b.attempt(ctx, acquireArgs{r: r, take: true}); err != nil || !res.v.OK {
			t.Fatalf("grant %d after the refund: %+v, %v", i+1, res, err)
		}
	}
	res, err = b.attempt(ctx, acquireArgs{r: r, take: true})
	if err != nil || res.v.OK || res.v.Reason != throttle.ReasonRate || !slices.Equal(res.v.Members, r.Members) {
		t.Fatalf("third grant after the refund: %+v, %v; want a rate refusal naming both members", res, err)
	}
}
