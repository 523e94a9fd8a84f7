package redis_test

// Shared helpers of the robustness tests of the Redis backend against real
// Redis servers: mass cancellation (redis_waiters_test.go), a holder process
// killed with SIGKILL (redis_sigkill_test.go), the absence of client clocks
// in what is sent to Redis (redis_clock_test.go), a Redis restart under load
// (redis_restart_load_test.go), a flushed script cache
// (redis_scriptcache_test.go), and the life and placement of the keys
// (redis_keys_test.go).
//
// Like the conformance suite on real time, these tests assert only counts,
// orders and the backend's own times (Lease.Granted, Lease.Expires, which come
// from the Redis server's clock), never a wall-clock duration. Every wait is
// bounded.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// robustBackend returns a Redis backend on rdb under a fresh key prefix whose
// keys are deleted when the test ends, and the prefix.
func robustBackend(t *testing.T, rdb redis.UniversalClient, opt throttleredis.Options) (*throttleredis.Backend, string) {
	t.Helper()
	prefix := redistest.Prefix(t, rdb)
	opt.Prefix = prefix
	b, err := throttleredis.New(rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, prefix
}

// robustWantLimit fails the test unless err is a *LimitError for reason.
func robustWantLimit(t *testing.T, err error, reason throttle.Reason) *throttle.LimitError {
	t.Helper()
	var le *throttle.LimitError
	if !errors.As(err, &le) || !errors.Is(err, throttle.ErrLimited) {
		t.Fatalf("err = %v, want a *LimitError (%s)", err, reason)
	}
	if le.Reason != reason {
		t.Fatalf("reason = %s, want %s (%v)", le.Reason, reason, err)
	}
	return le
}

// robustEventually polls cond every few milliseconds until it holds or limit has
// passed, and reports whether it held. It bounds waits; it asserts no
// duration.
func robustEventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// forEachRedisNode runs fn on every node holding data: every master of a
// cluster, or the single node.
func forEachRedisNode(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node redis.Cmdable, addr string) error) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return fn(ctx, n, n.Options().Addr)
		})
	}
	return fn(ctx, rdb, "single")
}

// scanRedisKeys returns every key under prefix and the node that holds it.
func scanRedisKeys(t *testing.T, rdb redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	keys := make(map[string]string)
	err := forEachRedisNode(ctx, rdb, func(ctx context.Context, n redis.Cmdable, addr string) error {
		it := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys[it.Val()] = addr
			mu.Unlock()
		}
		return it.Err()
	})
	if err != nil {
		t.Fatalf("scanning the keys under %q: %v", prefix, err)
	}
	return keys
}

// cmdRecorder is a go-redis hook that records the arguments of every
// command, the integers the server answered, and the errors.
type cmdRecorder struct {
	redistest.PassHooks
	mu      sync.Mutex
	args    [][]any
	replies map[int64]bool
	names   []string // command name, with " ERR" appended when it failed
}

func newCmdRecorder() *cmdRecorder { return &cmdRecorder{replies: make(map[int64]bool)} }

func (h *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.before(cmd)
		err := next(ctx, cmd)
		h.after(cmd, err)
		return err
	}
}

func (h *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.before(c)
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.after(c, c.Err())
		}
		return err
	}
}

func (h *cmdRecorder) before(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.args = append(h.args, slices.Clone(cmd.Args()))
}

func (h *cmdRecorder) after(cmd redis.Cmder, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = cmd.Err()
	}
	name := cmd.Name()
	if err != nil && err != redis.Nil {
		name += " ERR " + err.Error()
	}
	h.names = append(h.names, name)
	if c, ok := cmd.(*redis.Cmd); ok && err == nil {
		var collect func(v any)
		collect = func(v any) {
			switch v := v.(type) {
			case int64:
				h.replies[v] = true
			case []any:
				for _, e := range v {
					collect(e)
				}
			}
		}
		collect(c.Val())
	}
}

func (h *cmdRecorder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.args, h.names = nil, nil
}

func (h *cmdRecorder) snapshot() (args [][]any, names []string, replies map[int64]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.args), slices.Clone(h.names), maps.Clone(h.replies)
}
