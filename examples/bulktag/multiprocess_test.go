package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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

// childEnv carries a child's config: the test binary re-executes itself as
// copies of bulktag.
const childEnv = "BULKTAG_TEST_CHILD"

func TestMain(m *testing.M) {
	if arg := os.Getenv(childEnv); arg != "" {
		var cfg config
		if err := json.Unmarshal([]byte(arg), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, "child config:", err)
			os.Exit(2)
		}
		ok, err := run(context.Background(), cfg, os.Stdout, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bulktag:", err)
			os.Exit(2)
		}
		if !ok {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// MarshalJSON makes config travel to children (its fields are unexported).
func (c config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"baseURL": c.baseURL, "corpID": c.corpID, "secret": c.secret, "userID": c.userID,
		"redis": c.redis, "redisPrefix": c.redisPrefix, "customers": c.customers, "repeat": c.repeat,
		"workers": c.workers, "latency": c.latency, "leaseTTL": c.leaseTTL,
	})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *config) UnmarshalJSON(b []byte) error {
	var m struct {
		BaseURL, CorpID, Secret, UserID, Redis, RedisPrefix string
		Customers, Repeat, Workers                          int
		Latency, LeaseTTL                                   time.Duration
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = config{baseURL: m.BaseURL, corpID: m.CorpID, secret: m.Secret, userID: m.UserID, redis: m.Redis,
		redisPrefix: m.RedisPrefix, customers: m.Customers, repeat: m.Repeat, workers: m.Workers,
		latency: m.Latency, leaseTTL: m.LeaseTTL}
	return nil
}

// fleet is a mock WeCom served over HTTP and copies of bulktag sharing it
// and one Redis.
type fleet struct {
	mock *mock.Server
	cfg  config
}

func newFleet(t *testing.T, latency time.Duration) *fleet {
	t.Helper()
	rdb := redistest.Single(t)
	m, err := mock.New(mock.Config{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	m.AddApp("wwfleet", "fleet-secret")
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return &fleet{mock: m, cfg: config{
		baseURL: srv.URL, corpID: "wwfleet", secret: "fleet-secret", userID: "zhangsan",
		redis: os.Getenv("REDIS_ADDR"), redisPrefix: redistest.Prefix(t, rdb),
		customers: 150, repeat: 2, workers: 16,
	}}
}

// start launches one copy.
func (f *fleet) start(t *testing.T, cfg config) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	arg, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(arg))
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, out
}

// checkMock asserts what the fleet promises: the mock never saw more than 5
// marks at once, never answered 45033 or 45009, and issued one token.
func (f *fleet) checkMock(t *testing.T) {
	t.Helper()
	s := f.mock.Stats()
	if n := s.MaxInFlight["/cgi-bin/externalcontact/mark_tag"]; n > 5 || n == 0 {
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
	f := newFleet(t, 5*time.Millisecond)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 3 {
		cmd, out := f.start(t, f.cfg)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("copy %d: %v\n%s", i, err, outs[i])
		} else if !strings.Contains(outs[i].String(), "300 requested, 300 done, 300 ok, 0 failed") {
			t.Errorf("copy %d summary:\n%s", i, outs[i])
		}
	}
	f.checkMock(t)
	if n := f.mock.MarkCalls(); n != 900 {
		t.Errorf("%d marks applied, want 900", n)
	}
}

// A copy killed with SIGKILL while holding leases: the others take its slots
// once their TTL ends, and finish, with no 45033.
func TestKilledProcessSlotsTakenOver(t *testing.T) {
	f := newFleet(t, 20*time.Millisecond)
	cfg := f.cfg
	cfg.leaseTTL = 2 * time.Second
	victim, _ := f.start(t, cfg)
	// Let the victim take slots before the others start.
	deadline := time.Now().Add(60 * time.Second)
	for f.mock.MarkCalls() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd, out := f.start(t, cfg)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	time.Sleep(100 * time.Millisecond)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("survivor %d: %v\n%s", i, err, outs[i])
		}
	}
	f.checkMock(t)
}
