package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// Three processes send to overlapping members at once, each send waiting
// for all its members: no member is counted over its window in any
// sliding interval, on a single node and on a cluster, and every send is
// served.
func TestRedisMembersAcrossProcesses(t *testing.T) {
	t.Parallel() // keys of its own
	for name, rdb := range map[string]redis.UniversalClient{"Single": redistest.Single(t), "Cluster": redistest.Cluster(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			membersAcrossProcesses(t, rdb)
		})
	}
}

// processes returns n backends on rdb sharing a prefix of their own: n
// processes of one fleet.
func processes(t *testing.T, rdb redis.UniversalClient, n int) []*throttleredis.Backend {
	t.Helper()
	prefix := redistest.Prefix(t, rdb)
	procs := make([]*throttleredis.Backend, n)
	for i := range procs {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		procs[i] = b
	}
	return procs
}

func membersAcrossProcesses(t *testing.T, rdb redis.UniversalClient) {
	const limit, period = 4, 400 * time.Millisecond
	procs := processes(t, rdb, 3)
	ws := []throttle.Window{{Limit: limit, Period: period}}
	var (
		mu     sync.Mutex
		grants = map[string][]time.Time{}
		wg     sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 24 {
		members := []string{fmt.Sprint("m", i%3), fmt.Sprint("m", (i+1)%4)}
		if members[0] == members[1] {
			members = members[:1]
		}
		b := procs[i%len(procs)]
		wg.Go(func() {
			l, err := b.Acquire(ctx, throttle.Request{Key: "{corp}/send", Windows: ws, Members: members})
			if err != nil {
				t.Errorf("Acquire(%q): %v", members, err)
				return
			}
			mu.Lock()
			for _, m := range members {
				grants[m] = append(grants[m], l.Granted)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for m, ts := range grants {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := range ts {
			if i >= limit && ts[i].Sub(ts[i-limit]) < period {
				t.Errorf("member %s: %d grants within %s, limit %d", m, limit+1, ts[i].Sub(ts[i-limit]), limit)
			}
		}
	}
}

// A send whose deadline comes before a member has room fails at once with
// an error naming that member, the others untouched, on another process
// than the one that used the member up.
func TestRedisMembersRefusalNamesMembers(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	procs := processes(t, rdb, 2)
	b1, b2 := procs[0], procs[1]
	ctx := context.Background()
	ws := []throttle.Window{{Limit: 1, Period: time.Hour}}
	if _, err := b1.TryAcquire(ctx, throttle.Request{Key: "{c}/send", Windows: ws, Members: []string{"u1", "u3"}}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := b2.Acquire(short, throttle.Request{Key: "{c}/send", Windows: ws, Members: []string{"u1", "u2", "u3"}})
	var le *throttle.LimitError
	if !errors.As(err, &le) || !slices.Equal(le.Members, []string{"u1", "u3"}) || le.RetryAfter < 59*time.Minute {
		t.Fatalf("err = %v, want a refusal naming u1 and u3, for about an hour", err)
	}
	if _, err := b2.TryAcquire(ctx, throttle.Request{Key: "{c}/send", Windows: ws, Members: []string{"u2"}}); err != nil {
		t.Errorf("u2 after a refusal that named others: %v", err)
	}
}
