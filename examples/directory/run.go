package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// header is the CSV's first row.
var header = []string{"userid", "name", "departments", "main_department", "position", "mobile", "email", "gender", "status"}

// summary is what an export did.
type summary struct {
	departments, listed int
	written, failed     int
	errs                []error
	// the user/get phase: from the first call's start to the last's end.
	getStart, getEnd time.Time
}

// export writes the directory to w through a client on rt (nil: the
// default transport): the departments are counted, the members listed with
// user/list_id and read with user/get by cfg.workers goroutines, a row
// each as they come. An error before the members are read ends it with a
// nil summary.
func export(ctx context.Context, cfg config, rt http.RoundTripper, w io.Writer, stderr io.Writer) (*summary, error) {
	opts := []wecom.Option{wecom.WithBaseURL(cfg.baseURL), wecom.WithStallObserver(stalls(stderr))}
	if rt != nil {
		opts = append(opts, wecom.WithTransport(rt))
	}
	if cfg.perMinute > 0 {
		opts = append(opts, wecom.WithLimits(catalog.UserGet.Path(), wecom.Limits{PerMinute: cfg.perMinute}))
	}
	c, err := wecom.New(cfg.corpID, cfg.secret, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Drain(context.WithoutCancel(ctx))
	depts, err := c.Departments.List(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the departments: %w", err)
	}
	var ids []string
	for u, err := range c.Users.IDs(ctx, 0) {
		if err != nil {
			return nil, fmt.Errorf("listing the members: %w", err)
		}
		ids = append(ids, u.UserID)
	}
	sum := &summary{departments: len(depts), listed: len(ids)}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		next = make(chan string)
		wg   sync.WaitGroup
		werr error
	)
	stopProgress := progress(cfg.progress, stderr, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("user/get: %d of %d done", sum.written+sum.failed, len(ids))
	})
	sum.getStart = time.Now()
	for range cfg.workers {
		wg.Go(func() {
			for id := range next {
				m, err := c.Users.Get(ctx, id)
				mu.Lock()
				switch {
				case err != nil:
					sum.failed++
					sum.errs = append(sum.errs, err)
				case werr == nil:
					if werr = cw.Write(row(m)); werr == nil {
						sum.written++
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		select {
		case next <- id:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(next)
	wg.Wait()
	sum.getEnd = time.Now()
	stopProgress()
	cw.Flush()
	if werr == nil {
		werr = cw.Error()
	}
	if werr == nil {
		werr = ctx.Err()
	}
	return sum, werr
}

// row is a member's CSV row; a field WeCom withheld is empty.
func row(m *wecom.Member) []string {
	depts := make([]string, len(m.Departments))
	for i, d := range m.Departments {
		depts[i] = strconv.Itoa(d)
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	gender := ""
	if m.Gender != nil {
		gender = string(*m.Gender)
	}
	return []string{m.UserID, m.Name, strings.Join(depts, ";"), strconv.Itoa(m.MainDepartment), m.Position,
		deref(m.Mobile), deref(m.Email), gender, strconv.Itoa(m.Status)}
}

// stalls tells on stderr, once per limit and reason, that calls wait for
// a window.
func stalls(stderr io.Writer) wecom.StallObserver {
	var mu sync.Mutex
	told := map[string]bool{}
	return func(_ context.Context, path string, s throttle.Stall) {
		mu.Lock()
		defer mu.Unlock()
		if k := s.Key + s.Reason.String(); !told[k] {
			told[k] = true
			until := "its end"
			if !s.Until.IsZero() {
				until = s.Until.Format("15:04:05")
			}
			fmt.Fprintf(stderr, "directory: %s waits for its limit (%s) until %s\n", path, s.Reason, until)
		}
	}
}

// progress shows line() on stderr every period until the returned stop.
func progress(period time.Duration, stderr io.Writer, line func() string) (stop func()) {
	if period <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintln(stderr, "directory:", line())
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// catalogLimit is WeCom's limit of user/get calls per corp in the window
// the catalog names rule (catalog.RulePerMinute, RulePerHour), 0 if none.
func catalogLimit(rule string) int {
	e, _ := catalog.Lookup(catalog.UserGet.Path())
	for _, r := range e.Rules {
		if r.Name == rule {
			return r.Limit
		}
	}
	return 0
}

// bound is the least time a minute window of w calls (0: none) allows n
// user/get calls to take, from the first start to the last end, at
// workers calls in flight of latency each (see the package doc).
func bound(n, workers, w int, latency time.Duration) time.Duration {
	perCall := latency / time.Duration(workers) // the pace of workers calls in flight
	if w == 0 || n <= w {
		return time.Duration(n)*perCall + latency - perCall
	}
	return time.Minute + time.Duration(n-w)*perCall + latency - perCall
}

// ok reports a run that wrote every member listed and, on the embedded
// mock (srv), answered no 45009.
func (s *summary) ok(srv *mock.Server) bool {
	if s.failed > 0 || s.written != s.listed {
		return false
	}
	return srv == nil || srv.Stats().Refusals[wecom.CodeFrequencyLimited] == 0
}

func (s *summary) print(w io.Writer, cfg config, srv *mock.Server) {
	fmt.Fprintf(w, "members:    %d written to %s, %d failed (%d userids from user/list_id, %d departments)\n",
		s.written, cfg.out, s.failed, s.listed, s.departments)
	took := s.getEnd.Sub(s.getStart)
	n := s.written + s.failed
	if srv != nil && n > 0 {
		b := bound(n, cfg.workers, cfg.minuteLimit(), cfg.latency)
		fmt.Fprintf(w, "user/get:   %d calls in %s; the window allows %s at best (%d a minute, %d at a time, %s each): %.1f%%\n",
			n, took.Round(100*time.Millisecond), b.Round(100*time.Millisecond), cfg.minuteLimit(), cfg.workers, cfg.latency, 100*b.Seconds()/took.Seconds())
		st := srv.Stats()
		fmt.Fprintf(w, "mock:       45009 answered %d, calls user/get %d, user/list_id %d\n",
			st.Refusals[wecom.CodeFrequencyLimited], st.Calls[catalog.UserGet.Path()], st.Calls[catalog.UserListID.Path()])
	} else {
		fmt.Fprintf(w, "user/get:   %d calls in %s\n", n, took.Round(100*time.Millisecond))
	}
	for i, err := range s.errs {
		if i == 5 {
			fmt.Fprintf(w, "... and %d more errors\n", len(s.errs)-5)
			break
		}
		fmt.Fprintln(w, "error:     ", err)
	}
}
