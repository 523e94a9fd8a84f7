package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/wecomkit/wecom"
)

// TestDirectory: a tenth of the default run, in a synctest bubble:
// every member written exactly once, the userid first, no 45009, and the
// user/get phase within 15% over the least the minute window allows.
func TestDirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A twentieth of the default run, spilling over its window as
		// that one does: 600 members against 500 calls a minute.
		cfg, err := parseFlags([]string{"-members", "600", "-per-minute", "500"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		srv, rt, err := embedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.baseURL = embeddedBase
		var out bytes.Buffer
		sum, err := export(context.Background(), cfg, rt, &out, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&out).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || !slices.Equal(rows[0], header) {
			t.Fatalf("no header row")
		}
		var got []string
		for _, r := range rows[1:] {
			got = append(got, r[0])
		}
		slices.Sort(got)
		var want []string
		for _, m := range srv.Members(cfg.corpID) {
			want = append(want, m.UserID)
		}
		if len(want) != 600 || !slices.Equal(got, want) {
			t.Errorf("%d rows, want each of the %d members once", len(got), len(want))
		}
		if !sum.ok(srv) {
			t.Errorf("%+v: not ok (45009 answered %d)", sum, srv.Stats().Refusals[wecom.CodeFrequencyLimited])
		}
		took, b := sum.getEnd.Sub(sum.getStart), bound(600, cfg.workers, cfg.minuteLimit(), cfg.latency)
		if took < b-cfg.latency || took > b+b*15/100 {
			t.Errorf("user/get took %s (virtual), want within 15%% over the bound %s", took, b)
		}
	})
}

// TestDirectoryExit: a member that cannot be read makes the exit status 1,
// and the file holds the others.
func TestDirectoryExit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/gettoken"):
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","access_token":"T","expires_in":7200}`)
		case strings.HasSuffix(r.URL.Path, "/department/simplelist"):
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","department_id":[{"id":1,"parentid":0,"order":0}]}`)
		case strings.HasSuffix(r.URL.Path, "/user/list_id"):
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","next_cursor":"","dept_user":[{"userid":"a","department":1},{"userid":"gone","department":1}]}`)
		case r.URL.Query().Get("userid") == "a":
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","userid":"a","name":"A","department":[1]}`)
		default:
			_, _ = io.WriteString(w, `{"errcode":60111,"errmsg":"userid not found"}`)
		}
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "d.csv")
	var stdout bytes.Buffer
	code := cli(context.Background(), []string{"-base-url", srv.URL, "-out", out, "-progress", "0"}, &stdout, io.Discard)
	if code != exitFailed || !strings.Contains(stdout.String(), "1 written") || !strings.Contains(stdout.String(), "1 failed") {
		t.Errorf("exit %d, summary:\n%s", code, stdout.String())
	}
}

// TestDirectoryFlags: bad flags exit 2.
func TestDirectoryFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-workers", "0"}, {"-out", ""}, {"extra"}, {"-members", "-1"}} {
		if code := cli(context.Background(), args, io.Discard, io.Discard); code != exitFlags {
			t.Errorf("%q: exit %d, want %d", args, code, exitFlags)
		}
	}
}
