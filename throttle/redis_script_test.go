package throttle

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"
)

// The acquire script's answers, as go-redis hands them over: what each
// becomes, and every shape that is not the script's refused, never
// guessed at.
func TestParseAnswer(t *testing.T) {
	t.Parallel()
	i := func(v ...int64) []any {
		out := make([]any, len(v))
		for j, x := range v {
			out[j] = x
		}
		return out
	}
	fills := []any{int64(7), int64(120)}
	with := func(head []any, epoch string, fills []any) []any { return append(head, epoch, fills) }
	for _, tc := range []struct {
		name string
		raw  []any
		want answer // ignored when bad
		bad  bool
	}{
		{"grant", with(i(0, 1000, 0, 1, 2000, 3, 0, 0, 0), "", []any{}),
			answer{now: 1000, held: true, expires: 2000, n: 3}, false},
		{"grant, a block, others waiting", with(i(0, 1000, 0, 1, 2000, 1, 40, 1600, 1), "", []any{}),
			answer{now: 1000, held: true, expires: 2000, n: 1, blk: 40, blockAt: 1600, others: true}, false},
		{"grant, epoch, fills", with(i(0, 1000, 0, 0, 0, 1, 0, 0, 0), "1000:ab", fills),
			answer{now: 1000, n: 1, epoch: "1000:ab", fills: []int64{7, 120}}, false},
		{"refusal", with(i(2, 1000, 5000, 1, 0, 0, 0, 0, 0), "", []any{}),
			answer{reason: ReasonRate, now: 1000, at: 5000, held: true}, false},
		{"refusal for a reserve, fills", with(i(7, 1000, 5000, 0, 0, 0, 0, 0, 0), "", fills),
			answer{reason: ReasonReserve, now: 1000, at: 5000, fills: []int64{7, 120}}, false},
		{"lost, epoch", with(i(5, 1000, 0, 0, 0, 0, 0, 0, 0), "9:x", []any{}),
			answer{reason: reasonLost, now: 1000, epoch: "9:x"}, false},
		{"others not a flag", with(i(0, 1000, 0, 0, 0, 1, 0, 0, 2), "", []any{}), answer{}, true},
		{"held not a flag", with(i(0, 1000, 0, 2, 0, 1, 0, 0, 0), "", []any{}), answer{}, true},
		{"no time", with(i(0, 0, 0, 0, 0, 1, 0, 0, 0), "", []any{}), answer{}, true},
		{"too short", i(0, 1000), answer{}, true},
		{"without fills", append(i(0, 1000, 0, 0, 0, 1, 0, 0, 0), ""), answer{}, true},
		{"one element too many", append(with(i(0, 1000, 0, 0, 0, 1, 0, 0, 0), "", []any{}), int64(1)), answer{}, true},
		{"a string for a number", with(append(i(0), "1000", int64(0), int64(0), int64(0), int64(1), int64(0), int64(0), int64(0)), "", []any{}), answer{}, true},
		{"negative count", with(i(0, 1000, 0, 0, 0, -1, 0, 0, 0), "", []any{}), answer{}, true},
		{"epoch not a string", append(i(0, 1000, 0, 0, 0, 1, 0, 0, 0), int64(5), []any{}), answer{}, true},
		{"fills not a list", append(i(0, 1000, 0, 0, 0, 1, 0, 0, 0), "", "7"), answer{}, true},
		{"a fill not a number", with(i(2, 1000, 0, 0, 0, 0, 0, 0, 0), "", []any{"7"}), answer{}, true},
		{"a negative fill", with(i(2, 1000, 0, 0, 0, 0, 0, 0, 0), "", []any{int64(-7)}), answer{}, true},
		{"fills before the epoch", append(i(2, 1000, 0, 0, 0, 0, 0, 0, 0), fills, "9:x"), answer{}, true},
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

// A grant with Members to a caller that gave up as it came is given back on
// every member's windows: they admit as much as before it.
func TestRedisMembersRefund(t *testing.T) {
	t.Parallel()
	b := twoProcesses(t)[0]
	ctx := context.Background()
	r := Request{Key: "refund", Windows: []Window{{Limit: 2, Period: time.Minute}, {Limit: 5, Period: time.Hour}},
		Members: []string{"a", "b"}}
	res, err := b.attempt(ctx, acquireArgs{r: r, take: true})
	if err != nil || !res.v.ok {
		t.Fatalf("first grant: %+v, %v", res, err)
	}
	b.refundMembers(res.lease, r)
	for i := range 2 {
		if res, err = b.attempt(ctx, acquireArgs{r: r, take: true}); err != nil || !res.v.ok {
			t.Fatalf("grant %d after the refund: %+v, %v", i+1, res, err)
		}
	}
	res, err = b.attempt(ctx, acquireArgs{r: r, take: true})
	if err != nil || res.v.ok || res.v.reason != ReasonRate || !slices.Equal(res.v.members, r.Members) {
		t.Fatalf("third grant after the refund: %+v, %v; want a rate refusal naming both members", res, err)
	}
}
