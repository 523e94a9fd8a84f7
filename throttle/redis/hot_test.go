package redis

// NoHotPath makes b go to Redis for every hand-over, release and window
// unit, as when other processes wait: for the tests of that protocol.
func NoHotPath(b *Backend) { b.cold = true }

// MaxBlockSpan is maxBlockSpan, for the tests of lease times.
const MaxBlockSpan = maxBlockSpan
