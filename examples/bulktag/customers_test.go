package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wecomkit/wecom/mock"
)

// TestAllMembersMarksEverySeededPair: -all-members against a mock seeded
// with customers shared by members marks the tag on every (member,
// customer) pair, checked in the mock's state, with no 45033 or 45009; a
// second run finds them all marked already and marks nothing.
func TestAllMembersMarksEverySeededPair(t *testing.T) {
	srv, err := mock.New(mock.Config{Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddApp("wwcust", "s")
	seeded := srv.SeedCustomers("wwcust", mock.CustomerSeed{Members: 4, Pairs: 700, Shared: 0.3})
	hs := srv.Start()
	t.Cleanup(hs.Close)
	cfg := config{baseURL: hs.URL, corpID: "wwcust", secret: "s", customers: 1, repeat: 1, workers: 16, drain: time.Second, allMembers: true}

	var out, errOut bytes.Buffer
	code, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitOK {
		t.Fatalf("run = %d, %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"customers:  700 pairs found for 4 members in 7 pages of batch/get_by_user; 0 already marked, 700 to mark",
		"marks:      700 requested, 700 done, 0 failed, 0 not started",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if st := srv.Stats(); st.Refusals[45033] != 0 || st.Refusals[45009] != 0 || st.MaxInFlight[markPath] > 5 {
		t.Errorf("the mock answered 45033 %d times, 45009 %d times, had %d marks in flight", st.Refusals[45033], st.Refusals[45009], st.MaxInFlight[markPath])
	}
	var tag string
	for _, g := range srv.CorpTagGroups("wwcust") {
		if g.Name == groupName {
			tag = g.Tags[0].ID
		}
	}
	pairs := 0
	for _, u := range seeded.Members {
		for _, ext := range srv.Customers("wwcust", u) {
			pairs++
			if m := srv.Marks("wwcust", u, ext); len(m) != 1 || m[0] != tag {
				t.Errorf("pair %s|%s marked %v, want [%s]", u, ext, m, tag)
			}
		}
	}
	if pairs != 700 {
		t.Errorf("%d pairs in the mock", pairs)
	}

	out.Reset()
	code, err = run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitOK || !strings.Contains(out.String(), "700 already marked, 0 to mark") ||
		!strings.Contains(out.String(), "marks:      0 requested, 0 done") {
		t.Errorf("second run = %d, %v:\n%s", code, err, out.String())
	}
}

// TestMembersOnEmbeddedMock: -members on the embedded mock's seeded
// customers marks only those members' pairs; a member the walk cannot read
// makes the run fail.
func TestMembersOnEmbeddedMock(t *testing.T) {
	cfg := config{corpID: "wwmembers", secret: "s", customers: 1, repeat: 1, workers: 8, latency: time.Millisecond, drain: time.Second,
		members: "member001,member003", seed: mock.CustomerSeed{Members: 3, Pairs: 300}}
	var out, errOut bytes.Buffer
	code, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitOK {
		t.Fatalf("run = %d, %v\n%s", code, err, out.String())
	}
	// 300 pairs over 3 members, none shared: 100 each.
	if want := "200 pairs found for 2 members"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	if want := "marked 200/200 (100%"; !strings.Contains(errOut.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, errOut.String())
	}

	cfg.members = "member001, MEMBER001 ,nosuch, member002"
	out.Reset()
	code, err = run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitOK || !strings.Contains(out.String(), "200 pairs found for 3 members") ||
		!strings.Contains(out.String(), "no customers: 1 of the members had none the app can see: nosuch") {
		t.Errorf("with spaces, a repeat and an unknown member: %d, %v\n%s", code, err, out.String())
	}
	cfg.members = "member001,,member002"
	if code, err := run(context.Background(), cfg, &out, &errOut); code != exitSetup || err == nil {
		t.Errorf("with an empty userid: %d, %v", code, err)
	}
	cfg.allMembers = true
	if code, err := run(context.Background(), cfg, &out, &errOut); code != exitSetup || err == nil {
		t.Errorf("-members with -all-members: %d, %v", code, err)
	}
}

// TestInterruptWhileWalking: a SIGINT while the members' customers are
// still being found stops the walk as well as the marking: exit 3, the
// summary says the walk was stopped, and accounts for every pair found.
func TestInterruptWhileWalking(t *testing.T) {
	m, url := serveMock(t, 20*time.Millisecond, "wwwalk", "walk-secret")
	m.SeedCustomers("wwwalk", mock.CustomerSeed{Members: 3, Pairs: 2000})
	sig := make(chan os.Signal, 2)
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for m.Stats().MarkCalls < 20 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		sig <- syscall.SIGINT
	}()
	var out, errOut syncBuffer
	args := []string{"-base-url", url, "-corp-id", "wwwalk", "-secret", "walk-secret", "-all-members", "-workers", "8"}
	code := cli(args, sig, &out, &errOut, func(c int) { t.Errorf("exit(%d) called on one signal", c) })
	if code != exitStopped {
		t.Errorf("exit status %d, want %d\n%s", code, exitStopped, out.String())
	}
	s := out.String()
	c := parseSummary(t, s)
	var found int
	if i := strings.Index(s, "customers:  "); i < 0 {
		t.Fatalf("no customers line:\n%s", s)
	} else if _, err := fmt.Sscanf(s[i:], "customers:  %d pairs found", &found); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "walk:       stopped before every customer was found") || found >= 2000 || c.requested != found {
		t.Errorf("found %d pairs, %+v:\n%s", found, c, s)
	}
	if c.done+c.failed+c.notStarted != c.requested || c.done != m.Stats().MarkCalls {
		t.Errorf("summary %+v does not add up (the mock applied %d)", c, m.Stats().MarkCalls)
	}
}
