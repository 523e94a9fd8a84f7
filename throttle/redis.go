package throttle

import (
	"container/list"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The atomic steps of the Redis backend, one Lua script each.
var (
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
	//go:embed lua/restore.lua
	restoreLua string
)

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
// server's clock, so that processes with skewed clocks agree. Release is one
// script too. Leases expire on the server, so a process that dies frees its
// slots when their TTL ends.
//
// Waiting: within a process, the waiters of a key queue locally in arrival
// order and only the head asks Redis. A Release of the process hands its slot
// straight to a local waiter in the same round trip (the release script also
// grants the next acquisition), so a process busy on a key makes one round
// trip per call in steady state. When another process has waited longer, that
// script grants the slot to that process instead and publishes the lease on
// the channel each process subscribes to once, so that the other process
// starts its call without asking; a grant no waiter there can use goes back.
// A release that has no local waiter to serve wakes the process that has
// waited longest on the same channel; a timer at the time the script names (a
// window opening, a cooldown ending, the next lease expiry) covers the rest,
// and a resync every second covers notifications lost while the subscription
// reconnects. A grant in flight to a process that dies or closes at that
// moment holds its slot until the lease TTL ends, as a holder that dies does.
//
// Fairness: within a process, a freed slot goes to the first waiter in
// arrival order that is not itself asking Redis at that moment (the head may
// be), so the order is kept except around a head's own round trip. Across
// processes, a process with waiters queues in Redis, and a hand-over yields
// the slot to a process that has waited longer: it grants the slot to that
// process and its own waiter waits on. A process served while it still has
// waiters queues again at the back, so busy processes take turns. Turns are kept
// approximately, not strictly: a head that asks at the moment a slot frees
// may take it before the woken process arrives. No process starves: measured,
// one waiter against eight in another process gets 38-39% of the grants on a
// key with two slots, and four against four 45-55%
// (TestRedisProcessesTakeTurns).
//
// Keys: prefix + "{tag}" + the key, the tag being the key's own Redis Cluster
// hash tag if it has one ("{corp}"), or a hash of the key if not, so that every
// Redis key of one throttle key is in one slot and different corps spread.
// Keys expire when idle.
//
// Redis down: no call waits on a Redis known to be down, and one probe
// alone talks to it. After a round trip fails for want of Redis,
// acquisitions fail at once with ErrUnavailable (or use the local fallback),
// Extend and Cooldown fail at once, and releases are kept and made when Redis
// answers again, so that a slot released in the outage does not wait for its
// TTL. The probe, a PING every RetryRedisAfter in a goroutine of its own, is
// the only round trip meanwhile. Before the first probe has answered (a new
// backend), and after the subscription broke until a probe answers, calls
// wait for that one probe's verdict, bounded by their context and
// OpTimeout, instead of each dialing Redis. Every round trip is bounded by
// OpTimeout whatever the client's own retries and timeouts: a call that went
// to Redis just as it died waits at most that long. A new backend does not
// dial in NewRedis.
//
// Redis restarted empty (no persistence, a failover to an empty replica,
// FLUSHALL, an eviction): every key with rate windows has an epoch key in its
// own slot, so that each node of a Cluster is judged on its own, and the
// acquire script checks it (one GET, no extra round trip). Each process keeps
// a ledger of its own grants still in a window, per window bucket, and of the
// cooldowns it set or was refused by. A process that finds another epoch than
// the one it knew writes its ledger back (one script per key) before it takes
// more; the probe does so for every key before calls resume after an
// outage. What no process wrote back (a process that died, or one that has
// not called since) may have been taken as late as the restart, so the window
// holds it as taken until it has slid past the restart: the limit minus what
// was written back counts as used for one window period. Guaranteed, without
// persistence: no sliding window exceeds its limit because of the restart,
// and cooldowns known to a live process are kept; the price is capacity, as a
// window that was not full before the restart admits only what slides out of
// the written-back history for one period. Not guaranteed: a process that
// never took a grant on a key within its window (a new one, say) and calls
// before any process that did has called since the restart is not held back
// by what it cannot know; and concurrency slots held across the restart are
// forgotten (their calls may overlap new ones until they end). A release that
// failed while Redis was away is made when it answers.
//
// Persistence recommended: appendonly yes with appendfsync everysec. After a
// restart the windows, the leases and the cooldowns are then Redis's own
// again, and the fleet keeps its capacity; the epoch comes back with them, so
// the second or so of grants a crash may lose is not seen (at most that much
// may be taken twice). RDB snapshots alone are worse than none: the epoch
// comes back from the snapshot, and the minutes of grants since it are lost
// unseen. Use a maxmemory-policy that never evicts these keys (noeviction,
// or volatile-* with nothing else volatile): an evicted epoch is taken for a
// loss, which is safe but costs capacity.
//
// The backend prints nothing. go-redis itself logs failed dials ("failed to
// dial after 5 attempts") through its package-wide logger; a program that
// wants them quiet sets its own once, before using Redis:
//
//	type quiet struct{}
//	func (quiet) Printf(context.Context, string, ...any) {}
//	...
//	redis.SetLogger(quiet{})
//
// NewRedis starts the probe and the subscription in goroutines that Close
// stops.
type Redis struct {
	rdb        redis.UniversalClient
	opt        RedisOptions
	proc       string // this backend's id among the waiting processes
	channel    string // broadcast: cooldowns, to every process
	wakePrefix string // wake-ups: wakePrefix + proc reaches this process only
	acquire    *redis.Script
	release    *redis.Script
	extend     *redis.Script
	cooldown   *redis.Script
	pass       *redis.Script
	restoreSc  *redis.Script
	swapLimit  *redis.Script
	// learned are the learned limits this process last read or wrote
	// (LoadLimit, SwapLimit), by key: they cap every acquisition on the key.
	learnedMu sync.Mutex
	learned   map[string]int
	local     *Memory    // the fallback
	ledger    ledger     // what Redis would lose in a restart, as far as this process knows
	restoreMu sync.Mutex // one restore at a time

	mu   sync.Mutex
	keys map[string]*rkey
	// health is Redis as this process knows it: healthUnknown until the
	// first probe answers, then healthUp or healthDown. Written under mu.
	health  atomic.Int32
	probing bool          // the probe (see probe) runs
	changed chan struct{} // closed and replaced when health or probing changes
	orphans []Lease       // releases that failed for want of Redis, retried when it answers
	pubsub  *redis.PubSub // the subscription listen holds, nil between connections
	done    chan struct{}
}

// maxOrphans bounds the releases kept for retry while Redis is down; a lease
// past it frees its slot when its TTL ends, as a holder that dies does.
const maxOrphans = 10000

// rkey is the local state of one key: its queue of waiters and the signal
// that wakes the head.
type rkey struct {
	queue list.List // of *rwaiter
	wake  chan struct{}
	// targeted: the last wake-up was this process's turn for a slot (not a
	// cooldown broadcast), so a head that cannot use it passes it on.
	targeted bool
	// refused is the head's last refusal, which a waiter arriving behind it
	// uses to fail at once as the head would (a cooldown it does not wait out,
	// a wait past its deadline).
	refused *refusal
	// full: a hand-over found every slot held and queued this process again
	// for its other waiters, so the next head waits without asking first.
	full bool
}

// refusal is a head's refusal: the verdict, the server's time then, and the
// local time it was seen.
type refusal struct {
	v         verdict
	now, seen time.Time
}

// failsAtOnce returns the error a waiter arriving behind a head refused for
// f gets at once, as the head would: a cooldown it does not wait out, or a
// known wait past its deadline. Nil means it queues.
func (f *refusal) failsAtOnce(ctx context.Context, r Request) error {
	if f == nil || f.v.reason == ReasonConcurrency {
		return nil
	}
	left := f.v.at.Sub(f.now) - time.Since(f.seen)
	if left <= 0 {
		return nil
	}
	if f.v.reason == ReasonCooldown && !r.WaitCooldown || deadlineBefore(ctx, time.Now().Add(left)) {
		return &LimitError{Key: r.Key, Reason: f.v.reason, RetryAfter: left}
	}
	return nil
}

type rwaiter struct {
	req  Request
	turn chan struct{} // closed when the waiter reaches the head, or fails
	err  error         // set before turn closes, when the head failed this waiter
	// slot receives a lease a Release of this process handed over, or, after
	// a claim, a zero Lease when the hand-over got none. It holds at most one.
	slot chan Lease

	// Guarded by Redis.mu:
	busy    bool // the head is in a round trip of its own
	claimed bool // a Release is getting a slot for it; one message on slot follows
	gone    bool // it left the queue
	// yielded: its hand-over granted the slot to another process and queued
	// this one, so it waits for its turn without asking first.
	yielded bool
}

// available reports whether w may be handed a slot now: it is free and not
// asking Redis itself. The caller holds Redis.mu.
func (w *rwaiter) available() bool { return !w.busy && w.free() }

// free reports whether a lease may be sent to w: nothing is claimed for it or
// waits in its slot, and it has not left. The caller holds Redis.mu.
func (w *rwaiter) free() bool { return !w.claimed && !w.gone && len(w.slot) == 0 }

// waiterFor returns the first waiter of k in arrival order that a lease
// granted under r's limits may be sent to: one that is available, else, with
// busyToo, one that is free though asking Redis itself. Nil if none.
// Limits are compared as capped makes them (by the learned limits). The
// caller holds Redis.mu.
func (k *rkey) waiterFor(r Request, busyToo bool, capped func(Request) Request) *rwaiter {
	var asking *rwaiter
	for e := k.queue.Front(); e != nil; e = e.Next() {
		w := e.Value.(*rwaiter)
		switch {
		case !w.free() || !sameLimits(capped(w.req), capped(r)):
		case !w.busy:
			return w
		case busyToo && asking == nil:
			asking = w
		}
	}
	return asking
}

// NewRedis returns a Redis backend on rdb (a single node, Sentinel or Cluster
// client).
func NewRedis(rdb redis.UniversalClient, opt RedisOptions) (*Redis, error) {
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
		acquire:    redis.NewScript(acquireLua),
		release:    redis.NewScript(releaseLua),
		extend:     redis.NewScript(extendLua),
		cooldown:   redis.NewScript(cooldownLua),
		pass:       redis.NewScript(passLua),
		restoreSc:  redis.NewScript(restoreLua),
		swapLimit:  redis.NewScript(swapLimitLua),
		learned:    make(map[string]int),
		local:      NewMemory(),
		keys:       make(map[string]*rkey),
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

// Close stops the subscription. Calls after Close fail.
func (b *Redis) Close() error {
	select {
	case <-b.done:
		return nil
	default:
	}
	close(b.done)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pubsub != nil {
		return b.pubsub.Close()
	}
	return nil
}

// dispatch wakes the head waiter of the key a release or cooldown names, or
// takes a grant published to this process. A wake-up for a key nobody here
// waits on any more goes to the next process.
func (b *Redis) dispatch(m *redis.Message) {
	if m.Channel != b.channel && strings.Contains(m.Payload, "\n") {
		b.takeGrant(m.Payload)
		return
	}
	b.mu.Lock()
	k := b.keys[m.Payload]
	if k != nil {
		if m.Channel != b.channel {
			k.targeted = true
		}
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	if k == nil && m.Channel != b.channel {
		b.passOn(m.Payload)
	}
}

// grant is a slot another process's hand-over granted this process.
type grant struct {
	lease Lease
	req   Request // the key and the limits it was granted under, in milliseconds
}

// parseGrant reads a grant the acquire script published: the lines key,
// lease id, granted and expires (unix ms), concurrency, TTL (ms), and a limit
// and period (ms) per window. A malformed message still yields the key and
// lease id when they are there, so that the slot can be released.
func parseGrant(msg string) (grant, error) {
	f := strings.Split(msg, "\n")
	var g grant
	if len(f) < 2 || f[0] == "" || f[1] == "" {
		return g, fmt.Errorf("throttle: malformed grant %q", msg)
	}
	g.req.Key, g.lease.Key, g.lease.ID = f[0], f[0], f[1]
	bad := func() (grant, error) { return g, fmt.Errorf("throttle: malformed grant for %q", g.req.Key) }
	if len(f) < 7 || len(f)%2 != 1 {
		return bad()
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[2+i], 10, 64)
		if err != nil || v <= 0 {
			return bad()
		}
		n[i] = v
	}
	g.lease.Granted, g.lease.Expires = time.UnixMilli(n[0]), time.UnixMilli(n[1])
	g.req.Concurrency, g.req.TTL = int(n[2]), time.Duration(n[3])*time.Millisecond
	g.lease.Concurrency = g.req.Concurrency
	weight, err := strconv.Atoi(f[6])
	if err != nil || weight <= 0 {
		return bad()
	}
	g.req.Weight = weight
	for i := 7; i < len(f); i += 2 {
		limit, err1 := strconv.Atoi(f[i])
		period, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || limit <= 0 || period < BucketsPerWindow || period > math.MaxInt64/int64(time.Millisecond) {
			return bad()
		}
		g.req.Windows = append(g.req.Windows, Window{Limit: limit, Period: time.Duration(period) * time.Millisecond})
	}
	if g.req.Validate() != nil || n[1] < n[0] {
		return bad()
	}
	return g, nil
}

// takeGrant gives a slot that another process's hand-over granted this one
// (msg, as published) to a waiter of the key with the limits it was granted
// under: the first in arrival order that is not asking Redis itself, else one
// that is (its own answer then decides which lease it keeps; leave hands the
// other on). The grant queued this process again; with no waiter left to want
// more, it leaves that queue. A slot no waiter can use goes back, its window
// counts refunded.
func (b *Redis) takeGrant(msg string) {
	g, err := parseGrant(msg)
	if err != nil {
		if g.lease.ID != "" { // release what can be named, refunding nothing
			b.giveBack(Lease{Key: g.req.Key, ID: g.lease.ID}, Request{Key: g.req.Key})
		}
		return
	}
	b.ledger.add(g.req.Key, g.req.Windows, g.lease.Granted.UnixMilli(), g.req.units())
	b.mu.Lock()
	var (
		to     *rwaiter
		others int // waiters left wanting slots
	)
	k := b.keys[g.req.Key]
	if k != nil {
		to, others = k.waiterFor(g.req, true, b.capped), k.queue.Len()
	}
	if to != nil {
		others--
		to.slot <- g.lease // never blocks: it was empty, and b.mu is held
		k.full = k.full || others > 0
	}
	b.mu.Unlock()
	if others == 0 {
		b.unqueue(g.req.Key)
	}
	if to == nil {
		b.giveBack(g.lease, g.req)
	}
}

// unqueue takes this process out of the key's waiting processes.
func (b *Redis) unqueue(key string) {
	if b.isDown() {
		return // the queue entry expires; a grant it gets goes back
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	_ = b.rdb.ZRem(octx, b.names(key, nil).waiting, b.proc).Err() // lost: a grant it gets goes back
}

// passOn wakes the next process waiting on key.
func (b *Redis) passOn(key string) {
	if b.isDown() {
		return // waiters' timers still run
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	_ = b.pass.Run(octx, b.rdb, []string{b.names(key, nil).waiting}, b.wakePrefix, key).Err() // lost: waiters' timers still run
}

// redisKeys names the Redis keys of a throttle key.
type redisKeys struct {
	holders, cooldown, waiting, epoch, learned string
	windows                                    []string
}

func (b *Redis) names(key string, ws []Window) redisKeys {
	base := b.opt.Prefix + "{" + hashTag(key) + "}" + key
	k := redisKeys{holders: base + ":h", cooldown: base + ":c", waiting: base + ":q", epoch: base + ":e", learned: base + ":l"}
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

// attempt runs the acquire script once. A waiting head (queue) queues its
// process for a wake-up when refused a slot; granted, the process leaves that
// queue, or with requeue (more of its waiters wait) goes to its back. With a
// lease to release first (a hand-over), held reports whether that lease still
// held its slot.
func (b *Redis) attempt(ctx context.Context, r Request, take, queue bool, release string, requeue bool) (l Lease, v verdict, now time.Time, held bool, err error) {
	for range 2 {
		var h bool
		l, v, now, h, err = b.attemptOnce(ctx, r, take, queue, release, requeue)
		held = held || h
		if err != nil || v.reason != reasonLost {
			break
		}
		// Redis lost the key's state: write back what this process knows
		// before it takes more, then ask again.
		if err = b.restore(ctx, r.Key); err != nil {
			break
		}
	}
	if err == nil && v.reason == reasonLost {
		v = verdict{reason: ReasonConcurrency} // lost again at once: wait, and ask again
	}
	return l, v, now, held, err
}

// reasonLost is the acquire script's answer to a process that knew another
// epoch of the key: Redis lost the key's state.
const reasonLost Reason = 5

// attemptOnce runs the acquire script once (see attempt).
func (b *Redis) attemptOnce(ctx context.Context, r Request, take, queue bool, release string, requeue bool) (l Lease, v verdict, now time.Time, held bool, err error) {
	k := b.names(r.Key, r.Windows)
	keys := append([]string{k.holders, k.cooldown, k.waiting, k.epoch}, k.windows...)
	id := newLeaseID()
	epoch := ""
	if len(r.Windows) > 0 {
		epoch = b.ledger.epoch(r.Key)
	}
	conc := b.capped(r).Concurrency
	args := []any{id, conc, r.LeaseTTL().Milliseconds(), 0, "", release, b.wakePrefix, r.Key, 0, epoch, r.units()}
	if take {
		args[3] = 1
	}
	if requeue {
		args[8] = 1
	}
	if queue {
		args[4] = b.proc
	}
	for _, w := range r.Windows {
		args = append(args, w.Limit, w.Period.Milliseconds())
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	raw, err := b.acquire.Run(octx, b.rdb, keys, args...).Slice()
	if err != nil {
		return Lease{}, verdict{}, time.Time{}, false, err
	}
	res, told, err := parseAnswer(raw)
	if err != nil {
		return Lease{}, verdict{}, time.Time{}, false, err
	}
	if told != "" && Reason(res[1]) != reasonLost {
		b.ledger.learn(r.Key, told)
	}
	held = res[4] == 1
	if res[0] == 1 {
		l := Lease{Key: r.Key, ID: id, Granted: time.UnixMilli(res[1])}
		if res[2] > 0 {
			l.Expires, l.Concurrency = time.UnixMilli(res[2]), conc
		}
		b.ledger.add(r.Key, r.Windows, res[1], r.units())
		return l, verdict{ok: true}, l.Granted, held, nil
	}
	v = verdict{reason: Reason(res[1])}
	if res[2] > 0 {
		v.at = time.UnixMilli(res[2])
		if v.reason == ReasonCooldown {
			b.ledger.cooldown(r.Key, res[2])
		}
	}
	return Lease{}, v, time.UnixMilli(res[3]), held, nil
}

// parseAnswer reads the acquire script's answer: five integers, and the
// key's epoch when the process did not know it.
func parseAnswer(raw []any) (res [5]int64, epoch string, err error) {
	if len(raw) != 5 && len(raw) != 6 {
		return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
	}
	for i := range res {
		n, ok := raw[i].(int64)
		if !ok {
			return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
		}
		res[i] = n
	}
	if len(raw) == 6 {
		if epoch, _ = raw[5].(string); epoch == "" {
			return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
		}
	}
	return res, epoch, nil
}

// failed classifies a Redis error. An outage (no connection, a timeout of the
// round trip itself, as the caller's cancellation never reaches it, or a
// server that says it cannot serve) marks Redis down for RetryRedisAfter; an
// error the server answered otherwise (a script error, say) is returned as
// it is, for it says nothing about reachability.
func (b *Redis) failed(op string, err error) (outage bool, _ error) {
	var rerr redis.Error
	if errors.As(err, &rerr) && !unavailableReply(rerr.Error()) {
		return false, fmt.Errorf("throttle: redis %s: %w", op, err)
	}
	b.markDown()
	return true, fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// errDown is the error of a call refused at once while Redis is deemed down.
func (b *Redis) errDown() error {
	return fmt.Errorf("%w: Redis did not answer, and has not answered a probe since", ErrUnavailable)
}

// unavailableReply reports whether a Redis error reply means the server
// cannot serve now, rather than that the command was wrong.
func unavailableReply(msg string) bool {
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "TRYAGAIN", "BUSY", "NOREPLICAS"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// instead answers an acquisition while Redis is down: from the local
// fallback, or with an error matching ErrUnavailable (fail closed).
func (b *Redis) instead(ctx context.Context, r Request, try bool, cause error) (Lease, error) {
	if b.opt.Fallback != FallBackLocal {
		if cause == nil {
			cause = b.errDown()
		}
		return Lease{}, cause
	}
	if try {
		return fromLocal(b.local.TryAcquire(ctx, b.share(r)))
	}
	return fromLocal(b.local.Acquire(ctx, b.share(r)))
}

// share cuts r's limits to the process's share, for the fallback.
func (b *Redis) share(r Request) Request {
	cut := func(n int) int { return max(1, int(math.Floor(float64(n)*b.opt.LocalShare))) }
	if r.Concurrency > 0 {
		r.Concurrency = cut(r.Concurrency)
	}
	ws := make([]Window, len(r.Windows))
	for i, w := range r.Windows {
		ws[i] = Window{Limit: cut(w.Limit), Period: w.Period}
	}
	r.Windows = ws
	return r
}

// localLease marks leases of the fallback, so that Release routes them there.
const localLease = "local:"

func fromLocal(l Lease, err error) (Lease, error) {
	l.ID = localLease + l.ID
	return l, err
}

// TryAcquire implements Backend.
func (b *Redis) TryAcquire(ctx context.Context, r Request) (Lease, error) {
	if err := b.validate(r); err != nil {
		return Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if down, err := b.ready(ctx); err != nil {
		return Lease{}, err
	} else if down {
		return b.instead(ctx, r, true, nil)
	}
	b.mu.Lock()
	queued := b.keys[r.Key] != nil && b.keys[r.Key].queue.Len() > 0
	b.mu.Unlock()
	l, v, now, _, err := b.attempt(ctx, r, !queued, false, "", false)
	if err != nil {
		outage, err := b.failed("acquire", err)
		if outage {
			return b.instead(ctx, r, true, err)
		}
		return Lease{}, err
	}
	if v.ok && queued {
		v = verdict{reason: ReasonConcurrency} // local waiters came first
	}
	if !v.ok {
		return Lease{}, v.err(r.Key, now)
	}
	return l, nil
}

// Acquire implements Backend.
func (b *Redis) Acquire(ctx context.Context, r Request) (Lease, error) {
	if err := b.validate(r); err != nil {
		return Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if down, err := b.ready(ctx); err != nil {
		return Lease{}, err
	} else if down {
		return b.instead(ctx, r, false, nil)
	}
	// Queue locally; only the head of a key's queue talks to Redis, and a
	// Release of this process may hand its slot to any waiter.
	b.mu.Lock()
	k := b.keys[r.Key]
	if k == nil {
		k = &rkey{wake: make(chan struct{}, 1)}
		b.keys[r.Key] = k
	}
	if k.queue.Len() > 0 {
		if err := k.refused.failsAtOnce(ctx, r); err != nil {
			b.mu.Unlock()
			return Lease{}, err
		}
	}
	w := &rwaiter{req: r, turn: make(chan struct{}), slot: make(chan Lease, 1)}
	e := k.queue.PushBack(w)
	if k.queue.Front() == e {
		close(w.turn)
	}
	b.mu.Unlock()
	served := false
	defer b.leave(r.Key, k, e, w, &served)

	for head := false; !head; {
		select {
		case <-w.turn:
			if w.err != nil {
				return Lease{}, w.err
			}
			head = true
		case l := <-w.slot:
			if l, ok := b.accept(ctx, l, r); ok {
				served = true
				return l, nil
			}
		case <-ctx.Done():
			return Lease{}, ctx.Err()
		case <-b.done:
			return Lease{}, errClosed()
		}
	}
	woken := false
	for first := true; ; first = false {
		if down, err := b.ready(ctx); err != nil { // Redis failed while this waiter queued
			return Lease{}, err
		} else if down {
			return b.instead(ctx, r, false, nil)
		}
		b.mu.Lock()
		// A Release handing a slot over (claimed, or already sent): take it
		// rather than ask. Right after a hand-over that found every slot held
		// and queued this process again, the next head waits without asking.
		skip := w.claimed || len(w.slot) > 0 || first && k.full || w.yielded && !woken
		k.full, w.yielded = false, false
		w.busy = !skip
		more := k.queue.Len() > 1
		b.mu.Unlock()
		// Wait for a hand-over, a release or cooldown notice, for the time
		// the script named, or for a resync.
		d := time.Second
		if !skip {
			l, v, now, _, err := b.attempt(ctx, r, true, true, "", more)
			b.mu.Lock()
			w.busy = false
			if err == nil && v.ok {
				k.refused = nil
				if !more { // this process left the waiting queue
					k.full = false
				}
			} else if err == nil {
				k.refused = &refusal{v: v, now: now, seen: time.Now()}
			}
			b.mu.Unlock()
			if err != nil {
				outage, err := b.failed("acquire", err)
				if outage {
					return b.instead(ctx, r, false, err)
				}
				return Lease{}, err
			}
			if v.ok {
				if ctx.Err() != nil {
					// Granted as the caller gave up: the call never starts.
					b.giveBack(l, r)
					return Lease{}, ctx.Err()
				}
				served = true
				return l, nil
			}
			if v.reason == ReasonCooldown {
				b.failNonWaiting(k, e, v.err(r.Key, now))
			}
			if woken && v.reason != ReasonConcurrency {
				// Woken for a slot this head cannot use now: the next process can.
				b.passOn(r.Key)
			}
			woken = false
			if v.reason == ReasonCooldown && !r.WaitCooldown ||
				v.reason != ReasonConcurrency && deadlineBefore(ctx, time.Now().Add(v.at.Sub(now))) {
				return Lease{}, v.err(r.Key, now)
			}
			if !v.at.IsZero() {
				d = min(d, v.at.Sub(now)+time.Millisecond)
			}
		}
		t := time.NewTimer(d)
		select {
		case <-k.wake:
			b.mu.Lock()
			woken, k.targeted = k.targeted, false
			b.mu.Unlock()
		case <-t.C:
		case l := <-w.slot:
			if l, ok := b.accept(ctx, l, r); ok {
				t.Stop()
				served = true
				return l, nil
			}
		case <-ctx.Done():
			t.Stop()
			return Lease{}, ctx.Err()
		case <-b.done:
			t.Stop()
			return Lease{}, errClosed()
		}
		t.Stop()
	}
}

// reasonYielded is the acquire script's answer to a hand-over that left the
// slot to another process.
const reasonYielded Reason = 4

// errClosed is what a waiter gets when the backend is closed under it.
func errClosed() error { return fmt.Errorf("%w: closed", ErrUnavailable) }

// accept takes what a Release handed over: a lease, or a zero Lease when it
// got none. A lease the waiter can no longer use (ctx ended) is given back.
func (b *Redis) accept(ctx context.Context, l Lease, r Request) (Lease, bool) {
	if l.ID == "" {
		return Lease{}, false
	}
	if ctx.Err() != nil {
		b.giveBack(l, r)
		return Lease{}, false
	}
	return l, true
}

// settle delivers the result of a hand-over to the waiter w claimed for it,
// or, if w left meanwhile, hands the lease on. requeued: the hand-over
// granted a slot and queued this process again for its other waiters.
// yielded: it granted the slot to another process and queued this one.
func (b *Redis) settle(key string, w *rwaiter, l Lease, requeued, yielded bool) {
	b.mu.Lock()
	w.claimed = false
	w.yielded = yielded
	if k := b.keys[key]; k != nil && requeued && l.ID != "" {
		k.full = true
	}
	if !w.gone {
		w.slot <- l // never blocks: a claimed waiter is sent nothing else
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	if l.ID != "" {
		b.handOn(key, l, w.req)
	}
}

// handOn gives a lease granted for r, which its waiter cannot use, to another
// waiter of the key with the same limits, or back to Redis.
func (b *Redis) handOn(key string, l Lease, r Request) {
	b.mu.Lock()
	if k := b.keys[key]; k != nil {
		if w := k.waiterFor(r, false, b.capped); w != nil {
			w.slot <- l
			b.mu.Unlock()
			return
		}
	}
	b.mu.Unlock()
	b.giveBack(l, r)
}

// sameLimits reports whether a lease granted for a may serve b: the same
// concurrency, lease TTL and windows, as the Redis backend counts them (in
// whole milliseconds, so that a grant parsed from Redis compares too).
func sameLimits(a, b Request) bool {
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	if a.Concurrency != b.Concurrency || ms(a.LeaseTTL()) != ms(b.LeaseTTL()) || len(a.Windows) != len(b.Windows) || a.units() != b.units() {
		return false
	}
	for i, w := range a.Windows {
		if w.Limit != b.Windows[i].Limit || ms(w.Period) != ms(b.Windows[i].Period) {
			return false
		}
	}
	return true
}

// failNonWaiting fails the waiters queued behind head that do not wait out
// cooldowns, the key being in one.
func (b *Redis) failNonWaiting(k *rkey, head *list.Element, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for e := head.Next(); e != nil; {
		next := e.Next()
		if w := e.Value.(*rwaiter); !w.req.WaitCooldown {
			w.err = err
			k.queue.Remove(e)
			close(w.turn)
		}
		e = next
	}
}

// leave takes a waiter out of its key's queue and hands the turn on. A lease
// handed over to it that it did not take goes to another waiter. The last
// waiter of a key to leave without a lease passes on any wake-up it may have
// taken, so that a freed slot does not wait for a timer.
func (b *Redis) leave(key string, k *rkey, e *list.Element, w *rwaiter, served *bool) {
	b.mu.Lock()
	w.gone = true
	var orphan Lease
	select {
	case orphan = <-w.slot:
	default:
	}
	wasHead := k.queue.Front() == e
	k.queue.Remove(e) // a no-op if the head already failed it
	empty := k.queue.Len() == 0
	if empty {
		if b.keys[key] == k { // a waiter failed earlier may leave after a new entry
			delete(b.keys, key)
		}
	} else if wasHead {
		close(k.queue.Front().Value.(*rwaiter).turn)
	}
	b.mu.Unlock()
	if orphan.ID != "" {
		b.handOn(key, orphan, w.req)
	}
	if empty && wasHead && !*served {
		b.passOn(key)
	}
}

// giveBack releases a lease and refunds its window counts.
func (b *Redis) giveBack(l Lease, r Request) {
	k := b.names(r.Key, r.Windows)
	keys := append([]string{k.holders, k.waiting}, k.windows...)
	args := []any{l.ID, b.wakePrefix, r.Key, l.Granted.UnixMilli(), r.units()}
	for _, w := range r.Windows {
		args = append(args, w.Period.Milliseconds())
	}
	if b.isDown() {
		if l.HoldsSlot() {
			b.orphan(l) // released, without a refund, when Redis answers
		}
		return
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	if b.release.Run(octx, b.rdb, keys, args...).Err() == nil { // on failure the TTL frees the slot
		b.ledger.remove(r.Key, r.Windows, l.Granted.UnixMilli(), r.units())
	}
}

// Release implements Backend. When a waiter of this process waits for the
// key and no other process has waited longer, the slot is handed straight
// over to it, in the same round trip.
func (b *Redis) Release(ctx context.Context, l Lease) error {
	if strings.HasPrefix(l.ID, localLease) {
		l.ID = strings.TrimPrefix(l.ID, localLease)
		return b.local.Release(ctx, l)
	}
	if !l.HoldsSlot() {
		return nil
	}
	if down, err := b.ready(ctx); err != nil {
		return err
	} else if down {
		b.orphan(l)
		return b.errDown()
	}
	b.mu.Lock()
	var (
		next *rwaiter
		more bool
	)
	if k := b.keys[l.Key]; k != nil {
		for e := k.queue.Front(); e != nil; e = e.Next() {
			if w := e.Value.(*rwaiter); w.available() {
				next, w.claimed = w, true
				break
			}
		}
		more = k.queue.Len() > 1
	}
	b.mu.Unlock()
	if next != nil {
		// Hand the slot over in one round trip, unless another process has
		// waited longer for it; this process stays queued if more wait.
		got, v, _, held, err := b.attempt(ctx, next.req, true, true, l.ID, more)
		b.settle(l.Key, next, got, more, err == nil && v.reason == reasonYielded)
		switch {
		case err != nil:
			outage, err := b.failed("release", err)
			if outage {
				b.orphan(l)
			}
			return err
		case !held:
			return ErrLeaseNotHeld
		}
		return nil
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	k := b.names(l.Key, nil)
	n, err := b.release.Run(octx, b.rdb, []string{k.holders, k.waiting}, l.ID, b.wakePrefix, l.Key, 0).Int64()
	switch {
	case err != nil:
		outage, err := b.failed("release", err)
		if outage {
			b.orphan(l)
		}
		return err
	case n == 0:
		return ErrLeaseNotHeld
	}
	return nil
}

// Extend implements Backend.
func (b *Redis) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl < time.Millisecond {
		return l, invalidf("key %q: TTL %s under a millisecond", l.Key, ttl)
	}
	if strings.HasPrefix(l.ID, localLease) {
		l.ID = strings.TrimPrefix(l.ID, localLease)
		return fromLocal(b.local.Extend(ctx, l, ttl))
	}
	if down, err := b.ready(ctx); err != nil {
		return l, err
	} else if down {
		return l, b.errDown()
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	exp, err := b.extend.Run(octx, b.rdb, []string{b.names(l.Key, nil).holders}, l.ID, ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		_, err = b.failed("extend", err)
		return l, err
	case exp == 0:
		return l, ErrLeaseNotHeld
	}
	l.Expires = time.UnixMilli(exp)
	return l, nil
}

// Cooldown implements Backend.
func (b *Redis) Cooldown(ctx context.Context, key string, d time.Duration) error {
	if key == "" {
		return invalidf("empty key")
	}
	if d <= 0 {
		return nil
	}
	if down, err := b.ready(ctx); err != nil {
		return err
	} else if down {
		// Keep this process off the API at least, and Redis once it answers.
		_ = b.local.Cooldown(ctx, key, d)
		b.ledger.cooldown(key, time.Now().Add(d).UnixMilli())
		return b.errDown()
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	end, err := b.cooldown.Run(octx, b.rdb, []string{b.names(key, nil).cooldown}, max(1, d.Milliseconds()), b.channel, key).Int64()
	if err == nil {
		b.ledger.cooldown(key, end)
	}
	if err != nil {
		// Keep this process off the API at least, and Redis once it answers.
		_ = b.local.Cooldown(ctx, key, d)
		b.ledger.cooldown(key, time.Now().Add(d).UnixMilli())
		_, err = b.failed("cooldown", err)
		return err
	}
	return nil
}

var _ Backend = (*Redis)(nil)
