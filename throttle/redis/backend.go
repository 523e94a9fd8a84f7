// The Redis backend: its options, the Backend type and its lifecycle
// (newBackend, Close), the Lua scripts it runs, and how throttle keys name
// Redis keys. The design is in REDIS.md; each file says what it holds.

package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// luaFiles are the atomic steps of the Redis backend, one Lua script each,
// each run as it is.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// lua returns the script lua/name.lua.
func lua(name string) string {
	s, _ := luaFiles.ReadFile("lua/" + name + ".lua") // embedded, so there
	return string(s)
}

// Fallback says what a Redis backend does when Redis cannot be reached.
type Fallback int

const (
	// FailClosed sends nothing without its lease from Redis. The default:
	// no call leaves without the fleet-wide limits. An Acquire waits for
	// Redis to answer again as it waits for a slot, bounded by its context
	// and Options.WaitForRedis, and only then fails with an error matching
	// throttle.ErrUnavailable; TryAcquire refuses at once.
	FailClosed Fallback = iota
	// FallBackLocal limits with an in-process backend instead, each limit
	// cut to the process's share (Options.LocalShare), until Redis answers.
	FallBackLocal
)

// Options configure a Redis backend. The zero value is usable.
type Options struct {
	// Prefix starts every key and channel (default "wecom:throttle:").
	Prefix string
	// Fallback is what happens while Redis cannot be reached (default
	// FailClosed).
	Fallback Fallback
	// LocalShare is the fraction of every limit one process may use under
	// FallBackLocal, such as 1/3 for three processes (default 1). Concurrency
	// and window limits are rounded down, but never below 1.
	LocalShare float64
	// RetryRedisAfter is how often Redis is probed, one PING at a time, once
	// a round trip failed for want of it (default 1s). Until a probe sees it
	// answer, no call sends to Redis: acquisitions and Extend wait for the
	// probe (see WaitForRedis), or use the fallback, TryAcquire and
	// Cooldown fail, and releases wait to be made.
	RetryRedisAfter time.Duration
	// WaitForRedis bounds how long an Acquire under FailClosed, or an
	// Extend of a lease of Redis, waits for Redis to answer again, counted
	// from when Redis was found unreachable (so that the calls queued
	// behind one another fail together, not one bound after another),
	// after which it fails with an error matching throttle.ErrUnavailable
	// (default 1m: a failover of tens of seconds).
	// The call's context bounds it too.
	WaitForRedis time.Duration
	// OpTimeout bounds each Redis round trip (default 2s).
	OpTimeout time.Duration
}

// Backend is a throttle.Backend on Redis, shared by every process that uses
// the same Redis and prefix: a fleet of processes stays under one set of
// limits, timed by the Redis server's clock. Leases expire on the server, so a process that
// dies frees its slots when their TTL ends. One corp's keys share a Cluster
// slot (the throttle key's hash tag, "{corp}").
//
// Nothing is sent without its lease: while Redis cannot be reached, an
// Acquire waits for it to answer again (see Fallback and
// Options.WaitForRedis), and a wait of more than throttle.StallAfter on one
// that does not answer, or one known down, is told (throttle.Request.OnStall).
// After Redis restarted empty, each window holds a reserve until it has slid
// past the loss (ReasonReserve), and concurrency slots held across the
// restart are forgotten. REDIS.md beside this file says how and why, and
// what is not covered.
//
// Persistence recommended: appendonly yes with appendfsync everysec, and a
// maxmemory-policy that never evicts these keys (noeviction, or volatile-*
// with nothing else volatile). RDB snapshots alone are worse than none.
//
// Programs make one with New on a go-redis client. The backend prints
// nothing (go-redis's own logging: see the package doc).
type Backend struct {
	rdb        redisConn
	opt        Options
	proc       string // this backend's id among the waiting processes
	channel    string // broadcast: cooldowns, to every process
	wakePrefix string // wake-ups: wakePrefix + proc reaches this process only
	acquire    *script
	release    *script
	extend     *script
	cooldown   *script
	pass       *script
	restoreSc  *script
	members    *script // requests with Members (members_script.go)
	// memberLines: the waiters of requests with Members (members.go)
	memberLines throttle.MemberLines
	swapLimit   *script
	loadLimit   *script
	// learned: the learned limits last read or written, by key (learn_store.go)
	learnedMu sync.Mutex
	learned   map[string]int
	ref       serverRef        // the server's clock, as last seen
	quiet     silence          // whether Redis keeps this process waiting
	local     *throttle.Memory // the fallback
	ledger    ledger           // what Redis would lose in a restart, as far as this process knows
	restoreMu sync.Mutex       // one restore at a time

	mu               sync.Mutex
	keys             map[string]*rkey
	hot              map[string]*hot           // the hot path without Redis (local.go)
	heldSweep        int                       // hot's size at which expired held leases go
	gen              atomic.Uint64             // names the leases handed on locally
	era              atomic.Uint64             // bumped when Redis may have lost its state (REDIS.md, Eras)
	cold             bool                      // tests of the Redis protocol: no hot path
	pending, sending map[string]throttle.Lease // releases to send later and being sent (later.go)
	quietFor         time.Duration             // localSpan, longer in tests that must not race it
	resync           time.Duration             // resyncAfter, longer in tests that must not race it
	health           atomic.Int32              // healthUnknown until the first probe answers; written under mu
	downAt           time.Time                 // when health last became healthDown; under mu
	probing          bool                      // the probe (see probe) runs
	changed          chan struct{}             // closed and replaced when health or probing changes, or a send ends (signal)
	orphans          []throttle.Lease          // releases that failed for want of Redis, retried when it answers
	pubsub           subscription              // the subscription listen holds, nil between connections
	done             chan struct{}
}

// maxOrphans bounds the releases kept for retry while Redis is down; a lease
// past it frees its slot when its TTL ends, as a holder that dies does.
const maxOrphans = 10000

// newBackend returns a Redis backend on rdb (a single node, Sentinel or Cluster
// client). It starts goroutines that Close stops.
func newBackend(rdb redisConn, opt Options) (*Backend, error) {
	if rdb == nil {
		return nil, invalidf("nil Redis client")
	}
	opt.Prefix = cmp.Or(opt.Prefix, "wecom:throttle:")
	opt.LocalShare = cmp.Or(opt.LocalShare, 1)
	opt.RetryRedisAfter = cmp.Or(opt.RetryRedisAfter, time.Second)
	opt.OpTimeout = cmp.Or(opt.OpTimeout, 2*time.Second)
	opt.WaitForRedis = cmp.Or(opt.WaitForRedis, time.Minute)
	switch {
	case strings.ContainsAny(opt.Prefix, "{}"):
		return nil, invalidf("prefix %q holds a brace: the keys' hash tags come after it", opt.Prefix)
	case opt.LocalShare < 0 || opt.LocalShare > 1:
		return nil, invalidf("local share %v not in (0, 1]", opt.LocalShare)
	case opt.RetryRedisAfter < 0 || opt.OpTimeout < 0 || opt.WaitForRedis < 0:
		return nil, invalidf("negative duration in %+v", opt)
	case opt.Fallback != FailClosed && opt.Fallback != FallBackLocal:
		return nil, invalidf("unknown fallback %d", opt.Fallback)
	}
	b := &Backend{
		rdb:        rdb,
		opt:        opt,
		proc:       newLeaseID(),
		channel:    opt.Prefix + "notify",
		wakePrefix: opt.Prefix + "wake:",
		acquire:    newScript(lua("acquire")),
		release:    newScript(lua("release")),
		extend:     newScript(lua("extend")),
		cooldown:   newScript(lua("cooldown")),
		pass:       newScript(lua("pass")),
		restoreSc:  newScript(lua("restore")),
		members:    newScript(lua("members")),
		swapLimit:  newScript(lua("swap_limit")),
		loadLimit:  newScript(lua("load_limit")),
		learned:    make(map[string]int),
		local:      throttle.NewMemory(),
		keys:       make(map[string]*rkey),
		hot:        make(map[string]*hot),
		heldSweep:  1024,
		pending:    make(map[string]throttle.Lease),
		sending:    make(map[string]throttle.Lease),
		quietFor:   localSpan,
		resync:     resyncAfter,
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
		probing:    true, // calls wait for the first probe's verdict
	}
	b.ledger.keys, b.ledger.ref = make(map[string]*keyRecord), &b.ref
	go b.probe(0)
	go b.listen()
	return b, nil
}

// Era implements throttle.Eras: it changes whenever Redis may have lost
// its state (REDIS.md, Eras).
func (b *Backend) Era() uint64 { return b.era.Load() }

// Close sends the releases it deferred (see later.go) and stops the
// subscription. Calls after Close fail.
func (b *Backend) Close() error {
	if b.closed() {
		return nil
	}
	close(b.done)
	b.sendLater() // after done: a release made meanwhile goes at once (later)
	b.sendingDone()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pubsub != nil {
		return b.pubsub.Close()
	}
	return nil
}

// redisKeys names the Redis keys of a throttle key.
type redisKeys struct {
	holders, lock, cooldown, waiting, epoch, learned string
	windows                                          []string
	members                                          string // its members' generation HASHes: this, then the generation
}

// slots returns the key that holds the slot of lease id: its lock's
// STRING for a lock's lease (lock.go), else the holders ZSET.
func (k redisKeys) slots(id string) string {
	if isLockID(id) {
		return k.lock
	}
	return k.holders
}

// names returns the Redis keys of throttle key key with the windows ws.
func (b *Backend) names(key string, ws []throttle.Window) redisKeys {
	return b.namesIn(hashTag(key), key, ws)
}

// namesIn returns the Redis keys of throttle key key with the windows ws,
// in hash tag tag: a member's key takes its request's tag (namesOf).
func (b *Backend) namesIn(tag, key string, ws []throttle.Window) redisKeys {
	base := b.opt.Prefix + "{" + tag + "}" + key
	k := redisKeys{holders: base + ":h", lock: base + ":s", cooldown: base + ":c", waiting: base + ":q",
		epoch: base + ":e", learned: base + ":l", members: base + ":m:"}
	for _, w := range ws {
		k.windows = append(k.windows, base+":w:"+strconv.FormatInt(w.Period.Milliseconds(), 10))
	}
	return k
}

// hashTag returns the Redis Cluster hash tag of key's Redis keys: the key's
// own tag if it has one ("corp" in "{corp}/cgi-bin/tag/list"), else a hash
// of the whole key (which follows the tag in every Redis key).
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return strconv.FormatUint(h.Sum64(), 16)
}

func newLeaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// opCtx bounds one round trip; it is not cancelled with the caller, so that a
// script that ran is always answered and its effect known.
func (b *Backend) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), b.opt.OpTimeout)
}

var _ throttle.Backend = (*Backend)(nil)

// invalidf returns an error matching throttle.ErrInvalidRequest.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", throttle.ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// getOrMake returns m[k], made with mk and stored there if missing.
func getOrMake[K comparable, V any](m map[K]*V, k K, mk func() *V) *V {
	v := m[k]
	if v == nil {
		v = mk()
		m[k] = v
	}
	return v
}
