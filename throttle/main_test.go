package throttle_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/internal/waiting"
)

// The real-time conformance run's tests mostly wait: 16 of them at once.
func TestMain(m *testing.M) { os.Exit(waiting.Main(m, 16)) }

// TestMain's bound holds unless the command line gives one.
func TestWaitingBound(t *testing.T) {
	for _, a := range os.Args[1:] {
		if strings.Contains(a, "test.parallel") {
			t.Skipf("the command line gives the bound: %s", a)
		}
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != "16" {
		t.Errorf("-test.parallel = %s, want 16", got)
	}
}

// TestMain spared this binary the race runtime's sleep at exit: where
// SkipExitSleep can, GORACE sets atexit_sleep_ms (to 0, unless the caller
// gave it).
func TestExitSleepSkipped(t *testing.T) {
	if !waiting.SkipsExitSleep {
		t.Skip("built without -race, or not on Unix: nothing to skip")
	}
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		t.Errorf("GORACE = %q, want atexit_sleep_ms set", g)
	}
}
