package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
)

const listPath = "/cgi-bin/externalcontact/get_corp_tag_list"

// One of three copies sharing Redis gets SIGINT mid-run: it starts no new
// mark, lets (or, with -drain 0, does not let) its calls in flight end,
// prints a summary that accounts for every mark with some not started, and
// exits 3; the other two finish all their marks; and the mock never answers
// 45033 or 45009 over the whole run. With -drain 0 the calls in flight are
// cancelled at once, so the copies that go on are safe only if the SDK keeps
// the slots of a call that was sent until WeCom answers it (issue 8 §1).
func TestInterruptedCopyCollidesWithNoOne(t *testing.T) {
	t.Parallel() // its fleets wait on the mock's latency, as the other tests' do
	for _, tc := range []struct {
		latency   time.Duration
		drain     string
		customers int // per copy, each marked twice
	}{
		{20 * time.Millisecond, "5s", 150},
		{20 * time.Millisecond, "0s", 150},
		{200 * time.Millisecond, "5s", 20},
		{200 * time.Millisecond, "0s", 20},
	} {
		t.Run(fmt.Sprintf("latency %s drain %s", tc.latency, tc.drain), func(t *testing.T) {
			t.Parallel() // fleets of their own: a mock and a key prefix each
			f := newFleet(t, tc.latency, tc.customers)
			// 32 workers, the default, as in the runs.
			args := append(f.args, "-lease-ttl", "2s", "-drain", tc.drain, "-workers", "32", "-progress", "100ms")
			// The victim starts first and is in its stride, holding slots, when
			// the other two join: once they are waiting for slots too, it
			// gets SIGINT.
			// The victim has four times the survivors' customers: however
			// slowly a loaded machine starts the survivors, it still has
			// marks not started when the signal comes.
			victim := start(t, append(args, "-customers", fmt.Sprint(4*tc.customers))...)
			waitFor(t, "the victim's first marks", func() bool { return marked(victim.stderr.String()) >= 5 })
			survivors := []*child{start(t, args...), start(t, args...)}
			waitFor(t, "the others' tag lookups", func() bool { return f.mock.Stats().Calls[listPath] >= 3 })
			time.Sleep(5 * tc.latency) // a trigger, not an assertion: let them queue
			if err := victim.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := victim.wait(t); code != exitStopped {
				t.Errorf("interrupted copy: exit status %d, want %d\n%s%s", code, exitStopped, victim.stdout, victim.stderr)
			}
			c := parseSummary(t, victim.stdout.String())
			if c.requested != 8*tc.customers || c.notStarted == 0 {
				t.Errorf("interrupted copy: %+v, want %d requested and some not started", c, 8*tc.customers)
			}
			if !strings.Contains(victim.stdout.String(), "stopped:    by interrupt") {
				t.Errorf("interrupted copy's summary does not say it was stopped:\n%s", victim.stdout)
			}
			for i, s := range survivors {
				if code := s.wait(t); code != exitOK {
					t.Errorf("survivor %d: exit status %d\n%s%s", i, code, s.stdout, s.stderr)
				}
				if c := parseSummary(t, s.stdout.String()); c.done != 2*tc.customers {
					t.Errorf("survivor %d: %+v, want all %d done", i, c, 2*tc.customers)
				}
			}
			st := f.mock.Stats()
			t.Logf("interrupted copy: %+v; mock: 45033 answered %d, 45009 answered %d, max in flight %d, marks applied %d",
				c, st.Refusals[wecom.CodeConcurrencyLimited], st.Refusals[wecom.CodeFrequencyLimited], st.MaxInFlight[markPath], st.MarkCalls)
			f.checkMock(t)
		})
	}
}

// A second signal while the first one's drain waits for slow calls: the
// copy exits at once with 130, a note on stderr and no summary.
func TestSecondSignalAborts(t *testing.T) {
	t.Parallel() // a mock and a key prefix of its own
	m, url := serveMock(t, time.Second, "wwabort", "abort-secret")
	c := start(t, "-base-url", url, "-corp-id", "wwabort", "-secret", "abort-secret",
		"-customers", "50", "-workers", "8", "-drain", "1m")
	waitFor(t, "a mark in flight", func() bool { return m.Stats().Calls[markPath] >= 1 })
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stop", func() bool { return strings.Contains(c.stderr.String(), "bulktag: stopping:") })
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(t); code != exitAborted {
		t.Errorf("exit status %d, want %d\n%s%s", code, exitAborted, c.stdout, c.stderr)
	}
	if !strings.Contains(c.stderr.String(), "bulktag: second signal (interrupt): aborting now") {
		t.Errorf("no note on stderr:\n%s", c.stderr)
	}
	if strings.Contains(c.stdout.String(), "marks:") {
		t.Errorf("an aborted copy printed a summary:\n%s", c.stdout)
	}
}

// marked reads the last progress line ("marked N/M") a copy wrote on stderr.
func marked(stderr string) int {
	i := strings.LastIndex(stderr, "marked ")
	if i < 0 {
		return 0
	}
	var n int
	_, _ = fmt.Sscanf(stderr[i:], "marked %d/", &n)
	return n
}
