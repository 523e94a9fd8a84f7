package redis_test

import (
	"os"
	"testing"

	"github.com/wecomkit/wecom/internal/redistest"
)

// TestMain gives the Redis tests a private Redis (a node and a 3-master
// cluster) when REDIS_ADDR or REDIS_CLUSTER_ADDRS is unset.
func TestMain(m *testing.M) { os.Exit(redistest.MainWaiting(m, 8)) }
