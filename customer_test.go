package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// TestCustomerEditsNeverOverlap: mark_tag and remark on the same customers
// from 32 goroutines against the strict mock, which answers 45033 to two
// edits of one customer at once: the shared per-customer lock lets none
// through, and every edit lands. Without the lock on remark, they collide.
func TestCustomerEditsNeverOverlap(t *testing.T) {
	t.Parallel()
	t.Run("shared lock", func(t *testing.T) {
		t.Parallel()
		if n := editCustomers(t); n != 0 {
			t.Errorf("the mock answered 45033 %d times, want 0", n)
		}
	})
	t.Run("without the lock", func(t *testing.T) {
		t.Parallel()
		if n := editCustomers(t, wecom.WithoutRule(catalog.CustomerRemark.Path(), catalog.RuleCustomer),
			wecom.WithoutRule(catalog.MarkTag.Path(), catalog.RuleCustomer)); n == 0 {
			t.Error("the mock answered no 45033: the test cannot see a collision")
		}
	})
}

// editCustomers runs the edits and returns the 45033 answers the mock gave.
func editCustomers(t *testing.T, opts ...wecom.Option) int {
	t.Helper()
	srv := newMock(t, mock.Config{Latency: 2 * time.Millisecond, LatencyJitter: time.Millisecond})
	c := setup(t, append([]wecom.Option{on(srv),
		wecom.WithRetryPolicy(wecom.RetryPolicy{MaxConcurrencyRetries: 50, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond})}, opts...)...)
	ctx := context.Background()
	group, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "g", Tags: []wecom.CorpTagSpec{{Name: "vip"}}})
	if err != nil {
		t.Fatal(err)
	}
	tag := group.Tags[0].ID
	const customers, rounds = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, 32*rounds)
	for w := range 32 {
		wg.Go(func() {
			for r := range rounds {
				ext := fmt.Sprintf("wm%d", (3*w+r)%customers)
				var err error
				if r%2 == 0 {
					err = c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "u1", ExternalUserID: ext, AddTags: []string{tag}})
				} else {
					err = c.Customers.Remark(ctx, wecom.RemarkRequest{UserID: "u1", ExternalUserID: ext, Remark: fmt.Sprintf("w%d", w)})
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("edit: %v", err) // retries absorb the collisions of the unlocked case
	}
	st := srv.Stats()
	for i := range customers {
		ext := fmt.Sprintf("wm%d", i)
		if marks := srv.Marks(testCorp, "u1", ext); len(marks) != 1 {
			t.Errorf("%s marks %v", ext, marks)
		}
		if r, ok := srv.Remark(testCorp, "u1", ext); !ok || !strings.HasPrefix(r.Remark, "w") {
			t.Errorf("%s remark %+v, %t", ext, r, ok)
		}
	}
	mark, remark := catalog.MarkTag.Path(), catalog.CustomerRemark.Path()
	t.Logf("%d mark_tag and %d remark calls, max in flight %d and %d, %d answers 45033", st.Calls[mark], st.Calls[remark],
		st.MaxInFlight[mark], st.MaxInFlight[remark], st.Refusals[wecom.CodeConcurrencyLimited])
	return st.Refusals[wecom.CodeConcurrencyLimited]
}

// TestCustomerLists: the members with customers, and each member's
// customers; a member with none is an empty list (WeCom's 84061), not an
// error.
func TestCustomerLists(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	srv.AddUsers(testCorp, "u1", "u2", "u3")
	srv.AddCustomers(testCorp, "u1", "wmB", "wmA")
	srv.AddCustomers(testCorp, "u2", "wmA")
	ctx := context.Background()
	users, err := c.Customers.FollowUsers(ctx)
	if err != nil || strings.Join(users, ",") != "u1,u2" {
		t.Errorf("FollowUsers = %v, %v; want [u1 u2]", users, err)
	}
	for _, tc := range []struct{ user, want string }{{"u1", "wmA,wmB"}, {"u2", "wmA"}, {"u3", ""}} {
		got, err := c.Customers.List(ctx, tc.user)
		if err != nil || got == nil || strings.Join(got, ",") != tc.want {
			t.Errorf("List(%s) = %#v, %v; want %q", tc.user, got, err, tc.want)
		}
	}
	if n := srv.Stats().Refusals[wecom.CodeNoCustomers]; n != 1 {
		t.Errorf("the mock answered 84061 %d times, want 1 (u3)", n)
	}
	if _, err := c.Customers.List(ctx, ""); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("List without userid: %v", err)
	}
}
