package catalog

import (
	"testing"
	"time"
)

// TestRuleKey: every scope's key, as the client's limiter stores it, and
// what a call lacking its need gets.
func TestRuleKey(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC) // 04:00 on 2 March in CST
	full := KeyInput{Corp: "ww1", App: "1000002", API: "/cgi-bin/x", Resource: "u1|wm1", Members: true, Egress: "10.0.0.1", Now: now}
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{Rule{Scope: ScopeAPI, Group: "ignored"}, "{ww1}/cgi-bin/x"},
		{Rule{Scope: ScopeResource}, "{ww1}/cgi-bin/x|u1|wm1"},
		{Rule{Scope: ScopeShared, Group: "customer-edit"}, "{ww1}@customer-edit|u1|wm1"},
		{Rule{Scope: ScopeApp}, "{ww1}#1000002@/cgi-bin/x"},
		{Rule{Scope: ScopeApp, Group: "jsapi-ticket"}, "{ww1}#1000002@jsapi-ticket"},
		{Rule{Scope: ScopeAppMember, Group: "message"}, "{ww1}#1000002@message"},
		{Rule{Scope: ScopeMember, Group: "appchat", Per: Day}, "{ww1}@appchat~day:20260302"},
		{Rule{Scope: ScopeApp, Group: "message", Weighted: true, Per: Day}, "{ww1}#1000002@message~units~day:20260302"},
		{Rule{Scope: ScopeIP}, "ip:10.0.0.1/cgi-bin/x"},
		{Rule{Scope: ScopeRobot}, "robot:238f19d22bb9de96"},
	} {
		got, lacks := tc.rule.Key(full)
		if got != tc.want || lacks != NeedNothing {
			t.Errorf("%s: %q, %d; want %q", tc.rule, got, lacks, tc.want)
		}
	}
	for _, s := range []Scope{ScopeAPI, ScopeResource, ScopeShared, ScopeApp, ScopeAppMember, ScopeIP, ScopeRobot, ScopeMember} {
		need := s.Need()
		in := full
		switch need {
		case NeedNothing:
			continue
		case NeedResource, NeedRobot:
			in.Resource = ""
		case NeedMembers:
			in.Members = false
		case NeedEgress:
			in.Egress = ""
		}
		if key, lacks := (Rule{Scope: s, Group: "g"}).Key(in); key != "" || lacks != need {
			t.Errorf("%s without its need: %q, %d; want none, %d", s, key, lacks, need)
		}
	}
}
