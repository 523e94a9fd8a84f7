package redistest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// countKeys counts the keys under prefix on every node of rdb, and on how
// many nodes they are.
func countKeys(t *testing.T, rdb redis.UniversalClient, prefix string) (keys, nodes int) {
	t.Helper()
	count := func(ctx context.Context, n *redis.Client) (int, error) {
		all, err := n.Keys(ctx, prefix+"*").Result()
		return len(all), err
	}
	ctx := t.Context()
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		k, err := count(ctx, rdb.(*redis.Client))
		if err != nil {
			t.Fatal(err)
		}
		return k, min(k, 1)
	}
	ch := make(chan int, 16)
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		k, err := count(ctx, n)
		ch <- k
		return err
	})
	close(ch)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ch {
		keys += k
		if k > 0 {
			nodes++
		}
	}
	return keys, nodes
}

func TestPrefixDeletesOnlyItsKeys(t *testing.T) {
	for name, connect := range map[string]func(testing.TB) redis.UniversalClient{"single": Single, "cluster": Cluster} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb := connect(t)
			outer := Prefix(t, rdb)
			if !strings.HasPrefix(outer, "wt:") || len(outer) != len("wt:01234567:") {
				t.Fatalf("prefix %q is not wt:<8 hex>:", outer)
			}
			if err := rdb.Set(t.Context(), outer+"{keep}", "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			var inner string
			t.Run("keys", func(t *testing.T) {
				inner = Prefix(t, rdb)
				if inner == outer {
					t.Fatalf("two tests got the same prefix %q", inner)
				}
				for i := range 50 {
					if err := rdb.Set(t.Context(), fmt.Sprintf("%s{corp%d}:token", inner, i), "v", 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				keys, nodes := countKeys(t, rdb, inner)
				if keys != 50 {
					t.Fatalf("%d keys stored, want 50", keys)
				}
				if _, ok := rdb.(*redis.ClusterClient); ok && nodes < 2 {
					t.Fatalf("keys on %d masters, want them spread", nodes)
				}
			})
			if keys, _ := countKeys(t, rdb, inner); keys != 0 {
				t.Errorf("%d keys left under %q after the test ended", keys, inner)
			}
			if n, err := rdb.Exists(t.Context(), outer+"{keep}").Result(); err != nil || n != 1 {
				t.Errorf("a key of another prefix was deleted: exists = %d, %v", n, err)
			}
		})
	}
}

func TestStartServerRestartAndStop(t *testing.T) {
	t.Parallel()
	addr, restart, stop := StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	restart()
	// The first command after the restart may meet a dead pooled
	// connection; the next one must work.
	_ = rdb.Ping(ctx).Err()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("after restart: exists = %d, %v; want an empty server", n, err)
	}
	stop()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("PING answered after stop")
	}
	restart()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after stop and restart: %v", err)
	}
}

// recorder is a testing.TB whose Skipf and Fatalf record the message and end
// the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Without the variables a test skips with the way to set them, except in CI
// where it fails.
func TestUnsetSkipsOrFailsInCI(t *testing.T) {
	t.Setenv(EnvAddr, "")
	t.Setenv(EnvClusterAddrs, "")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		for name, connect := range map[string]func(testing.TB) redis.UniversalClient{EnvAddr: Single, EnvClusterAddrs: Cluster} {
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				connect(r)
			}()
			<-done
			got, other := r.skipped, r.failed
			if ci != "" {
				got, other = r.failed, r.skipped
			}
			if !strings.Contains(got, name+" unset") || !strings.Contains(got, ".ci/run") || other != "" {
				t.Errorf("CI=%q, %s unset: skipped %q, failed %q", ci, name, r.skipped, r.failed)
			}
		}
	}
}
