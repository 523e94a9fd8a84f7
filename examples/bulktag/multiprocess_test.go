package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
)

// childEnv carries a child's command line (a JSON array): the test binary
// re-executes itself as copies of bulktag, signals included.
const childEnv = "BULKTAG_TEST_CHILD"

func TestMain(m *testing.M) {
	if arg := os.Getenv(childEnv); arg != "" {
		var args []string
		if err := json.Unmarshal([]byte(arg), &args); err != nil {
			fmt.Fprintln(os.Stderr, "child args:", err)
			os.Exit(exitSetup)
		}
		os.Exit(bulktag(args, os.Stdout, os.Stderr))
	}
	os.Exit(redistest.MainWaiting(m, 8))
}

// fleet is a mock WeCom served over HTTP and copies of bulktag sharing it
// and one Redis.
type fleet struct {
	mock *mock.Server
	args []string // every copy's flags
}

func newFleet(t *testing.T, latency time.Duration, customers int) *fleet {
	t.Helper()
	rdb := redistest.Single(t)
	m, url := serveMock(t, latency, "wwfleet", "fleet-secret")
	return &fleet{mock: m, args: []string{
		"-base-url", url, "-corp-id", "wwfleet", "-secret", "fleet-secret", "-user-id", "zhangsan",
		"-redis", os.Getenv(redistest.EnvAddr), "-redis-prefix", redistest.Prefix(t, rdb),
		"-customers", fmt.Sprint(customers), "-repeat", "2", "-workers", "16",
	}}
}

// child is one running copy of bulktag.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

// start launches one copy with args.
func start(t *testing.T, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	arg, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, "-test.run=^$"), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	// The copies inherit GORACE, which TestMain set so that a copy under
	// -race does not sleep a second at exit (waiting.SkipExitSleep).
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(arg))
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	return c
}

// wait waits for the copy to exit and returns its exit status.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	err := c.cmd.Wait()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatal(err)
	}
	return c.cmd.ProcessState.ExitCode()
}

// checkMock asserts what the fleet promises: the mock never saw more than 5
// marks at once, never answered 45033 or 45009, and issued one token.
func (f *fleet) checkMock(t *testing.T) {
	t.Helper()
	s := f.mock.Stats()
	if n := s.MaxInFlight[markPath]; n > 5 || n == 0 {
		t.Errorf("mark_tag max in flight at the mock = %d, want 1..5", n)
	}
	if n := s.Refusals[wecom.CodeConcurrencyLimited] + s.Refusals[wecom.CodeFrequencyLimited]; n != 0 {
		t.Errorf("the mock answered 45033/45009 %d times: %v", n, s.Refusals)
	}
	if s.GetTokenCalls != 1 {
		t.Errorf("%d gettoken calls for the fleet, want 1", s.GetTokenCalls)
	}
}

// Three processes mark the same customers through one Redis: fleet-wide
// limits, per customer included, and one shared token.
func TestThreeProcessesShareTheBudget(t *testing.T) {
	t.Parallel() // a mock and a key prefix of its own
	f := newFleet(t, 5*time.Millisecond, 150)
	var copies []*child
	for range 3 {
		copies = append(copies, start(t, f.args...))
	}
	for i, c := range copies {
		if code := c.wait(t); code != exitOK {
			t.Errorf("copy %d: exit status %d\n%s%s", i, code, c.stdout, c.stderr)
		} else if !strings.Contains(c.stdout.String(), "300 requested, 300 done, 0 failed, 0 not started") {
			t.Errorf("copy %d summary:\n%s", i, c.stdout)
		}
	}
	f.checkMock(t)
	if n := f.mock.Stats().MarkCalls; n != 900 {
		t.Errorf("%d marks applied, want 900", n)
	}
}

// A copy killed with SIGKILL while holding leases: the others take its slots
// once their TTL ends, and finish, with no 45033.
func TestKilledProcessSlotsTakenOver(t *testing.T) {
	t.Parallel() // a mock and a key prefix of its own
	f := newFleet(t, 20*time.Millisecond, 150)
	args := append(f.args, "-lease-ttl", "2s")
	victim := start(t, args...)
	// Let the victim take slots before the others start.
	waitFor(t, "the victim's first marks", func() bool { return f.mock.Stats().MarkCalls >= 20 })
	survivors := []*child{start(t, args...), start(t, args...)}
	time.Sleep(100 * time.Millisecond)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.wait(t)
	for i, c := range survivors {
		if code := c.wait(t); code != exitOK {
			t.Errorf("survivor %d: exit status %d\n%s%s", i, code, c.stdout, c.stderr)
		}
	}
	f.checkMock(t)
}
