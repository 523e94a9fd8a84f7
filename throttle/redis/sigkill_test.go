package redis_test

// A holder process killed with SIGKILL: its slots are free for another
// process once, and only once, its leases have expired by the server's
// clock. The child process is the test binary itself.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// The child process of TestRedisSIGKILLedHolder is the test binary itself,
// run with these variables set.
const (
	envKilledChildPrefix = "WECOM_THROTTLE_TEST_KILLED_CHILD_PREFIX"
	envKilledChildAddr   = "WECOM_THROTTLE_TEST_KILLED_CHILD_ADDR"
)

// killedRequest is what the child and the parent of
// TestRedisSIGKILLedHolder acquire: all three slots of one key.
var killedRequest = throttle.Request{Key: "{corp}/killed", Concurrency: 3, TTL: 2 * time.Second}

// TestRedisSIGKILLedHolder: a process holding every slot of a key is killed
// with SIGKILL; another process gets the slots once, and only once, the
// dead holder's leases have expired by the server's clock.
func TestRedisSIGKILLedHolder(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	if prefix := os.Getenv(envKilledChildPrefix); prefix != "" {
		killedChild(prefix, os.Getenv(envKilledChildAddr))
		return
	}
	rdb := redistest.Single(t)
	b, prefix := robustBackend(t, rdb, throttleredis.Options{})
	r := killedRequest

	child := startKilledChild(t, prefix)
	childLeases := child.heldLeases(t, r)

	// While the child lives, its slots are taken.
	_, err := b.TryAcquire(context.Background(), r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)

	child.kill(t)
	mine := acquireAfterKill(t, b, r)
	checkGrantsAfterKill(t, r, mine, childLeases)
	for _, c := range childLeases {
		if err := b.Release(context.Background(), c); !errors.Is(err, throttle.ErrLeaseNotHeld) {
			t.Errorf("Release of the dead child's lease %s = %v, want ErrLeaseNotHeld", c.ID, err)
		}
	}
	for _, l := range mine {
		if err := b.Release(context.Background(), l); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
}

// killedProc is the running child of TestRedisSIGKILLedHolder, as its
// parent sees it.
type killedProc struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	lines  chan string // the child's stdout, closed when it closes
	wait   func() error
}

// startKilledChild starts the child of TestRedisSIGKILLedHolder under
// prefix; it is killed, if still alive, when the test ends.
func startKilledChild(t *testing.T, prefix string) *killedProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestRedisSIGKILLedHolder$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(),
		envKilledChildPrefix+"="+prefix,
		envKilledChildAddr+"="+os.Getenv(redistest.EnvAddr))
	// The child blocks reading its stdin: if this process dies, the pipe
	// closes and the child exits instead of lingering.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &killedProc{cmd: cmd, stderr: new(strings.Builder), lines: make(chan string, 16)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitOnce sync.Once
	var waitErr error
	p.wait = func() error {
		waitOnce.Do(func() { waitErr = cmd.Wait() })
		return waitErr
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = stdin.Close()
		_ = p.wait()
	})
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

// heldLeases waits, bounded, for the child's "held" line and returns the
// leases it names: every slot of r.
func (p *killedProc) heldLeases(t *testing.T, r throttle.Request) []throttle.Lease {
	t.Helper()
	var held string
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for held == "" {
		select {
		case line, ok := <-p.lines:
			if !ok {
				_ = p.wait()
				t.Fatalf("child exited without holding the slots; stderr:\n%s", p.stderr.String())
			}
			if strings.HasPrefix(line, "held ") {
				held = line
			} else {
				t.Logf("child: %s", line)
			}
		case <-timeout.C:
			t.Fatalf("child did not hold the slots within 30s")
		}
	}
	var childLeases []throttle.Lease
	for _, f := range strings.Fields(held)[1:] {
		id, ms, ok := strings.Cut(f, ":")
		exp, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			t.Fatalf("child printed %q", held)
		}
		childLeases = append(childLeases, throttle.Lease{Key: r.Key, ID: id, Expires: time.UnixMilli(exp)})
	}
	if len(childLeases) != r.Concurrency {
		t.Fatalf("child printed %q: want %d leases", held, r.Concurrency)
	}
	return childLeases
}

// kill kills the child with SIGKILL and waits for it to die.
func (p *killedProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	if err := p.wait(); err == nil {
		t.Fatalf("child exited cleanly, want killed")
	}
	for range p.lines { // drain: the pipe is closed now
	}
}

// acquireAfterKill waits for every slot of r at once, bounded, and returns
// the leases.
func acquireAfterKill(t *testing.T, b *throttleredis.Backend, r throttle.Request) []throttle.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan throttle.Lease, r.Concurrency)
	var wg sync.WaitGroup
	for range r.Concurrency {
		wg.Go(func() {
			l, err := b.Acquire(ctx, r)
			if err != nil {
				t.Errorf("Acquire after the kill: %v", err)
				return
			}
			got <- l
		})
	}
	wg.Wait()
	close(got)
	var mine []throttle.Lease
	for l := range got {
		mine = append(mine, l)
	}
	if len(mine) != r.Concurrency {
		t.FailNow()
	}
	return mine
}

// checkGrantsAfterKill checks, by the server's clock, that no lease in mine
// was granted before a slot of the dead child's leases expired.
func checkGrantsAfterKill(t *testing.T, r throttle.Request, mine, childLeases []throttle.Lease) {
	t.Helper()
	byGrant := func(a, b throttle.Lease) int { return a.Granted.Compare(b.Granted) }
	byExpiry := func(a, b throttle.Lease) int { return a.Expires.Compare(b.Expires) }
	slices.SortFunc(mine, byGrant)
	slices.SortFunc(childLeases, byExpiry)
	for i, l := range mine {
		// The i-th slot to free is the i-th child lease to expire.
		if l.Granted.Before(childLeases[i].Expires) {
			t.Errorf("lease %d granted at %d ms, before the dead child's lease %d expired (%d ms)",
				i+1, l.Granted.UnixMilli(), i+1, childLeases[i].Expires.UnixMilli())
		}
		// At every grant, by the server's clock: the child's leases not yet
		// expired plus ours granted so far (all still held) are at most 3.
		holders := i + 1
		for _, c := range childLeases {
			if c.Expires.After(l.Granted) {
				holders++
			}
		}
		if holders > r.Concurrency {
			t.Errorf("at %d ms, %d holders of %d slots", l.Granted.UnixMilli(), holders, r.Concurrency)
		}
		if ttl := l.Expires.Sub(l.Granted); ttl != r.TTL {
			t.Errorf("lease TTL = %s, want %s", ttl, r.TTL)
		}
	}
}

// killedChild is the child of TestRedisSIGKILLedHolder: it takes every slot,
// prints "held id:expires-ms ..." and blocks until killed (or until its
// parent goes away and closes its stdin).
func killedChild(prefix, addr string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "killed child:", err)
		os.Exit(3)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for range killedRequest.Concurrency {
		l, err := b.TryAcquire(ctx, killedRequest)
		if err != nil {
			fail(err)
		}
		out = append(out, l.ID+":"+strconv.FormatInt(l.Expires.UnixMilli(), 10))
	}
	fmt.Println("held " + strings.Join(out, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(4) // the parent is gone; it was meant to kill us
}
