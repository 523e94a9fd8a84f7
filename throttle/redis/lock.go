// Locks on the Redis backend: a key with one slot and no window is held as
// a STRING that one plain SET NX PX takes (REDIS.md, Locks).

package redis

import (
	"context"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// lockMark starts the id of a lease on a lock, so that the scripts that
// release or extend it find the lock's STRING, not a holders ZSET.
const lockMark = "lock:"

// isLock reports whether r takes a lock: one slot, no window, no members.
// The processes sharing a key must agree on its shape, as on its limits.
func isLock(r throttle.Request) bool {
	return r.Concurrency == 1 && len(r.Windows) == 0 && len(r.Members) == 0
}

// isLockID reports whether the lease of id holds a lock.
func isLockID(id string) bool { return strings.HasPrefix(id, lockMark) }

// takeLock takes the lock r asks for with one plain SET NX PX, and reports
// whether it got it; one held or cooling down is left to the acquire
// script, as are all before a script told the server's time (Expires is
// reckoned on it). A lease whose SET failed may hold it: an orphan, given
// back when Redis answers.
func (b *Backend) takeLock(ctx context.Context, r throttle.Request) (acquireResult, bool, error) {
	if ref, _ := b.ref.deadline(0); ref == 0 {
		return acquireResult{}, false, nil
	}
	id, ttl := lockMark+newLeaseID(), r.LeaseTTL()
	now, sent, era := b.ref.now(), time.Now(), b.era.Load() // now: before Redis's, so Expires is early
	l := throttle.Lease{Key: r.Key, ID: id, Granted: now, Expires: now.Add(ttl), Concurrency: 1}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	defer b.quiet.begin()()
	got, err := b.rdb.SetNX(octx, b.names(r.Key, nil).lock, id, ttl)
	switch {
	case err != nil:
		if !refused(err) {
			b.orphan(l)
		}
		return acquireResult{}, false, err
	case !got:
		return acquireResult{}, false, nil
	}
	b.hold(era, l)
	b.noteContended(r.Key, false, sent) // as a lost notice would: localSpan at most
	return acquireResult{lease: l, v: throttle.Verdict{OK: true}, now: now}, true, nil
}
