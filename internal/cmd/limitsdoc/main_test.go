package main

import (
	"os"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

// TestLimitsDocUpToDate fails when LIMITS.md's table is not what the
// catalog says now.
func TestLimitsDocUpToDate(t *testing.T) {
	if err := run("../../../LIMITS.md", true); err != nil {
		t.Fatal(err)
	}
}

// TestREADMELinksLimitsDoc fails when the README holds a copy of the table
// (its one home is LIMITS.md) or no longer links to it.
func TestREADMELinksLimitsDoc(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), strings.TrimSpace(begin)) || strings.Contains(string(readme), end) {
		t.Error("README.md holds the limits markers: the generated table lives in LIMITS.md")
	}
	if !strings.Contains(string(readme), "(LIMITS.md)") {
		t.Error("README.md does not link to LIMITS.md")
	}
}

func TestRender(t *testing.T) {
	generic := []catalog.Rule{{Name: "minute", Scope: catalog.ScopeAPI, Limit: 10, Per: catalog.Minute, Source: "doc A"}}
	eps := []catalog.Endpoint{
		{ID: "/cgi-bin/a", Method: "POST", Doc: 1, Resource: "customer", Rules: append(generic,
			catalog.Rule{Name: "customer", Scope: catalog.ScopeShared, Group: "edit", InFlight: 1, Source: "staff B"})},
		{ID: "/cgi-bin/b", Method: "GET", Doc: 2, Repeatable: true, Rules: append(generic,
			catalog.Rule{Name: "day", Scope: catalog.ScopeApp, Limit: 7, Per: catalog.Day, Weighted: true, Source: "doc A"})},
		{ID: "/cgi-bin/c", Method: "GET", Doc: 3},
		{ID: "/cgi-bin/d", Method: "POST", Doc: 4, Rules: []catalog.Rule{
			{Name: "robot", Scope: catalog.ScopeRobot, Limit: 20, Per: catalog.Minute, Source: "doc A"}}},
	}
	got := Render(eps, generic)
	for _, want := range []string{
		"Every API, wrapped or called with `Do`: 10/minute per corp and API (`minute`) [1].",
		"| [`a`](https://developer.work.weixin.qq.com/document/path/1) | POST | no | 1 in flight per customer, shared (edit) (`customer`) [2] |",
		"| [`b`](https://developer.work.weixin.qq.com/document/path/2) | GET | yes | 7 units/day (CST) per app (`day`) [1] |",
		"| [`c`](https://developer.work.weixin.qq.com/document/path/3) | GET | no | exempt from those |",
		"| [`d`](https://developer.work.weixin.qq.com/document/path/4) | POST | no | exempt from those; 20/minute per robot (`robot`) [1] |",
		"1. doc A\n2. staff B\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render lacks %q in:\n%s", want, got)
		}
	}
	if strings.Count(got, "doc A") != 1 {
		t.Errorf("a source noted twice:\n%s", got)
	}
	eps[1].Rules[1].Limit = 8
	if Render(eps, generic) == got {
		t.Error("a changed limit renders the same")
	}
}

func TestSpliceKeepsTheRest(t *testing.T) {
	doc := []byte("intro\n" + begin + "old\n" + end + "\noutro\n")
	got, err := splice(doc, "new\n")
	if err != nil || string(got) != "intro\n"+begin+"new\n"+end+"\noutro\n" {
		t.Errorf("splice = %q, %v", got, err)
	}
	if _, err := splice([]byte("no markers"), "x"); err == nil {
		t.Error("splice without markers: no error")
	}
	stale := t.TempDir() + "/LIMITS.md"
	if err := os.WriteFile(stale, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(stale, true); err == nil || !strings.Contains(err.Error(), "go generate ./catalog/") {
		t.Errorf("check of a stale LIMITS.md: %v", err)
	}
}
