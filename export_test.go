package wecom

// Test helpers of package wecom that the tests of package wecom_test share.
type (
	// SyncBuffer is a bytes.Buffer safe for the goroutines that log.
	SyncBuffer = syncBuffer
	// FakeClock is a clock that moves only when told to.
	FakeClock = fakeClock
)

// NewFakeClock returns a FakeClock at t.
var NewFakeClock = newFakeClock

// RefusedURL returns the URL of a loopback port nobody listens on.
var RefusedURL = refusedURL
