package main

import (
	"fmt"
	"io"
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
		fmt.Fprintf(w, "corp %s: %d tagged, %d failed, %d refused (45033 %d, 45009 %d) in %s\n", cs.id, cs.tagged.Load(), cs.failed.Load(),
			cs.busy.Load()+cs.limited.Load(), cs.busy.Load(), cs.limited.Load(), cs.end.Sub(cs.start).Round(time.Millisecond))
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
	fmt.Fprintf(w, "mock:      45033 answered %d, 45009 answered %d; mark_tag most in flight per corp %d\n",
		s.mock.Refusals[codeBusy], s.mock.Refusals[codeLimit], s.mock.MaxInFlight[markPath])
}
