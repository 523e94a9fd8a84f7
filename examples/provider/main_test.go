package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestProvider: a small run in a synctest bubble, its marks spilling over
// a minute of the per-IP window: every corp authorized by callback, every
// customer of every corp tagged, nothing refused (by the mock, nor seen by
// a client), one get_corp_token per corp, each corp at its bound of 5 in
// flight, and exit status 0.
func TestProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config{corps: 6, customers: 30, ipPerMinute: 100, latency: 20 * time.Millisecond}
		sum, err := run(context.Background(), cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		tagged, failed, busy, limited := sum.totals()
		if tagged != 180 || failed != 0 || busy != 0 || limited != 0 || !sum.ok() {
			t.Errorf("%d tagged, %d failed, 45033 %d, 45009 %d (mock: %v); want 180 tagged, none refused", tagged, failed, busy, limited, sum.mock.Refusals)
		}
		if n := sum.mock.Calls["/cgi-bin/service/get_corp_token"]; n != cfg.corps {
			t.Errorf("%d get_corp_token calls, want %d", n, cfg.corps)
		}
		if n := sum.mock.MaxInFlight[markPath]; n != 5 {
			t.Errorf("a corp had %d mark_tag calls in flight at most, want its bound 5", n)
		}
		if took := sum.end.Sub(sum.start); took < sum.minimum() {
			t.Errorf("the marks took %s, under the %s the per-IP window allows: it was not held", took, sum.minimum())
		}
		var out bytes.Buffer
		sum.print(&out)
		lines := strings.Split(out.String(), "\n")
		if n := len(slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "corp ") })); n != cfg.corps {
			t.Errorf("%d corp lines, want %d:\n%s", n, cfg.corps, out.String())
		}
	})
}

// TestProviderExit: a run whose per-IP window the client does not know
// (the mock's is smaller) is refused 45009 and exits 1; bad flags exit 2.
func TestProviderExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if code := cli(context.Background(), []string{"-corps", "3", "-customers", "20", "-ip-per-minute", "30", "-mock-ip-per-minute", "20"}, &out, io.Discard); code != exitFailed {
			t.Errorf("exit %d, want %d:\n%s", code, exitFailed, out.String())
		}
		if !strings.Contains(out.String(), "45009 answered") || strings.Contains(out.String(), "45009 answered 0") {
			t.Errorf("no 45009 in the summary:\n%s", out.String())
		}
	})
	for _, args := range [][]string{{"-corps", "0"}, {"-customers", "-1"}, {"-ip-per-minute", "0"}, {"extra"},
		{"-shard", "3/3"}, {"-shard", "x"}, {"-install"}, {"-busy", "5"}, {"-base-url", "http://127.0.0.1:1"}} {
		if code := cli(context.Background(), args, io.Discard, io.Discard); code != exitFlags {
			t.Errorf("%q: exit %d, want %d", args, code, exitFlags)
		}
	}
}
