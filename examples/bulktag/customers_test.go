package main

import (
	"bytes"
	"context"
	"strings"
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

	cfg.members = "member001,,member002"
	out.Reset()
	code, err = run(context.Background(), cfg, &out, &errOut)
	if err != nil || code != exitFailed || !strings.Contains(out.String(), "walk:       ended early") {
		t.Errorf("with an empty userid: %d, %v\n%s", code, err, out.String())
	}
	cfg.allMembers = true
	if code, err := run(context.Background(), cfg, &out, &errOut); code != exitSetup || err == nil {
		t.Errorf("-members with -all-members: %d, %v", code, err)
	}
}
