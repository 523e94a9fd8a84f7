package mock

import (
	"math"
	"testing"
	"time"
)

// Service times are drawn, not slept, here: their spread is checked without
// a clock.
func TestServiceTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		latency, jitter time.Duration
		setLatency      time.Duration // after New, if not 0
	}{
		{"fixed", 20 * time.Millisecond, 0, 0},
		{"spread", 20 * time.Millisecond, 5 * time.Millisecond, 0},
		{"spread to zero", 20 * time.Millisecond, 20 * time.Millisecond, 0},
		{"latency lowered under the jitter", 20 * time.Millisecond, 10 * time.Millisecond, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			draw := func() []time.Duration {
				t.Helper()
				s, err := New(Config{Latency: tt.latency, LatencyJitter: tt.jitter, Seed: 42})
				if err != nil {
					t.Fatal(err)
				}
				if tt.setLatency != 0 {
					s.SetLatency(tt.setLatency)
				}
				ds := make([]time.Duration, 20000)
				s.mu.Lock()
				defer s.mu.Unlock()
				for i := range ds {
					ds[i] = s.serviceTime()
				}
				return ds
			}
			ds := draw()
			latency := tt.latency
			if tt.setLatency != 0 {
				latency = tt.setLatency
			}
			lo, hi := max(latency-tt.jitter, 0), latency+tt.jitter
			var sum float64
			below, above := 0, 0
			for _, d := range ds {
				if d < lo || d > hi {
					t.Fatalf("service time %v outside [%v, %v]", d, lo, hi)
				}
				sum += float64(d)
				if d < latency {
					below++
				} else if d > latency {
					above++
				}
			}
			if tt.jitter == 0 {
				if below+above != 0 {
					t.Fatalf("%d service times differ from %v without jitter", below+above, latency)
				}
				return
			}
			// Uniform on [latency-jitter, latency+jitter], clamped at 0.
			a, b := float64(latency-tt.jitter), float64(latency+tt.jitter)
			want := (b*b - math.Pow(max(a, 0), 2)) / (2 * (b - a))
			sd := (b - a) / math.Sqrt(12) / math.Sqrt(float64(len(ds)))
			if mean := sum / float64(len(ds)); math.Abs(mean-want) > 5*sd {
				t.Fatalf("mean service time %v, want %v", time.Duration(mean), time.Duration(want))
			}
			if below < len(ds)/4 || above < len(ds)/4 {
				t.Fatalf("%d below and %d above %v: not spread around it", below, above, latency)
			}
			again := draw() // the same seed draws the same times
			for i := range ds {
				if ds[i] != again[i] {
					t.Fatalf("draw %d: %v, then %v with the same seed", i, ds[i], again[i])
				}
			}
		})
	}
}
