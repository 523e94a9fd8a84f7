//go:build !race

package mock

import "time"

// spinFor is the end of a wait that sleepCtx spends yielding rather than on a
// timer: Go timers fire up to a millisecond late (the poller sleeps in whole
// milliseconds), which would make the mock's service time, and so every
// throughput bound derived from it, longer than configured. (Under the race
// detector it is 0: spin_race.go.)
const spinFor = time.Millisecond
