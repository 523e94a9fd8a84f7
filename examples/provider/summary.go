package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// summary is what the run did, per corp and in total.
type summary struct {
	cfg        config
	corps      []*corpStats
	start, end time.Time
	mock       mock.Stats
	// idle corps whose clients were built, and the heap each holds (a
	// copy in a fleet).
	idle     int
	idleHeap int64
}

// ofBound is what corp cs achieved of its bound, 5 marks in flight at the
// mock's latency: its marks a second (from its first mark to its last)
// over 5/latency.
func (s *summary) ofBound(cs *corpStats) float64 {
	took := cs.end.Sub(cs.marking).Seconds()
	if took <= 0 || s.cfg.latency <= 0 {
		return 0
	}
	return float64(cs.tagged.Load()) / took / (5 / s.cfg.latency.Seconds())
}

// bounds returns the least and the median of ofBound over the corps.
func (s *summary) bounds() (least, median float64) {
	if len(s.corps) == 0 {
		return 0, 0
	}
	b := make([]float64, len(s.corps))
	for i, cs := range s.corps {
		b[i] = s.ofBound(cs)
	}
	slices.Sort(b)
	return b[0], b[len(b)/2]
}

// totals adds up the corps.
func (s *summary) totals() (tagged, failed, busy, limited int64) {
	for _, cs := range s.corps {
		tagged += cs.tagged.Load()
		failed += cs.failed.Load()
		busy += cs.busy.Load()
		limited += cs.limited.Load()
	}
	return
}

// ok reports whether every customer was tagged and nothing refused.
func (s *summary) ok() bool {
	tagged, _, busy, limited := s.totals()
	return tagged == int64(s.cfg.corps*s.cfg.customers) && busy == 0 && limited == 0 &&
		s.mock.Refusals[codeBusy] == 0 && s.mock.Refusals[codeLimit] == 0
}

// minimum is the least time the per-IP window allows the marks: the
// mark ipPerMinute+k starts no earlier than a minute after mark k.
func (s *summary) minimum() time.Duration {
	n := s.cfg.corps * s.cfg.customers
	return time.Duration((n-1)/s.cfg.ipPerMinute) * time.Minute
}

// print writes the summary: a line per corp, then the totals.
func (s *summary) print(w io.Writer) {
	for _, cs := range s.corps {
		fmt.Fprintf(w, "corp %s: %d tagged, %d failed, %d refused (45033 %d, 45009 %d) in %s, %.1f%% of 5/latency", cs.id, cs.tagged.Load(), cs.failed.Load(),
			cs.busy.Load()+cs.limited.Load(), cs.busy.Load(), cs.limited.Load(), cs.end.Sub(cs.start).Round(time.Millisecond), 100*s.ofBound(cs))
		if ns := cs.firstSent.Load(); ns != 0 {
			fmt.Fprintf(w, ", first mark_tag sent %s after marking began", time.Unix(0, ns).Sub(cs.marking).Round(time.Millisecond))
		}
		fmt.Fprintln(w)
		if err := cs.firstErr.Load(); err != nil {
			fmt.Fprintf(w, "  first failure: %v\n", *err)
		}
	}
	tagged, failed, busy, limited := s.totals()
	took := s.end.Sub(s.start)
	fmt.Fprintf(w, "total:     %d of %d customers tagged in %d corps, %d failed, %d refused (45033 %d, 45009 %d); %d get_corp_token calls\n",
		tagged, s.cfg.corps*s.cfg.customers, s.cfg.corps, failed, busy+limited, busy, limited, s.mock.Calls[catalog.GetCorpToken.Path()])
	fmt.Fprintf(w, "time:      %s, %.0f marks a second; the per-IP window of %d a minute allows %s at best\n",
		took.Round(time.Millisecond), float64(tagged)/max(took.Seconds(), 1e-9), s.cfg.ipPerMinute, s.minimum())
	least, median := s.bounds()
	fmt.Fprintf(w, "bound:     each corp's marks a second over 5/latency (%s): least %.1f%%, median %.1f%%\n", s.cfg.latency, 100*least, 100*median)
	if s.idle > 0 {
		fmt.Fprintf(w, "idle:      %d idle corps' clients built, %d bytes of heap each\n", s.idle, s.idleHeap)
	}
	if s.cfg.baseURL != "" {
		fmt.Fprintf(w, "unix:      %d.%09d %d.%09d (start and end of the tagging, unix seconds, for scripts)\n",
			s.start.Unix(), s.start.Nanosecond(), s.end.Unix(), s.end.Nanosecond())
	}
	fmt.Fprintf(w, "mock:      45033 answered %d, 45009 answered %d; mark_tag most in flight per corp %d\n",
		s.mock.Refusals[codeBusy], s.mock.Refusals[codeLimit], s.mock.MaxInFlight[markPath])
}
