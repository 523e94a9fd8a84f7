// The Redis backend: its options, the Redis type and its lifecycle (NewRedis,
// Close), the Lua scripts it runs, and how throttle keys name Redis keys.
// The other concerns live in files of their own: redis_conn.go (what it asks
// of a Redis client), redis_acquire.go (TryAcquire, Acquire),
// redis_release.go (Release, Extend, Cooldown), redis_queue.go (the local
// line of waiters, line.go's), redis_grant.go (hand-overs and the
// cross-process grant protocol), redis_fallback.go (Redis errors and the
// local fallback), redis_health.go (the probe and the subscription) and
// redis_epoch.go (what a process writes back after Redis lost its state).

package throttle

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The atomic steps of the Redis backend, one Lua script each. The scripts
// that read the server's clock start with the prelude (see clockSource).
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/free.lua
	freeLua string
	//go:embed lua/window.lua
	windowLua string
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/extend.lua
	extendLua string
	//go:embed lua/cooldown.lua
	cooldownLua string
	//go:embed lua/pass.lua
	passLua string
	//go:embed lua/members.lua
	membersLua string
	//go:embed lua/restore.lua
	restoreLua string
)

// clockSource returns the source of a script that reads the server's clock:
// the prelude, which defines now (the server's time, unix ms), then buckets
// (BucketsPerWindow, the buckets of a rate window), then body. The scripts
// that release leases start their body with free.lua.
func clockSource(body string) string {
	return preludeLua + "local buckets = " + strconv.Itoa(BucketsPerWindow) + "\n" + body
}

// acquireSource returns the acquire script's source: the prelude, the
// reasons it answers as a table R of the Go constants, window.lua and
// acquire.lua.
func acquireSource() string {
	reasons := fmt.Sprintf("local R = {concurrency = %d, rate = %d, cooldown = %d, reserve = %d, yielded = %d, lost = %d, stale = %d}\n",
		ReasonConcurrency, ReasonRate, ReasonCooldown, ReasonReserve, reasonYielded, reasonLost, reasonStale)
	return clockSource(reasons + windowLua + acquireLua)
}

// membersSource returns the members script's source, as acquireSource.
func membersSource() string {
	reasons := fmt.Sprintf("local R = {rate = %d, cooldown = %d, reserve = %d, lost = %d, stale = %d}\n",
		ReasonRate, ReasonCooldown, ReasonReserve, reasonLost, reasonStale)
	return clockSource(reasons + windowLua + membersLua)
}

// ErrUnavailable matches the errors of a Redis backend that cannot reach
// Redis and has no fallback: nothing was acquired, and no call should start.
var ErrUnavailable = errors.New("throttle: backend unavailable")

// Fallback says what a Redis backend does when Redis cannot be reached.
type Fallback int

const (
	// FailClosed refuses at once with an error matching ErrUnavailable. The
	// default: no call leaves without the fleet-wide limits.
	FailClosed Fallback = iota
	// FallBackLocal limits with an in-process backend instead, each limit cut
	// to the process's share (RedisOptions.LocalShare), until Redis answers
	// again.
	FallBackLocal
)

// RedisOptions configure a Redis backend. The zero value is usable.
type RedisOptions struct {
	// Prefix starts every key and channel (default "wecom:throttle:").
	Prefix string
	// Fallback is what happens while Redis cannot be reached (default
	// FailClosed).
	Fallback Fallback
	// LocalShare is the fraction of every limit one process may use under
	// FallBackLocal, such as 1/3 for three processes (default 1). Concurrency
	// and window limits are rounded down, but never below 1.
	LocalShare float64
	// RetryRedisAfter is how often Redis is probed once a round trip failed
	// for want of it (default 1s). Until a probe (one PING at a time, in the
	// background) sees Redis answer, no call waits on Redis: acquisitions
	// fail at once (FailClosed) or use the fallback, Extend and Cooldown fail
	// at once, and releases are kept and made when Redis answers again.
	RetryRedisAfter time.Duration
	// OpTimeout bounds each Redis round trip (default 2s).
	OpTimeout time.Duration
}

// Redis is a Backend on Redis, shared by every process that uses the same
// Redis and prefix: a fleet of processes stays under one set of limits.
//
// Each acquisition is one Lua script that checks and takes the concurrency
// slot, every rate window and the cooldown together, timed by the Redis
// server's clock, so that processes with skewed clocks agree; a request's
// With slots are taken first, each as an acquisition of its own, and held
// while it waits for its slot. Within a process the waiters of a key queue
// locally and only the head asks Redis. A Release hands its slot to the
// next waiter: without Redis while no other process waits for the key
// (window units then come from a block taken ahead), else in one round
// trip, to this process's waiter or, when another has waited longer,
// another's. A release no waiter wants goes a moment later, with others.
// Leases expire on the server, so a process that dies frees its slots when
// their TTL ends. Keys take the hash tag of the throttle key ("{corp}"), so
// one corp's keys share a Cluster slot.
//
// Faults: no call waits on a Redis known to be down (see Fallback; releases
// made meanwhile are kept and made when it answers), and a wait of more
// than StallAfter on one that does not answer is told (WithStallFunc). After
// Redis restarted empty, each process writes back what it knows (its
// grants, the cooldowns, the fill of each window it last saw) and a window
// holds a reserve until it has slid past the loss (ReasonReserve): what
// the fleet last saw in it, plus what it could have taken since at the
// window's average rate. A fleet that had used a window up stays refused,
// one far below its limits goes on at once, and the fleet does not go over
// a window because of the restart unless a process took faster than that
// average rate just before it (see REDIS.md). Requests that waited in a hung Redis's sockets take nothing when
// they run after their senders gave up. Concurrency slots held across a
// restart are forgotten. How and why, and what is not covered, is in
// REDIS.md beside this file.
//
// Persistence recommended: appendonly yes with appendfsync everysec, and a
// maxmemory-policy that never evicts these keys (noeviction, or volatile-*
// with nothing else volatile). RDB snapshots alone are worse than none: the
// minutes of grants since the snapshot are lost unseen.
//
// The backend prints nothing (go-redis's own logging: see throttle/redis).
//
// A program makes one with throttle/redis's New, on a go-redis client, so
// that a program without Redis does not link go-redis; NewRedis, on a
// RedisConn, is what New calls. NewRedis starts the probe and the subscription in goroutines that Close
// stops.
type Redis struct {
	rdb        RedisConn
	opt        RedisOptions
	proc       string // this backend's id among the waiting processes
	channel    string // broadcast: cooldowns, to every process
	wakePrefix string // wake-ups: wakePrefix + proc reaches this process only
	acquire    *script
	release    *script
	extend     *script
	cooldown   *script
	pass       *script
	restoreSc  *script
	members    *script
	// memberLines: the waiters of requests with Members (members.go)
	memberLines memberLines
	swapLimit   *script
	loadLimit   *script
	// learned are the learned limits this process last read or wrote
	// (LoadLimit, SwapLimit), by key: they cap every acquisition on the key.
	learnedMu sync.Mutex
	learned   map[string]int
	ref       serverRef  // the server's clock, as last seen
	quiet     silence    // whether Redis keeps this process waiting
	local     *Memory    // the fallback
	ledger    ledger     // what Redis would lose in a restart, as far as this process knows
	restoreMu sync.Mutex // one restore at a time

	mu   sync.Mutex
	keys map[string]*rkey
	// hot, held: the hot path without Redis (redis_local.go).
	hot       map[string]*hot
	held      map[string]held // by Redis lease id
	heldSweep int             // held's size at which expired entries go
	gen       atomic.Uint64   // names the leases handed on locally
	// era changes when Redis may have lost its state (it went down, the
	// subscription broke, a key's epoch changed): a lease granted in an
	// earlier era is never handed on locally, as Redis may not count it.
	era  uint64
	cold bool // tests of the Redis protocol: no hot path
	// pending, sending: releases to send later and being sent, by Redis
	// lease id; sent is closed when a send ends (redis_later.go).
	pending, sending map[string]Lease
	sent             chan struct{}
	quietFor         time.Duration // localSpan, longer in tests that must not race it
	// health is Redis as this process knows it: healthUnknown until the
	// first probe answers, then healthUp or healthDown. Written under mu.
	health  atomic.Int32
	probing bool              // the probe (see probe) runs
	changed chan struct{}     // closed and replaced when health or probing changes
	orphans []Lease           // releases that failed for want of Redis, retried when it answers
	pubsub  RedisSubscription // the subscription listen holds, nil between connections
	done    chan struct{}
}

// maxOrphans bounds the releases kept for retry while Redis is down; a lease
// past it frees its slot when its TTL ends, as a holder that dies does.
const maxOrphans = 10000

// NewRedis returns a Redis backend on rdb (a single node, Sentinel or Cluster
// client). Programs on go-redis call throttle/redis's New, which adapts the
// client and calls this.
func NewRedis(rdb RedisConn, opt RedisOptions) (*Redis, error) {
	if rdb == nil {
		return nil, invalidf("nil Redis client")
	}
	if opt.Prefix == "" {
		opt.Prefix = "wecom:throttle:"
	}
	if opt.LocalShare == 0 {
		opt.LocalShare = 1
	}
	if opt.RetryRedisAfter == 0 {
		opt.RetryRedisAfter = time.Second
	}
	if opt.OpTimeout == 0 {
		opt.OpTimeout = 2 * time.Second
	}
	switch {
	case strings.ContainsAny(opt.Prefix, "{}"):
		return nil, invalidf("prefix %q holds a brace: the keys' hash tags come after it", opt.Prefix)
	case opt.LocalShare < 0 || opt.LocalShare > 1:
		return nil, invalidf("local share %v not in (0, 1]", opt.LocalShare)
	case opt.RetryRedisAfter < 0 || opt.OpTimeout < 0:
		return nil, invalidf("negative duration in %+v", opt)
	case opt.Fallback != FailClosed && opt.Fallback != FallBackLocal:
		return nil, invalidf("unknown fallback %d", opt.Fallback)
	}
	b := &Redis{
		rdb:        rdb,
		opt:        opt,
		proc:       newLeaseID(),
		channel:    opt.Prefix + "notify",
		wakePrefix: opt.Prefix + "wake:",
		acquire:    newScript(acquireSource()),
		release:    newScript(clockSource(freeLua + releaseLua)),
		extend:     newScript(clockSource(extendLua)),
		cooldown:   newScript(clockSource(cooldownLua)),
		pass:       newScript(passLua),
		restoreSc:  newScript(clockSource(restoreLua)),
		members:    newScript(membersSource()),
		swapLimit:  newScript(clockSource(swapLimitLua)),
		loadLimit:  newScript(clockSource(loadLimitLua)),
		learned:    make(map[string]int),
		local:      NewMemory(),
		keys:       make(map[string]*rkey),
		hot:        make(map[string]*hot),
		held:       make(map[string]held),
		heldSweep:  1024,
		quietFor:   localSpan,
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
	}
	// Nothing waits on Redis here: the first probe and the subscription
	// run in the background, and calls wait for the probe's verdict.
	b.probing = true
	go b.probe(0)
	go b.listen()
	return b, nil
}

// Close sends the releases it deferred (see redis_later.go) and stops the
// subscription. Calls after Close fail.
func (b *Redis) Close() error {
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
	holders, cooldown, waiting, epoch, learned string
	windows                                    []string
}

// names returns the Redis keys of throttle key key with the windows ws.
func (b *Redis) names(key string, ws []Window) redisKeys {
	return b.namesIn(hashTag(key), key, ws)
}

// namesIn returns the Redis keys of throttle key key with the windows ws,
// in hash tag tag: a member's key takes its request's tag (namesOf).
func (b *Redis) namesIn(tag, key string, ws []Window) redisKeys {
	base := b.opt.Prefix + "{" + tag + "}" + key
	k := redisKeys{holders: base + ":h", cooldown: base + ":c", waiting: base + ":q",
		epoch: base + ":e", learned: base + ":l"}
	for _, w := range ws {
		k.windows = append(k.windows, base+":w:"+strconv.FormatInt(w.Period.Milliseconds(), 10))
	}
	return k
}

// hashTag returns the Redis Cluster hash tag of key's Redis keys: the key's
// own tag if it has one ("corp" in "{corp}/cgi-bin/tag/list"), so that one
// corp's keys share a slot, else a hash of the whole key. The full key follows
// the tag, so that different keys never share Redis keys.
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

func (b *Redis) validate(r Request) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if strings.ContainsAny(r.Key, "\r\n") {
		return invalidf("key %q holds a line break", r.Key)
	}
	for _, s := range r.With { // a key is a wake-up's message, which a line break makes a grant
		if strings.ContainsAny(s.Key, "\r\n") {
			return invalidf("key %q: with slot %q holds a line break", r.Key, s.Key)
		}
	}
	for _, w := range r.Windows {
		if w.Period < BucketsPerWindow*time.Millisecond {
			return invalidf("key %q: window %s: the Redis backend counts in milliseconds, so periods start at %s", r.Key, w, BucketsPerWindow*time.Millisecond)
		}
	}
	return nil
}

// opCtx bounds one round trip; it is not cancelled with the caller, so that a
// script that ran is always answered and its effect known.
func (b *Redis) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), b.opt.OpTimeout)
}

var _ Backend = (*Redis)(nil)
