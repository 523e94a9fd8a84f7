package callback

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// RetrySpan is how long after its first attempt WeCom may still send a
// callback, counted with room: 1 minute. WeCom makes 3 attempts in all,
// each waiting 5 seconds for an answer (document 96466), so its retries
// arrive within about 20 seconds of the first.
const RetrySpan = time.Minute

// DefaultDedupeTTL is how long a Handler remembers a callback by default:
// 11 minutes, twice DefaultTimestampWindow plus RetrySpan. A request is
// accepted while its timestamp is within the window either way of this
// server's clock, so a captured request (or a retry) can arrive up to
// twice the window after the first one was delivered; a key must outlive
// that, or the replay is delivered again. NewHandler refuses a TTL under
// 2 × window + RetrySpan.
const DefaultDedupeTTL = 2*DefaultTimestampWindow + RetrySpan

// DefaultDedupeCapacity is how many keys NewHandler's in-memory Deduper
// holds: 50,000, the callbacks of 11 minutes at about 75 a second (a
// busier receiver needs a larger MemoryDeduper, or redisdedupe).
const DefaultDedupeCapacity = 50_000

// Deduper remembers the callbacks already delivered, so that WeCom's
// retries of one are delivered once. Give a Handler one shared by every
// replica behind a load balancer (redisdedupe.Deduper) with WithDeduper; the
// default is a MemoryDeduper of this process. One Deduper may serve several
// Handlers (apps, suites): each prefixes its keys with its own namespace
// (WithDedupeNamespace), so they never take each other's callbacks for
// duplicates.
type Deduper interface {
	// Seen records key for ttl and reports whether it was already recorded
	// (and neither expired nor forgotten). The check and the record are one
	// atomic step: of two concurrent calls with one key, one sees false.
	Seen(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Forget removes key, so that WeCom's retry of a callback whose
	// handling failed is delivered again.
	Forget(ctx context.Context, key string) error
}

// MemoryDeduper is a Deduper in this process's memory, bounded: it holds
// at most its capacity of keys, dropping expired ones first and then the
// oldest (a retry of a callback whose key was dropped early is delivered
// again). It is safe for concurrent use.
type MemoryDeduper struct {
	mu    sync.Mutex
	max   int
	seq   uint64
	keys  map[string]memEntry
	order []memKey // in the order recorded; order[head:] is live
	head  int
}

type memEntry struct {
	exp time.Time
	seq uint64
}

type memKey struct {
	key string
	memEntry
}

// NewMemoryDeduper returns a MemoryDeduper holding at most capacity keys;
// capacity < 1 is an *Error matching ErrConfig.
func NewMemoryDeduper(capacity int) (*MemoryDeduper, error) {
	if capacity < 1 {
		return nil, fail(ErrConfig, "deduper capacity "+strconv.Itoa(capacity)+" < 1")
	}
	return &MemoryDeduper{max: capacity, keys: make(map[string]memEntry)}, nil
}

// Seen implements Deduper. A ttl <= 0 records nothing.
func (d *MemoryDeduper) Seen(_ context.Context, key string, ttl time.Duration) (bool, error) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.head < len(d.order) && !d.order[d.head].exp.After(now) {
		d.pop()
	}
	if e, ok := d.keys[key]; ok && e.exp.After(now) {
		return true, nil
	}
	if ttl <= 0 {
		return false, nil
	}
	for len(d.keys) >= d.max && d.head < len(d.order) {
		d.pop()
	}
	d.seq++
	e := memEntry{exp: now.Add(ttl), seq: d.seq}
	d.keys[key] = e
	d.order = append(d.order, memKey{key: key, memEntry: e})
	return false, nil
}

// pop drops the oldest record, and its key unless recorded again since.
func (d *MemoryDeduper) pop() {
	k := d.order[d.head]
	d.order[d.head] = memKey{}
	d.head++
	if e, ok := d.keys[k.key]; ok && e.seq == k.seq {
		delete(d.keys, k.key)
	}
	if d.head > 1024 && d.head > len(d.order)/2 { // reuse the front of the slice
		n := copy(d.order, d.order[d.head:])
		clear(d.order[n:])
		d.order, d.head = d.order[:n], 0
	}
}

// Forget implements Deduper.
func (d *MemoryDeduper) Forget(_ context.Context, key string) error {
	d.mu.Lock()
	delete(d.keys, key)
	d.mu.Unlock()
	return nil
}

// Len returns how many keys are held, expired ones not yet dropped
// included.
func (d *MemoryDeduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys)
}
