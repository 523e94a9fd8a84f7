package redis_test

import (
	"os"
	"testing"

	"github.com/wecomkit/wecom/internal/redistest"
)

// TestMain gives the Redis tests a private Redis (a node and a 3-master
// cluster) when REDIS_ADDR or REDIS_CLUSTER_ADDRS is unset, and runs 16
// parallel tests at once: they wait on servers, TTLs and windows (under a
// core of CPU at 16). The conformance suites stay serial inside (their
// real-time checks are the ones load upsets).
func TestMain(m *testing.M) { os.Exit(redistest.MainWaiting(m, 16)) }
