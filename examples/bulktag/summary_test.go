package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// The progress line says what the marks wait for besides slots: on Redis
// while the limiter tells that it does not answer (for two seconds after
// it last told), a limit until its end, and that marks fail once the
// limiter gave up on Redis.
func TestProgressSaysWhatTheMarksWaitFor(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		note func(s *stats)
		at   time.Duration // after the note
		want string        // "" for nothing
	}{
		{"redis down", func(s *stats) {
			s.stalled(context.Background(), "", throttle.Stall{Key: "k", Reason: throttle.ReasonUnavailable})
		},
			time.Second, "waiting on Redis"},
		{"redis down, told long ago", func(s *stats) {
			s.stalled(context.Background(), "", throttle.Stall{Key: "k", Reason: throttle.ReasonUnavailable})
		}, 3 * time.Second, ""},
		{"rate window", func(s *stats) {
			s.stalled(context.Background(), "", throttle.Stall{Key: "k", Reason: throttle.ReasonRate, Until: now.Add(time.Hour)})
		}, time.Second, "waiting for a full rate window until"},
		{"redis gone past the bound", func(s *stats) { s.fail(fmt.Errorf("mark: %w", throttle.ErrUnavailable)) },
			time.Second, "has not answered for too long: marks fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStats()
			tc.note(s)
			w := s.waiting.Load()
			w.noted = now // the note's own time, for the test's clock
			got := s.waitingFor(now.Add(tc.at))
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("progress after %s: %q, want %q", tc.at, got, tc.want)
			}
		})
	}
}
