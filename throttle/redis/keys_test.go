package redis_test

// The life and placement of the Redis backend's keys: every key has a TTL,
// one of the backend's names and no secret; idle keys disappear on their
// own; on a cluster, one throttle key's keys share a slot and corps spread.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// hashTaggedKey is a throttle key as the backend's Redis key names spell it:
// "{tag}" and the key, the tag being the key's own hash tag, or an FNV-1a hash
// of the key when it has none.
func hashTaggedKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return "{" + key[i+1:i+1+j] + "}" + key
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return "{" + strconv.FormatUint(h.Sum64(), 16) + "}" + key
}

// redisKeyShape is the only form a key of the backend may take: the prefix, the
// hash-tagged throttle key, and the kind of data: h (lease holders), s (a
// lock's holder, or a cooldown's empty mark), c
// (cooldown), q (processes waiting for a slot), r (the With slots each
// waits with; none in these tests' workload), w:<period ms> (a rate
// window), e (the epoch of the key's state), m:<generation> (the members'
// states of a request with Members). Group 1 is the throttle key as hashTaggedKey spells it, group 2 the
// kind.
func redisKeyShape(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(.+):(h|s|c|q|r|e|w:[0-9]+|m:[0-9]+)$`)
}

// workloadKinds are the kinds of Redis key keysWorkload(d) must leave for
// each throttle key (a q key is allowed, not required): s is the lock the
// cooldown keeps taken (lock.go), unused on a key that is no lock.
func workloadKinds(d time.Duration) []string {
	return []string{"c", "e", "h", "s", "w:" + strconv.FormatInt((2*d).Milliseconds(), 10), "w:" + strconv.FormatInt((3*d).Milliseconds(), 10)}
}

// kindsOf returns the sorted kinds of the Redis keys rks, less q.
func kindsOf(prefix string, rks []string) []string {
	shape := redisKeyShape(prefix)
	var kinds []string
	for _, k := range rks {
		if m := shape.FindStringSubmatch(k); m != nil && m[2] != "q" {
			kinds = append(kinds, m[2])
		}
	}
	slices.Sort(kinds)
	return kinds
}

var (
	robustLeaseIDShape = regexp.MustCompile(`^[0-9a-f]{24}$`)
	robustIntegerShape = regexp.MustCompile(`^-?[0-9]+$`)
	robustEpochShape   = regexp.MustCompile(`^[0-9]+:[0-9a-f]{24}$`)
	robustLockShape    = regexp.MustCompile(`^(lock:[0-9a-f]{24})?$`) // lockMark
)

// checkKeys checks every key under prefix: it has a TTL, has one of the
// backend's names, and holds only lease (or process) IDs and numbers, so nothing a caller
// could have put in, secrets included. It returns the keys by throttle key
// (as hash-tagged in the name) and the node of each.
func checkKeys(t *testing.T, rdb redis.UniversalClient, prefix string) (map[string][]string, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shape := redisKeyShape(prefix)
	nodes := scanRedisKeys(t, rdb, prefix)
	byKey := make(map[string][]string)
	for k := range nodes {
		m := shape.FindStringSubmatch(k)
		if m == nil {
			t.Errorf("key %q is not of the backend's shapes", k)
			continue
		}
		byKey[m[1]] = append(byKey[m[1]], k)
		// PTTL: -1 (as -1ns) for a key without a TTL, -2 (-2ns) for a key
		// that expired since the scan.
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil {
			t.Errorf("PTTL %s: %v", k, err)
		} else if ttl == -1 {
			t.Errorf("key %s has no TTL: it would never expire when idle", k)
		}
		for _, v := range keyValues(ctx, t, rdb, k) {
			if !robustIntegerShape.MatchString(v) {
				t.Errorf("key %s holds %q, not a number", k, v)
			}
		}
	}
	return byKey, nodes
}

// keyValues returns the values key k holds that must be numbers: the
// scores of a sorted set (whose members must be lease IDs), a hash's fields
// and values less a window's bookkeeping fields, a string's value (an epoch
// must have the epoch's shape). It fails the test for a key of another type.
func keyValues(ctx context.Context, t *testing.T, rdb redis.UniversalClient, k string) []string {
	t.Helper()
	var values []string
	switch kind := rdb.Type(ctx, k).Val(); kind {
	case "zset":
		zs, err := rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		if err != nil {
			t.Errorf("ZRANGE %s: %v", k, err)
		}
		for _, z := range zs {
			if id, _ := z.Member.(string); !robustLeaseIDShape.MatchString(id) {
				t.Errorf("key %s holds member %q, not a lease ID", k, z.Member)
			}
			values = append(values, strconv.FormatFloat(z.Score, 'f', -1, 64))
		}
	case "hash":
		h, err := rdb.HGetAll(ctx, k).Result()
		if err != nil {
			t.Errorf("HGETALL %s: %v", k, err)
		}
		for f, v := range h {
			// A window's bookkeeping fields: the oldest bucket counted, the total.
			if f != "lo" && f != "t" && f != "b" && f != "r" {
				values = append(values, f)
			}
			values = append(values, v)
		}
	case "string":
		v, err := rdb.Get(ctx, k).Result()
		switch {
		case err == redis.Nil: // expired since the scan
		case err != nil:
			t.Errorf("GET %s: %v", k, err)
		case strings.HasSuffix(k, ":e"):
			if !robustEpochShape.MatchString(v) {
				t.Errorf("key %s holds %q, not an epoch", k, v)
			}
		case strings.HasSuffix(k, ":s"):
			if !robustLockShape.MatchString(v) {
				t.Errorf("key %s holds %q, not a lock's lease ID or a cooldown's empty mark", k, v)
			}
		default:
			values = append(values, v)
		}
	case "none": // expired since the scan
	default:
		t.Errorf("key %s is a %s", k, kind)
	}
	return values
}

// keysWorkload uses a throttle key every way that creates Redis keys:
// concurrency, two windows, a wait for a slot, a cooldown, and a lease left
// to expire (its holder "died"). d is the lease TTL and the cooldown; the
// windows are 2d and 3d long.
func keysWorkload(t *testing.T, b throttle.Backend, key string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	r := throttle.Request{Key: key, Concurrency: 2, TTL: d,
		Windows: []throttle.Window{{Limit: 100, Period: 2 * d}, {Limit: 200, Period: 3 * d}}}
	acquire := func() throttle.Lease {
		t.Helper()
		l, err := b.Acquire(ctx, r)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", key, err)
		}
		return l
	}
	for range 3 {
		if err := b.Release(ctx, acquire()); err != nil {
			t.Fatalf("Release(%q): %v", key, err)
		}
	}
	acquire() // never released
	extra := acquire()
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := b.Acquire(wctx, r) // waits for a slot, in vain
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(%q) with both slots held = %v, want context.DeadlineExceeded", key, err)
	}
	if err := b.Release(ctx, extra); err != nil {
		t.Fatalf("Release(%q): %v", key, err)
	}
	if err := b.Cooldown(ctx, key, d); err != nil {
		t.Fatalf("Cooldown(%q): %v", key, err)
	}
}

// TestRedisKeysExpireWhenIdle: after a workload, every key has a TTL and
// holds no secret, and once idle every key disappears on its own.
func TestRedisKeysExpireWhenIdle(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	for _, tc := range []struct {
		name string
		rdb  func(testing.TB) redis.UniversalClient
	}{{"Single", redistest.Single}, {"Cluster", redistest.Cluster}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a prefix of its own, and seconds of waiting for TTLs
			rdb := tc.rdb(t)
			b, prefix := robustBackend(t, rdb, throttleredis.Options{})
			corps := []string{"{corpA}/x", "{corpB}/x"}
			for _, k := range corps {
				keysWorkload(t, b, k, time.Second) // checked before the first key expires
			}
			byKey, _ := checkKeys(t, rdb, prefix)
			for _, k := range corps {
				// holders, cooldown and the two windows
				if got, want := kindsOf(prefix, byKey[hashTaggedKey(k)]), workloadKinds(time.Second); !slices.Equal(got, want) {
					t.Errorf("throttle key %q has Redis keys %q, want the kinds %q (and q)", k, byKey[hashTaggedKey(k)], want)
				}
			}
			if len(byKey) != len(corps) {
				t.Errorf("Redis keys for throttle keys %v, want only %q", slices.Sorted(maps.Keys(byKey)), corps)
			}
			if !robustEventually(20*time.Second, func() bool { return len(scanRedisKeys(t, rdb, prefix)) == 0 }) {
				left := scanRedisKeys(t, rdb, prefix)
				for k := range left {
					t.Errorf("key %s still exists long after the last use (PTTL %s)", k, rdb.PTTL(context.Background(), k).Val())
				}
			}
		})
	}
}

// TestRedisClusterKeysSpread: on a cluster, all the Redis keys of one
// throttle key are in one slot, and different corps' keys spread over slots
// and masters.
func TestRedisClusterKeysSpread(t *testing.T) {
	t.Parallel() // keys of its own
	rdb := redistest.Cluster(t)
	b, prefix := robustBackend(t, rdb, throttleredis.Options{})
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("{corp%02d}/x", i))
	}
	keys = append(keys, "{corpA}/x", "{corpB}/x", "untagged/x")
	for _, k := range keys {
		keysWorkload(t, b, k, time.Minute) // none expires before the check
	}
	byKey, nodes := checkKeys(t, rdb, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slotOf := make(map[string]int64) // throttle key -> slot
	masters := make(map[string]bool)
	for _, k := range keys {
		rks := byKey[hashTaggedKey(k)]
		if got, want := kindsOf(prefix, rks), workloadKinds(time.Minute); !slices.Equal(got, want) {
			t.Errorf("throttle key %q has Redis keys %q, want the kinds %q (and q)", k, rks, want)
		}
		for _, rk := range rks {
			slot, err := rdb.ClusterKeySlot(ctx, rk).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %s: %v", rk, err)
			}
			if s, ok := slotOf[k]; ok && s != slot {
				t.Errorf("throttle key %q: Redis key %s in slot %d, another in slot %d: one script could not touch both", k, rk, slot, s)
			}
			slotOf[k] = slot
			masters[nodes[rk]] = true
		}
	}
	slots := make(map[int64]bool)
	for i := range 20 {
		slots[slotOf[keys[i]]] = true
	}
	if len(slots) < 2 {
		t.Errorf("20 corps' keys all in slot(s) %v: corps do not spread", slots)
	}
	if slotOf["{corpA}/x"] == slotOf["{corpB}/x"] {
		t.Errorf("corpA and corpB share slot %d", slotOf["{corpA}/x"])
	}
	if len(masters) < 2 {
		t.Errorf("keys of %d throttle keys all on master(s) %v", len(keys), masters)
	}
	t.Logf("20 corps over %d slots and %d masters", len(slots), len(masters))
}
