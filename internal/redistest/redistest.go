// Package redistest connects tests to real Redis servers: the single node
// named by REDIS_ADDR, the Redis Cluster named by REDIS_CLUSTER_ADDRS, and
// private redis-server processes a test may kill and restart.
//
// When the server a test needs is not configured, the test is skipped with
// a reason saying how to configure it, except in CI (the CI environment
// variable is non-empty), where it fails: in CI nothing skips. .ci/run
// starts the servers and sets both variables.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables read by Single and Cluster.
const (
	// EnvAddr names the single Redis node: host:port.
	EnvAddr = "REDIS_ADDR"
	// EnvClusterAddrs names the nodes of a Redis Cluster, comma-separated
	// host:port pairs (any subset is enough to discover the others).
	EnvClusterAddrs = "REDIS_CLUSTER_ADDRS"
)

const (
	// pingTimeout bounds one PING.
	pingTimeout = 5 * time.Second
	// startTimeout bounds the wait for a started redis-server to answer.
	startTimeout = 10 * time.Second
	// cleanupTimeout bounds the deletion of a test's keys.
	cleanupTimeout = 30 * time.Second
)

// Single returns a client to the Redis named by REDIS_ADDR, closed when the
// test ends. The test is skipped when REDIS_ADDR is unset (and fails in CI),
// and fails when that Redis does not answer PING.
func Single(t testing.TB) redis.UniversalClient {
	t.Helper()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		unavailable(t, EnvAddr+" unset", "set "+EnvAddr+"=host:port to run the tests against real Redis; .ci/run does")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redistest: Redis at %s (%s) does not answer PING: %v", addr, EnvAddr, err)
	}
	return rdb
}

// Cluster returns a client to the Redis Cluster named by
// REDIS_CLUSTER_ADDRS, closed when the test ends. The test is skipped when
// REDIS_CLUSTER_ADDRS is unset (and fails in CI), and fails when any master
// of the cluster does not answer PING.
func Cluster(t testing.TB) redis.UniversalClient {
	t.Helper()
	var addrs []string
	for a := range strings.SplitSeq(os.Getenv(EnvClusterAddrs), ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		unavailable(t, EnvClusterAddrs+" unset",
			"set "+EnvClusterAddrs+"=host:port,host:port,... to run the tests against a real Redis Cluster; .ci/run does")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("master %s: %w", c.Options().Addr, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: Redis Cluster at %s (%s) does not answer PING: %v", strings.Join(addrs, ","), EnvClusterAddrs, err)
	}
	return rdb
}

// unavailable skips the test, or fails it in CI, because what it needs is
// missing.
func unavailable(t testing.TB, what, how string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("redistest: %s in CI: %s", what, how)
	}
	t.Skipf("redistest: SKIPPING, %s: %s", what, how)
}

// Prefix returns a key prefix of the form "wt:<8 random hex>:" unique to the
// test, and deletes every key starting with it when the test ends, on every
// node (every master of a cluster). Keys may carry a hash tag after the
// prefix, as in "wt:abcd1234:{corp}:...". The cleanup must run while rdb is
// still open, which holds when rdb came from Single or Cluster before Prefix
// was called; failing to delete the keys fails the test.
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("redistest: random prefix: %v", err)
	}
	prefix := "wt:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := deletePrefix(ctx, rdb, prefix); err != nil {
			t.Errorf("redistest: deleting the keys under %q: %v", prefix, err)
		}
	})
	return prefix
}

// deletePrefix deletes every key starting with prefix, which must hold no
// glob metacharacter (* ? [ ] \), on every node of rdb: every master of a
// *redis.ClusterClient, every shard of a *redis.Ring.
func deletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if strings.ContainsAny(prefix, `*?[]\`) {
		return fmt.Errorf("redistest: prefix %q holds a glob metacharacter", prefix)
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return deleteOnNode(ctx, n, prefix)
		})
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return deleteOnNode(ctx, n, prefix)
		})
	default:
		return deleteOnNode(ctx, rdb, prefix)
	}
}

// deleteOnNode scans one node for the keys under prefix and deletes them,
// one key per command so that keys of different cluster slots may be mixed.
func deleteOnNode(ctx context.Context, n redis.Cmdable, prefix string) error {
	var cursor uint64
	for {
		keys, next, err := n.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		if len(keys) > 0 {
			cmds, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("unlink: %w", err)
			}
			for _, c := range cmds {
				if err := c.Err(); err != nil {
					return fmt.Errorf("unlink: %w", err)
				}
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// StartServer starts a private redis-server (no persistence, loopback only)
// as a child process of the test on a free port, waits until it answers
// PING and returns its address. restart kills it with SIGKILL and starts it
// again, empty, on the same port, waiting until it answers; stop kills it.
// The server is killed when the test ends. restart and stop must be called
// from the test's goroutine. The test is skipped when redis-server is not on
// PATH (and fails in CI).
func StartServer(t testing.TB) (addr string, restart func(), stop func()) {
	t.Helper()
	s := startServer(t)
	restart = func() {
		t.Helper()
		s.kill()
		if err := s.start(); err != nil {
			t.Fatalf("redistest: restarting redis-server at %s: %v", s.addr, err)
		}
	}
	return s.addr, restart, s.kill
}

// StartPausableServer starts a private redis-server as StartServer does and
// returns its address and pause, which stops it with SIGSTOP, as a Redis
// that hangs: connections stay open and nothing is answered until the
// resume it returns (SIGCONT) is called. The test ends resumed.
func StartPausableServer(t testing.TB) (addr string, pause func() (resume func())) {
	t.Helper()
	s := startServer(t)
	t.Cleanup(func() { s.signal(syscall.SIGCONT) }) // before the kill, which is registered earlier
	pause = func() func() {
		s.signal(syscall.SIGSTOP)
		return func() { s.signal(syscall.SIGCONT) }
	}
	return s.addr, pause
}

// signal sends sig to the running server, if any.
func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// startServer starts a private server (see StartServer), killed when the
// test ends.
func startServer(t testing.TB) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server not on PATH", "install it (Debian: apt-get install redis-server) to run the Redis restart tests; .ci/run does")
	}
	s := &server{bin: bin, dir: t.TempDir()}
	t.Cleanup(s.kill)
	// A free port may be taken by someone else before redis-server binds
	// it: try a few.
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if last = s.start(); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("redistest: starting redis-server: %v", last)
	}
	return s
}

// server is one private redis-server process.
type server struct {
	bin, dir, addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// freePort returns a loopback TCP port nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on s.addr and waits until it answers.
func (s *server) start() error {
	_, port, _ := net.SplitHostPort(s.addr)
	logfile := filepath.Join(s.dir, "redis-"+port+".log")
	cmd := exec.Command(s.bin,
		"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", s.dir, "--logfile", logfile)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := waitPing(s.addr, cmd.Process.Pid, exited); err != nil {
		s.kill()
		log, _ := os.ReadFile(logfile)
		return fmt.Errorf("%w; log:\n%s", err, tail(string(log), 20))
	}
	return nil
}

// kill sends SIGKILL to the running server, if any, and waits for it to end.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// waitPing waits until the Redis at addr answers (INFO, which is a PING
// that also names the process) and is process pid, not some other server
// that took the port first; it fails when exited is closed first or after
// startTimeout.
func waitPing(addr string, pid int, exited <-chan struct{}) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := rdb.Info(ctx, "server").Result()
		if err == nil {
			if !strings.Contains(info, "\nprocess_id:"+strconv.Itoa(pid)+"\r\n") {
				return fmt.Errorf("another server answers at %s", addr)
			}
			return nil
		}
		select {
		case <-exited:
			return errors.New("redis-server exited before answering PING")
		case <-ctx.Done():
			return fmt.Errorf("redis-server at %s did not answer within %s: %v", addr, startTimeout, err)
		case <-tick.C:
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// PassHooks passes dials and pipelines through: embedded in a go-redis
// hook that watches single commands (its own ProcessHook), it completes
// redis.Hook.
type PassHooks struct{}

// DialHook implements redis.Hook: next, unchanged.
func (PassHooks) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook implements redis.Hook: next, unchanged.
func (PassHooks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
