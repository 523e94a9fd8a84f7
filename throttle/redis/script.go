// The acquire script of the Redis backend behind a typed call: what one run
// is asked (acquireArgs), how that becomes KEYS and ARGV, and what it
// answered (acquireResult).

package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// acquireArgs is one run of the acquire script, whose ARGV (script) is
// described in lua/acquire.lua.
type acquireArgs struct {
	r       throttle.Request // what to take, without With slots (taken apart)
	take    bool             // take r; false only checks (want)
	batch   int              // with take, leases for other waiters besides (want)
	queue   bool             // a local line's head asks: queue when refused (proc)
	release throttle.Lease   // a hand-over: the lease to release first (release_id)
	requeue bool             // with a grant, stay queued at the back (requeue)
	block   int              // window units to take ahead (block, see blockFor)
	span    time.Duration    // with block, how long they may start calls (block_in, see spanFor)
	plain   bool             // a lock's take, with no release: a plain SET first (takeLock)
}

// acquireResult is what one run of the acquire script answered.
type acquireResult struct {
	lease throttle.Lease   // granted, when v.ok
	extra []throttle.Lease // the batch's leases granted besides, up to acquireArgs.batch
	v     throttle.Verdict // the grant, or the refusal and when it may end
	now   time.Time
	held  bool // the lease released (acquireArgs.release) still held its slot
	full  bool // granted, and every slot of the key is held now
	// gaveBack: granted, but the answer was read in a later era than the
	// ask was sent in, and the grant given back (see attemptOnce).
	gaveBack bool
}

// serverRef is a time the server answered this process (unix ms) and when
// the answer came by the monotonic clock, so that a request can say, in the
// server's time and without this process's clock, when it is void.
type serverRef struct {
	mu  sync.Mutex
	ms  int64
	got time.Time
}

// saw records a time the server answered.
func (s *serverRef) saw(ms int64) {
	s.mu.Lock()
	s.ms, s.got = ms, time.Now()
	s.mu.Unlock()
}

// now estimates the server's clock now from its last answer (the local
// clock before any).
func (s *serverRef) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ms == 0 {
		return time.Now()
	}
	return time.UnixMilli(s.ms).Add(time.Since(s.got))
}

// deadline returns the latest reference and how long after it (ms) a
// request sent now is void: the time since the reference, the round trip's
// timeout and a second for clocks that run apart. (0, 0) before any answer.
func (s *serverRef) deadline(timeout time.Duration) (ref, maxAge int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ms == 0 {
		return 0, 0
	}
	return s.ms, (time.Since(s.got) + timeout + time.Second).Milliseconds()
}

// attempt runs the acquire script for a, and after Redis lost the key's
// state writes back what this process knows and runs it again; a grant
// given back for an era that ended (attemptOnce) is asked for again at once.
func (b *Backend) attempt(ctx context.Context, a acquireArgs) (acquireResult, error) {
	defer watchStall(a.r)()
	if a.plain && isLock(a.r) {
		if res, got, err := b.takeLock(ctx, a.r); got || err != nil {
			return res, err
		}
	}
	once := b.attemptOnce
	if len(a.r.Members) > 0 {
		once = b.attemptMembers
	}
	res, epoch, err := once(ctx, a)
	// Each at most once, in either order: a lost key is written back and
	// asked again (REDIS.md, Eras), as is a grant given back for an era
	// that ended (attemptOnce).
	restored, gaveBack := false, false
	for err == nil {
		switch {
		case res.v.Reason == reasonLost && !restored: // Redis lost the key's state: a new era
			restored = true
			b.era.Add(1)
			if err = b.restoreLost(ctx, a.r, epoch); err != nil { // written back before it takes more
				return res, err
			}
		case res.gaveBack && !gaveBack:
			gaveBack = true
		default: // given back twice is a refusal already (attemptOnce)
			return lostOrLate(res), nil
		}
		held := res.held // a hand-over's release, made by the first run
		res, epoch, err = once(ctx, a)
		res.held = res.held || held
	}
	return res, err
}

// lostOrLate is res with a key lost again at once, or a request Redis ran
// late, turned into a refusal for want of a slot: the caller waits, and
// asks again.
func lostOrLate(res acquireResult) acquireResult {
	if res.v.Reason == reasonLost || res.v.Reason == reasonStale {
		res.v = throttle.Verdict{Reason: throttle.ReasonConcurrency}
	}
	return res
}

// script returns the acquire script's KEYS and ARGV for a, the lease to be
// granted being id, and r's concurrency as capped by the learned limit.
func (b *Backend) script(a acquireArgs, id string) (keys []string, args []any, conc int) {
	r := a.r
	k := b.names(r.Key, r.Windows)
	keys = append([]string{k.slots(id), k.cooldown, k.waiting, k.epoch, k.learned}, k.windows...)
	epoch, proc := "", ""
	if len(r.Windows) > 0 {
		epoch = b.ledger.epoch(r.Key, false)
	}
	if a.queue {
		proc = b.proc
	}
	conc = b.capped(r).Concurrency
	want, requeue := 0, 0
	if a.take {
		want = 1 + a.batch
	}
	if a.requeue {
		requeue = 1
	}
	ref, maxAge := b.ref.deadline(b.opt.OpTimeout)
	args = []any{id, conc, r.LeaseTTL().Milliseconds(), want, proc, redisID(a.release.ID), b.wakePrefix, r.Key, // ARGV: see lua/acquire.lua
		requeue, epoch, r.Units(), a.block, a.span.Milliseconds(), b.channel, ref, maxAge}
	for _, w := range r.Windows {
		args = append(args, w.Limit, w.Period.Milliseconds())
	}
	return keys, args, conc
}

// runScript runs the acquire script for key and reads its answer, noting
// the server's time and, unless Redis lost it, key's epoch.
func (b *Backend) runScript(ctx context.Context, key string, keys []string, args []any) (answer, error) {
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	defer b.quiet.begin()()
	raw, err := replySlice(b.acquire.run(octx, b.rdb, keys, args...))
	if err != nil {
		return answer{}, err
	}
	ans, err := parseAnswer(raw)
	if err == nil {
		b.ref.saw(ans.now)
		if ans.epoch != "" && ans.reason != reasonLost {
			b.ledger.learn(key, ans.epoch)
		}
	}
	return ans, err
}

// attemptOnce runs the acquire script once (see attempt), and returns the
// epoch it answered besides.
func (b *Backend) attemptOnce(ctx context.Context, a acquireArgs) (acquireResult, string, error) {
	r := a.r
	id := newLeaseID()
	if isLock(r) {
		id = lockMark + id
	}
	keys, args, conc := b.script(a, id)
	sent, era := time.Now(), b.era.Load()
	ans, err := b.runScript(ctx, r.Key, keys, args)
	if err != nil {
		return acquireResult{}, "", err
	}
	out := acquireResult{held: ans.held, full: ans.full, v: throttle.Verdict{OK: ans.reason == 0, Reason: ans.reason}, now: time.UnixMilli(ans.now)}
	b.ledger.add(r.Key, nil, r.Windows, ans.now, r.Units()*ans.n, ans.fills) // n: 0 for a refusal or a check
	switch {
	case out.v.OK:
		l := throttle.Lease{Key: r.Key, ID: id, Granted: out.now}
		if ans.expires > 0 {
			l.Expires, l.Concurrency = time.UnixMilli(ans.expires), conc
		}
		for j := 2; j <= ans.n && j <= 1+a.batch; j++ {
			e := l
			e.ID = id + "+" + strconv.Itoa(j)
			out.extra = append(out.extra, e)
		}
		if ans.blk > 0 && ans.blockAt > 0 {
			b.addBlock(r, ans.blk, ans.blockAt, sent.Add(a.span))
		}
		if ans.n > 0 && l.OwnSlot() && b.era.Load() != era {
			// A new era began while the ask was in flight: the slots may come
			// from a Redis that is gone (its answer read after a restart),
			// which the one answering now does not count. They go back, and
			// attempt asks again (REDIS.md, Eras). Window counts need no
			// such care: the ledger writes them back (restore).
			for _, g := range append(out.extra, l) {
				b.giveBack(g, r)
			}
			out.v, out.lease, out.extra, out.full, out.gaveBack = throttle.Verdict{Reason: throttle.ReasonConcurrency}, throttle.Lease{}, nil, false, true
			return out, ans.epoch, nil
		}
		if ans.n > 0 {
			b.hold(era, append(out.extra, l)...)
		}
		b.noteContended(r.Key, ans.others, sent)
		out.lease = l
	case ans.reason == reasonYielded:
		b.noteContended(r.Key, true, sent)
	case ans.at > 0:
		out.v.At = time.UnixMilli(ans.at)
		if ans.reason == throttle.ReasonCooldown {
			b.ledger.cooldown(r.Key, ans.at)
		}
	}
	return out, ans.epoch, nil
}

// answer is the acquire script's answer, which names its fields (see
// parseAnswer).
type answer struct {
	reason  throttle.Reason // 0: granted
	now, at int64           // unix ms; at: when the refusing limit frees up (0: unknown)
	held    bool            // the lease a hand-over released still held its slot
	expires int64           // a grant's expiry (0: no slot)
	n, blk  int             // leases granted; window units taken ahead
	blockAt int64           // where the block counts, unix ms
	others  bool            // another process waits for a slot
	full    bool            // a grant took the key's last free slot
	epoch   string          // the key's epoch, when the process did not know it
	// fills: per window, what it counted (buckets and reserve) and took,
	// once the script read the windows (see restore.lua)
	fills []int64
}

// parseAnswer reads the acquire script's answer: a flat list of field
// names and values, "now" first; a field left out is zero. Every number is
// a non-negative integer, held, others and full are 0 or 1, epoch is a string,
// fills a list of numbers.
func parseAnswer(raw []any) (answer, error) {
	bad := func() (answer, error) {
		return answer{}, fmt.Errorf("throttle: acquire script answered %v", raw)
	}
	if len(raw)%2 != 0 || len(raw) < 2 || raw[0] != "now" {
		return bad()
	}
	var a answer
	for i := 0; i < len(raw); i += 2 {
		name, _ := raw[i].(string)
		switch v := raw[i+1]; name {
		case "epoch":
			s, ok := v.(string)
			if !ok {
				return bad()
			}
			a.epoch = s
		case "fills":
			list, ok := v.([]any)
			ns := make([]int64, len(list))
			for j, x := range list {
				n, isInt := x.(int64)
				ok = ok && isInt && n >= 0
				ns[j] = n
			}
			if !ok {
				return bad()
			}
			a.fills = ns
		default:
			n, ok := v.(int64)
			if !ok || n < 0 || !a.set(name, n) {
				return bad()
			}
		}
	}
	if a.now == 0 {
		return bad()
	}
	return a, nil
}

// set sets the numeric field name of a to n, and reports whether name is
// one and n fits it (a flag is 0 or 1).
func (a *answer) set(name string, n int64) bool {
	switch name {
	case "now":
		a.now = n
	case "reason":
		a.reason = throttle.Reason(n)
	case "at":
		a.at = n
	case "held":
		a.held = n == 1
	case "expires":
		a.expires = n
	case "n":
		a.n = int(n)
	case "blk":
		a.blk = int(n)
	case "block_at":
		a.blockAt = n
	case "others":
		a.others = n == 1
	case "full":
		a.full = n == 1
	default:
		return false
	}
	return n <= 1 || name != "held" && name != "others" && name != "full"
}
