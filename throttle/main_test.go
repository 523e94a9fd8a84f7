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
