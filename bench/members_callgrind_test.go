package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestMembersCallgrind: the sends of TestMembersSend against a Redis run
// under valgrind's callgrind, whose pid is CG_PID: its counters are zeroed
// before each twenty sends and dumped after (named CG_TAG-same and
// CG_TAG-new), so that the instructions Redis ran for them, which the
// machine's load does not change, can be read from the dumps' summary
// lines. Timeouts are minutes: Redis runs some 50 times slower.
//
//	valgrind --tool=callgrind redis-server --port 6459 --save '' &
//	CG_PID=<its pid> CG_TAG=x REDIS_ADDR=127.0.0.1:6459 go test -run TestMembersCallgrind -v -count=1 -timeout 30m .
func TestMembersCallgrind(t *testing.T) {
	pid := os.Getenv("CG_PID")
	if pid == "" || os.Getenv(envAddr) == "" {
		t.Skip("CG_PID or " + envAddr + " unset: no Redis under callgrind")
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envAddr), ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { _ = rdb.Close() }) // after the prefix's keys are gone
	lim, err := throttleredis.New(rdb, throttleredis.Options{Prefix: uniquePrefix(t, rdb), OpTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	cg := func(args ...string) {
		if out, err := exec.Command("callgrind_control", append(args, pid)...).CombinedOutput(); err != nil {
			t.Fatalf("callgrind_control: %v: %s", err, out)
		}
	}
	sendRuns(t, lim, func() { cg("-z") }, func(name string, sends int) {
		cg("-d", os.Getenv("CG_TAG")+"-"+strings.Fields(name)[1])
	})
}
