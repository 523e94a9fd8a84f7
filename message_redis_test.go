package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestMessagesAcrossProcesses: two processes sharing a Redis limiter send
// 16 messages each to the same 1,000 members, 32 a member, more than a
// minute's 30. Within a deadline too short for the next minute, every
// member gets exactly 30, the mock drops none, and the two sends over the
// window fail before leaving, naming all 1,000 members.
func TestMessagesAcrossProcesses(t *testing.T) {
	t.Parallel() // a mock, and a key prefix, of its own
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	members := make([]string, wecom.MaxMessageUsers)
	for i := range members {
		members[i] = fmt.Sprintf("user%04d", i)
	}
	srv.AddUsers(testCorp, members...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var sent, refused int
	var wg sync.WaitGroup
	for p, b := range sharedLimiters(t, 2) {
		c := setup(t, wecom.WithBaseURL(base), wecom.WithLimiter(b), wecom.WithAgentID(1000002))
		wg.Go(func() {
			for i := range 16 {
				_, err := c.Messages.Send(ctx, wecom.Message{ToUser: members, Content: &wecom.TextMessage{Content: fmt.Sprintf("process %d, message %d", p, i)}})
				var rl *wecom.RateLimitError
				mu.Lock()
				switch {
				case err == nil:
					sent++
				case errors.As(err, &rl) && len(rl.Members) == len(members):
					refused++
				default:
					t.Errorf("process %d, message %d: %v", p, i, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if sent != 30 || refused != 2 {
		t.Errorf("%d sent and %d refused, want 30 and 2", sent, refused)
	}
	for _, m := range members {
		if got := srv.MessageTally(testCorp, m); got != (mock.MessageTally{Delivered: 30}) {
			t.Fatalf("%s: %+v, want 30 delivered and none dropped", m, got)
		}
	}
}

// TestRobotAcrossProcesses: two processes sharing a Redis limiter send 13
// messages each through one robot: 20 go in the minute, the 6 over it fail
// before leaving (the deadline cannot wait for the next minute), and the
// mock refuses none. The Redis keys hold no trace of the robot's key.
func TestRobotAcrossProcesses(t *testing.T) {
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	limiters := limitersOn(t, rdb, prefix, 2)
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	srv.AddRobot(testRobotKey)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var sent, refused int
	var wg sync.WaitGroup
	for p, b := range limiters {
		r := setupRobot(t, testRobotKey, wecom.WithBaseURL(base), wecom.WithLimiter(b))
		wg.Go(func() {
			for i := range 13 {
				err := r.Send(ctx, &wecom.RobotText{Content: fmt.Sprintf("process %d, message %d", p, i)})
				mu.Lock()
				switch {
				case err == nil:
					sent++
				case errors.Is(err, wecom.ErrRateLimited):
					refused++
				default:
					t.Errorf("process %d, message %d: %v", p, i, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got := len(srv.RobotMessages(testRobotKey)); sent != 20 || refused != 6 || got != 20 {
		t.Errorf("%d sent, %d refused, %d at the mock; want 20, 6, 20", sent, refused, got)
	}
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, testRobotKey) {
			t.Errorf("Redis key %q holds the robot's key", k)
		}
	}
}

// sharedLimiters returns n Redis limiters sharing one Redis and prefix:
// n processes of a fleet.
func sharedLimiters(t *testing.T, n int) []*throttleredis.Backend {
	t.Helper()
	rdb := redistest.Single(t)
	return limitersOn(t, rdb, redistest.Prefix(t, rdb), n)
}

// limitersOn returns n Redis limiters on rdb under prefix, closed at the
// test's end.
func limitersOn(t *testing.T, rdb redis.UniversalClient, prefix string, n int) []*throttleredis.Backend {
	t.Helper()
	bs := make([]*throttleredis.Backend, n)
	for i := range bs {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		bs[i] = b
	}
	return bs
}
