package redistest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/waiting"
)

// Main runs a package's tests (call it from TestMain) with the Redis servers
// they need. When REDIS_ADDR is unset it starts a private single node, and
// when REDIS_CLUSTER_ADDRS is unset a private 3-master cluster, on free
// loopback ports (no persistence), sets the variables for the tests, and
// stops the servers when the tests end. Without redis-server on PATH nothing
// is started and the Redis tests skip (or fail in CI); Main says so on one
// line of stderr, even without -v. Before anything, it spares a binary
// built with -race the race runtime's sleep at exit (waiting.SkipExitSleep).
// It returns m.Run's exit code.
func Main(m *testing.M) int {
	waiting.SkipExitSleep()
	return mainWith(m.Run, os.Stderr)
}

// MainWaiting is Main for a package whose parallel tests wait rather than
// use the CPU: it lets n of them run at once (see package waiting).
func MainWaiting(m *testing.M, n int) int {
	waiting.Bound(n)
	return Main(m)
}

// mainWith is Main with the test run and the notice's writer as seams.
func mainWith(run func() int, notice io.Writer) int {
	needSingle, needCluster := os.Getenv(EnvAddr) == "", os.Getenv(EnvClusterAddrs) == ""
	if !needSingle && !needCluster {
		return run()
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		fmt.Fprintf(notice, "redistest: %s/%s unset and no redis-server on PATH: the Redis tests of this package skip\n", EnvAddr, EnvClusterAddrs)
		return run()
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		fmt.Fprintf(notice, "redistest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	var started []*node
	defer func() {
		for _, n := range started {
			n.kill()
		}
	}()
	start := func(extra ...string) (string, error) {
		n, addr, err := startNode(bin, dir, extra...)
		if n != nil {
			started = append(started, n)
		}
		return addr, err
	}
	if needSingle {
		addr, err := start()
		if err != nil {
			fmt.Fprintf(notice, "redistest: starting a private redis-server: %v\n", err)
			return 1
		}
		os.Setenv(EnvAddr, addr)
		defer os.Unsetenv(EnvAddr)
	}
	if needCluster {
		var addrs []string
		for range 3 {
			addr, err := start("--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
			if err != nil {
				fmt.Fprintf(notice, "redistest: starting a private cluster node: %v\n", err)
				return 1
			}
			addrs = append(addrs, addr)
		}
		if err := formCluster(addrs); err != nil {
			fmt.Fprintf(notice, "redistest: forming the private cluster: %v\n", err)
			return 1
		}
		os.Setenv(EnvClusterAddrs, strings.Join(addrs, ","))
		defer os.Unsetenv(EnvClusterAddrs)
	}
	return run()
}

// node is a redis-server process started by Main.
type node struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
}

func (n *node) kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

// startNode starts a redis-server with no persistence on a free loopback
// port and waits until it answers. A port taken meanwhile by someone else
// is retried with another.
func startNode(bin, dir string, extra ...string) (*node, string, error) {
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		p := strconv.Itoa(port)
		nodeDir := filepath.Join(dir, p)
		if err := os.MkdirAll(nodeDir, 0o700); err != nil {
			return nil, "", err
		}
		args := append([]string{"--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--dir", nodeDir, "--logfile", filepath.Join(nodeDir, "redis.log")}, extra...)
		n := &node{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
		if err := n.cmd.Start(); err != nil {
			return nil, "", err
		}
		go func() {
			_ = n.cmd.Wait()
			close(n.exited)
		}()
		addr := net.JoinHostPort("127.0.0.1", p)
		if last = waitPing(addr, n.cmd.Process.Pid, n.exited); last == nil {
			return n, addr, nil
		}
		n.kill()
	}
	return nil, "", last
}

// formCluster makes the nodes at addrs one cluster with the 16384 slots
// split among them, and waits until every node reports cluster_state:ok.
func formCluster(addrs []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes []*redis.Client
	for _, a := range addrs {
		n := redis.NewClient(&redis.Options{Addr: a})
		defer n.Close()
		nodes = append(nodes, n)
	}
	per := 16384 / len(nodes)
	for i, n := range nodes {
		lo, hi := i*per, (i+1)*per-1
		if i == len(nodes)-1 {
			hi = 16383
		}
		if err := n.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE: %w", addrs[i], err)
		}
	}
	for _, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		if err := nodes[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", a, err)
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := true
		for _, n := range nodes {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(nodes))) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not reach cluster_state:ok: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
