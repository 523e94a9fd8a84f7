package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
)

// The main job end to end on the embedded mock: every mark succeeds and the
// mock never answers 45033 or 45009.
func TestBulkTagOnEmbeddedMock(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := config{corpID: "wwtest", secret: "s", userID: "zhangsan", customers: 200, repeat: 3, workers: 24, latency: 2 * time.Millisecond, drain: time.Second}
	code, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitOK {
		t.Fatalf("run = %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"600 requested, 600 done, 0 failed, 0 not started", "max in flight 5,", "45033 answered 0, 45009 answered 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "stopped:") {
		t.Errorf("a run that was not stopped says it was:\n%s", out.String())
	}
	// Read by a person: progress ends at 100% on a line of its own (stderr is
	// no terminal here, so there is no carriage return), the latency says it
	// includes the wait for a slot, and times are a clock's, not unix seconds
	// (which stay on a line of their own for scripts).
	if strings.Contains(errOut.String(), "\r") {
		t.Errorf("progress on a non-terminal rewrites its line: %q", errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "marked 600/600 (100%, ") {
		t.Errorf("last progress line %q, want the 100%% one", last)
	}
	for _, want := range []string{"the wait for a free slot included", "(marking from ", "unix:       "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// Copies sharing Redis show the fleet's combined count and rate: the copy
// that ends last counts every copy's marks.
func TestBulkTagFleetRate(t *testing.T) {
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	cfg := config{corpID: "wwfleetrate", secret: "s", userID: "zhangsan", customers: 150, repeat: 1, workers: 8,
		latency: 2 * time.Millisecond, drain: time.Second, redis: os.Getenv(redistest.EnvAddr), redisPrefix: prefix}
	outs := make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			var errOut bytes.Buffer
			if code, err := run(context.Background(), cfg, &outs[i], &errOut); err != nil || code != exitOK {
				t.Errorf("copy %d: %d, %v\n%s", i, code, err, outs[i].String())
			}
		})
	}
	wg.Wait()
	most := int64(0)
	for i := range outs {
		var n int64
		line := outs[i].String()[strings.Index(outs[i].String(), "fleet:"):]
		if _, err := fmt.Sscanf(line, "fleet: %d marks", &n); err != nil {
			t.Fatalf("copy %d: no fleet line: %v\n%s", i, err, outs[i].String())
		}
		most = max(most, n)
	}
	if most != 300 {
		t.Errorf("the fleet counted %d marks at most, want both copies' 300", most)
	}
}

func TestBulkTagRejectsBadFlags(t *testing.T) {
	t.Parallel() // one case waits for a Redis that is not there
	for _, args := range [][]string{
		{"-customers", "0"},
		{"-workers", "-1"},
		{"-drain", "-1s"},
		{"-no-such-flag"},
		{"stray"},
		{"-customers", "1", "-redis", "127.0.0.1:1"}, // nothing listens there
	} {
		noSignals := make(chan os.Signal)
		if code := cli(args, noSignals, &bytes.Buffer{}, &bytes.Buffer{}, func(int) { t.Error("exit called") }); code != exitSetup {
			t.Errorf("cli(%q) = %d, want %d", args, code, exitSetup)
		}
	}
}

// The first signal stops, the second aborts, later ones are not read.
func TestWatchSignals(t *testing.T) {
	for _, tc := range []struct{ signals, stops, aborts int }{{0, 0, 0}, {1, 1, 0}, {2, 1, 1}, {3, 1, 1}} {
		sig := make(chan os.Signal, 3)
		for range tc.signals {
			sig <- syscall.SIGINT
		}
		close(sig)
		var stops, aborts int
		watchSignals(sig, func(os.Signal) { stops++ }, func(os.Signal) { aborts++ })
		if stops != tc.stops || aborts != tc.aborts {
			t.Errorf("%d signals: %d stops, %d aborts; want %d, %d", tc.signals, stops, aborts, tc.stops, tc.aborts)
		}
	}
}

// summaryCounts reads the first line of the summary.
type summaryCounts struct{ requested, done, failed, notStarted int }

func parseSummary(t *testing.T, out string) summaryCounts {
	t.Helper()
	for line := range strings.Lines(out) {
		var c summaryCounts
		if _, err := fmt.Sscanf(line, "marks: %d requested, %d done, %d failed, %d not started", &c.requested, &c.done, &c.failed, &c.notStarted); err == nil {
			if c.done+c.failed+c.notStarted != c.requested {
				t.Errorf("done %d + failed %d + not started %d != requested %d", c.done, c.failed, c.notStarted, c.requested)
			}
			return c
		}
	}
	t.Fatalf("no marks line in the summary:\n%s", out)
	return summaryCounts{}
}

// syncBuffer is a bytes.Buffer that a running process may write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveMock serves a mock WeCom over HTTP for one test.
func serveMock(t *testing.T, latency time.Duration, corpID, secret string) (*mock.Server, string) {
	t.Helper()
	m, err := mock.New(mock.Config{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	m.AddApp(corpID, secret)
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// waitFor polls cond until it holds; it fails the test after a generous
// guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A first signal, sent through cli's signal seam: no mark starts after it,
// the marks in flight end (or are cancelled when the drain runs out), and
// the summary accounts for every mark.
func TestFirstSignalStopsGracefully(t *testing.T) {
	t.Parallel() // a mock and a key prefix of its own
	for _, tc := range []struct {
		name                string
		latency, drain      time.Duration
		customers, workers  int
		signalWhen          func(mock.Stats) bool
		wantCode            int
		wantCutShort        bool // calls cancelled when the drain ran out
		wantNotStartedAbove int
	}{
		{"drain lets the marks in flight end", 20 * time.Millisecond, 5 * time.Second, 300, 8,
			func(s mock.Stats) bool { return s.MarkCalls >= 20 }, exitStopped, false, 0},
		{"drain runs out", time.Second, 0, 50, 8,
			func(s mock.Stats) bool { return s.Calls[markPath] >= 5 }, exitStopped, true, 0},
		{"signal after the last mark started", 300 * time.Millisecond, 5 * time.Second, 5, 5,
			func(s mock.Stats) bool { return s.Calls[markPath] >= 5 }, exitOK, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, url := serveMock(t, tc.latency, "wwstop", "stop-secret")
			sig := make(chan os.Signal, 2)
			go func() {
				deadline := time.Now().Add(60 * time.Second)
				for !tc.signalWhen(m.Stats()) && time.Now().Before(deadline) {
					time.Sleep(2 * time.Millisecond)
				}
				sig <- syscall.SIGINT
			}()
			var out, errOut syncBuffer
			args := []string{"-base-url", url, "-corp-id", "wwstop", "-secret", "stop-secret",
				"-customers", fmt.Sprint(tc.customers), "-workers", fmt.Sprint(tc.workers), "-drain", tc.drain.String()}
			code := cli(args, sig, &out, &errOut, func(c int) { t.Errorf("exit(%d) called on one signal", c) })
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d\n%s\n%s", code, tc.wantCode, out.String(), errOut.String())
			}
			c := parseSummary(t, out.String())
			if c.requested != tc.customers || c.notStarted <= tc.wantNotStartedAbove {
				t.Errorf("%+v: want %d requested, more than %d not started", c, tc.customers, tc.wantNotStartedAbove)
			}
			if cut := c.failed > 0; cut != tc.wantCutShort || cut != strings.Contains(out.String(), "failures:   cancelled:") {
				t.Errorf("%d failed, want cancelled marks: %v\n%s", c.failed, tc.wantCutShort, out.String())
			}
			if tc.wantCode == exitStopped && !strings.Contains(out.String(), "stopped:    by interrupt") {
				t.Errorf("the summary does not say the run was stopped:\n%s", out.String())
			}
			s := m.Stats()
			if !tc.wantCutShort && s.MarkCalls != c.done {
				t.Errorf("the mock applied %d marks, the summary says %d done", s.MarkCalls, c.done)
			}
			if n := s.Refusals[wecom.CodeConcurrencyLimited] + s.Refusals[wecom.CodeFrequencyLimited]; n != 0 {
				t.Errorf("the mock answered 45033/45009 %d times: %v", n, s.Refusals)
			}
		})
	}
}
