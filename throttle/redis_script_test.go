package throttle

import (
	"slices"
	"testing"
)

// The acquire script's answers, as go-redis hands them over: what each
// becomes, and every shape that is not the script's refused, never
// guessed at.
func TestParseAnswer(t *testing.T) {
	fills := []any{int64(7), int64(120)}
	for _, tc := range []struct {
		name string
		raw  []any
		want answer // ignored when bad
		bad  bool
	}{
		{"grant", []any{int64(1), int64(1000), int64(2000), int64(0), int64(1), int64(3), int64(0), int64(0)},
			answer{head: [5]int64{1, 1000, 2000, 0, 1}, n: 3}, false},
		{"grant, a block, others waiting", []any{int64(1), int64(1000), int64(2000), int64(40), int64(1), int64(1), int64(1), int64(1600)},
			answer{head: [5]int64{1, 1000, 2000, 40, 1}, n: 1, others: true, blockAt: 1600}, false},
		{"grant, epoch, fills", []any{int64(1), int64(1000), int64(0), int64(0), int64(1), int64(1), int64(0), int64(0), "1000:ab", fills},
			answer{head: [5]int64{1, 1000, 0, 0, 1}, n: 1, epoch: "1000:ab", fills: []int64{7, 120}}, false},
		{"grant, fills", []any{int64(1), int64(1000), int64(0), int64(0), int64(1), int64(1), int64(0), int64(0), fills},
			answer{head: [5]int64{1, 1000, 0, 0, 1}, n: 1, fills: []int64{7, 120}}, false},
		{"grant, others not a flag", []any{int64(1), int64(1000), int64(0), int64(0), int64(1), int64(1), int64(2), int64(0)}, answer{}, true},
		{"grant without where its block counts", []any{int64(1), int64(1000), int64(0), int64(0), int64(1), int64(1), int64(0)}, answer{}, true},
		{"refusal", []any{int64(0), int64(2), int64(5000), int64(1000), int64(1)},
			answer{head: [5]int64{0, 2, 5000, 1000, 1}}, false},
		{"refusal, fills", []any{int64(0), int64(7), int64(5000), int64(1000), int64(1), fills},
			answer{head: [5]int64{0, 7, 5000, 1000, 1}, fills: []int64{7, 120}}, false},
		{"refusal, epoch", []any{int64(0), int64(5), int64(0), int64(1000), int64(0), "9:x"},
			answer{head: [5]int64{0, 5, 0, 1000, 0}, epoch: "9:x"}, false},
		{"too short", []any{int64(1), int64(1000)}, answer{}, true},
		{"a string for a number", []any{int64(1), "1000", int64(0), int64(0), int64(1), int64(1)}, answer{}, true},
		{"grant without its count", []any{int64(1), int64(1000), int64(0), int64(0), int64(1)}, answer{}, true},
		{"negative count", []any{int64(1), int64(1000), int64(0), int64(0), int64(1), int64(-1)}, answer{}, true},
		{"empty epoch", []any{int64(0), int64(5), int64(0), int64(1000), int64(0), ""}, answer{}, true},
		{"empty fills", []any{int64(0), int64(2), int64(0), int64(1000), int64(0), []any{}}, answer{}, true},
		{"a fill not a number", []any{int64(0), int64(2), int64(0), int64(1000), int64(0), []any{"7"}}, answer{}, true},
		{"a negative fill", []any{int64(0), int64(2), int64(0), int64(1000), int64(0), []any{int64(-7)}}, answer{}, true},
		{"fills before the epoch", []any{int64(0), int64(5), int64(0), int64(1000), int64(0), fills, "9:x"}, answer{}, true},
		{"one element too many", []any{int64(0), int64(2), int64(0), int64(1000), int64(0), "9:x", fills, int64(1)}, answer{}, true},
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
			if got.head != tc.want.head || got.n != tc.want.n || got.epoch != tc.want.epoch || !slices.Equal(got.fills, tc.want.fills) {
				t.Errorf("parseAnswer(%v) = %+v, want %+v", tc.raw, got, tc.want)
			}
		})
	}
}
