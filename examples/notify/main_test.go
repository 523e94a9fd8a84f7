package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestNotify: the default run, 40 messages to each of 3 members and one
// unknown member, in a synctest bubble: every message accepted, none
// dropped, the unknown member reported, in little more than the minute the
// windows require.
func TestNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		srv, rt, err := embedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.baseURL = embeddedBase
		sum, err := run(context.Background(), cfg, rt, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		sum.tally(srv, cfg)
		if !sum.ok() || sum.accepted != 40 || sum.delivered != 120 || sum.dropped != 0 {
			t.Errorf("%+v: want 40 accepted, 120 delivered, none dropped", sum)
		}
		if len(sum.invalid) != 1 || sum.invalid[0] != "ghost" {
			t.Errorf("invalid %q, want ghost", sum.invalid)
		}
		if b := bound(40); sum.took < b || sum.took > b+b/20 {
			t.Errorf("took %s (virtual), want within 5%% over the bound %s", sum.took, b)
		}
		var out bytes.Buffer
		sum.print(&out, cfg)
		for _, want := range []string{"40 accepted, 0 failed", "120 recipient-messages, 0 dropped", "invalid:    ghost"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, out.String())
			}
		}
	})
}

// TestNotifyExit: the exit status says whether every message was accepted.
func TestNotifyExit(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/gettoken") {
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","access_token":"T","expires_in":7200}`)
			return
		}
		_, _ = io.WriteString(w, `{"errcode":81013,"errmsg":"user & party & tag all invalid"}`)
	}))
	t.Cleanup(refusing.Close)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"embedded", []string{"-messages", "5", "-latency", "0"}, exitOK},
		{"refused by the server", []string{"-base-url", refusing.URL, "-messages", "2"}, exitFailed},
		{"no members", []string{"-members", ","}, exitFlags},
		{"an argument", []string{"extra"}, exitFlags},
		{"help", []string{"-h"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if got := cli(ctx, tt.args, &out, io.Discard); got != tt.want {
				t.Errorf("exit %d, want %d; stdout:\n%s", got, tt.want, out.String())
			}
		})
	}
}
