package throttle_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRedisClientLinked: a program that uses only NewMemory links no
// Redis code at all: not go-redis, not the Redis backend (throttle/redis),
// nothing whose import path names Redis.
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
		if strings.Contains(strings.ToLower(p), "redis") {
			t.Errorf("package throttle links %s", p)
		}
	}
	if !strings.Contains(string(out), "\nsync\n") {
		t.Fatalf("go list -deps answered no standard library: %s", out)
	}
	if files, _ := filepath.Glob("redis*.go"); len(files) > 0 {
		t.Errorf("package throttle holds %v: the Redis backend lives in throttle/redis", files)
	}
}
