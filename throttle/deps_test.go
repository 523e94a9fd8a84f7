package throttle_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoRedisClientLinked: a program that uses only NewMemory must not link
// go-redis (it lives in throttle/redis).
func TestNoRedisClientLinked(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "go-redis") {
			t.Errorf("package throttle links %s", p)
		}
	}
	if !strings.Contains(string(out), "\nsync\n") {
		t.Fatalf("go list -deps answered no standard library: %s", out)
	}
}
