// The Redis backend: its options, the Redis type and its lifecycle (NewRedis,
// Close), the Lua scripts it runs, and how throttle keys name Redis keys.
// The other concerns live in files of their own: redis_acquire.go (TryAcquire,
// Acquire), redis_release.go (Release, Extend, Cooldown), redis_queue.go (the
// local line of waiters, line.go's), redis_grant.go (hand-overs and the cross-process grant
// protocol), redis_fallback.go (Redis errors and the local fallback),
// redis_health.go (the probe and the subscription) and redis_epoch.go (what a
// process writes back after Redis lost its state).

package throttle

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
	//go:embed lua/grant.lua
	grantLua string
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

// clockSource returns the source of a script that reads the server's clock:
// the prelude, which defines now (the server's time, unix ms), then buckets
// (BucketsPerWindow, the buckets of a rate window), then body. The scripts
// that release leases start their body with free.lua.
func clockSource(body string) string {
	return preludeLua + "local buckets = " + strconv.Itoa(BucketsPerWindow) + "\n" + body
}

// acquireSource returns the acquire script's source: the prelude, free.lua,
// window.lua, grant.lua and acquire.lua.
func acquireSource() string { return clockSource(freeLua + windowLua + grantLua + acquireLua) }

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
// slot, every rate window, the cooldown and the request's With slots
// together, timed by the Redis server's clock, so that processes with
// skewed clocks agree. Release is one script too, With leases included.
// With slots go in the same script when their keys share the request's
// hash tag and no waiter of this process waits for one of them; otherwise
// they are taken apart, as Request.With says. A slot another process's
// hand-over grants comes with the With slots of the waiter that process
// queued for, taken in that round trip when they are free (each queued
// process records them in Redis); a waiter served by a grant without them
// takes its own with one script each before its call starts. Leases expire
// on the server, so a process that dies frees its slots when their TTL
// ends.
//
// Waiting: within a process, the waiters of a key queue locally in arrival
// order and only the head asks Redis. A Release of the process hands its slot
// straight to a local waiter in the same round trip (the release script also
// grants the next acquisition), so a process busy on a key makes one round
// trip per call in steady state. The head's ask and a hand-over take leases
// for the waiters behind too (without With slots, with the same limits), as
// many as the limits allow, so that slots freed together, or a key with room
// to spare, serve a process's waiters in one round trip rather than one
// each. When another process has waited longer, that
// script grants the slot to that process instead and publishes the lease on
// the channel each process subscribes to once, so that the other process
// starts its call without asking; a grant no waiter there can use goes back
// (on a Cluster it wakes that process instead: see Redis.grants).
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
// a ledger of its own grants still in a window, per window bucket, of the
// cooldowns it set or was refused by, and of each window's fill as its last
// answer showed it (every process's grants, in the acquire script's reply).
// A process that finds another epoch than the one it knew writes its ledger
// back (one script per key) before it takes more; the probe does so for
// every key before calls resume after an outage. What no process wrote back
// (a process that died, or one that has not called since) may have been
// taken as late as the restart, so the window holds a reserve until it has
// slid past the restart: the latest fill any process saw, less the grants
// written back from before it, plus what the fleet could have taken from
// then to the restart at the window's average rate (limit/period), and
// never more than the limit less what was written back (see restore.lua).
// A refusal for the reserve says ReasonReserve. Guaranteed, without
// persistence: no sliding window exceeds its limit because of the restart,
// as long as no process that died took more than that average rate in the
// moments between the fleet's last answer and the restart; a fleet that had
// used a window up before the restart keeps it used up; cooldowns known to a
// live process are kept. A fleet far below its limits goes on at once (a
// minute's window at 2%: a few percent of it is held). Not guaranteed: a
// process that never saw a key's window lately (a new one, say) and calls
// before any process that did has called since the restart is not held back
// by what it cannot know; and concurrency slots held across the restart are
// forgotten (their calls may overlap new ones until they end). A release that
// failed while Redis was away is made when it answers.
//
// Redis that hangs (SIGSTOP, a slow fork, a stalled VM) runs, when it
// resumes, the requests that waited in its sockets, after their senders
// gave up on them: each acquisition carries a server time the process saw
// lately and how long after it the process gives up (by its monotonic
// clock), and one run later takes nothing, so that no slot is held for
// nobody until its TTL.
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
	// grants: a hand-over that yields to another process grants it the
	// slot in its script, and this process records the With slots its
	// waiters wait with, so that the grant may carry them. Not on a
	// Cluster, where a script's PUBLISH counts only the listeners on its
	// own node, so that a grant could reach a process the script took for
	// gone (and served its own waiter with the same lease): there the
	// hand-over frees the slot and wakes the other process.
	grants    bool
	acquire   *redis.Script
	release   *redis.Script
	extend    *redis.Script
	cooldown  *redis.Script
	pass      *redis.Script
	restoreSc *redis.Script
	swapLimit *redis.Script
	loadLimit *redis.Script
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
	_, cluster := rdb.(*redis.ClusterClient)
	b := &Redis{
		rdb:        rdb,
		grants:     !cluster,
		opt:        opt,
		proc:       newLeaseID(),
		channel:    opt.Prefix + "notify",
		wakePrefix: opt.Prefix + "wake:",
		acquire:    redis.NewScript(acquireSource()),
		release:    redis.NewScript(clockSource(freeLua + releaseLua)),
		extend:     redis.NewScript(clockSource(extendLua)),
		cooldown:   redis.NewScript(clockSource(cooldownLua)),
		pass:       redis.NewScript(passLua),
		restoreSc:  redis.NewScript(clockSource(restoreLua)),
		swapLimit:  redis.NewScript(clockSource(swapLimitLua)),
		loadLimit:  redis.NewScript(clockSource(loadLimitLua)),
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

// redisKeys names the Redis keys of a throttle key. records (a HASH beside
// waiting) holds, per queued process, the With slots its next waiter waits
// with (see lua/grant.lua).
type redisKeys struct {
	holders, cooldown, waiting, records, epoch, learned string
	windows                                             []string
}

// names returns the Redis keys of throttle key key with the windows ws.
func (b *Redis) names(key string, ws []Window) redisKeys {
	base := b.opt.Prefix + "{" + hashTag(key) + "}" + key
	k := redisKeys{holders: base + ":h", cooldown: base + ":c", waiting: base + ":q", records: base + ":r",
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
