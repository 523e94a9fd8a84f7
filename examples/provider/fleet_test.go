package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestShard: copy k of n tags the busy corps i with i%n == k and builds the
// others' clients idle.
func TestShard(t *testing.T) {
	for _, tc := range []struct {
		corps, busy, k, n  int
		wantBusy, wantIdle []int
	}{
		{corps: 7, busy: 4, k: 0, n: 3, wantBusy: []int{0, 3}, wantIdle: []int{6}},
		{corps: 7, busy: 4, k: 2, n: 3, wantBusy: []int{2}, wantIdle: []int{5}},
		{corps: 3, busy: 3, k: 0, n: 1, wantBusy: []int{0, 1, 2}},
		{corps: 2, busy: 0, k: 1, n: 2, wantIdle: []int{1}},
	} {
		busy, idle := shard(config{corps: tc.corps, busy: tc.busy, shardK: tc.k, shardN: tc.n})
		if !slices.Equal(busy, tc.wantBusy) || !slices.Equal(idle, tc.wantIdle) {
			t.Errorf("%+v: busy %v idle %v, want %v and %v", tc, busy, idle, tc.wantBusy, tc.wantIdle)
		}
	}
}

// serveMock serves the mock of cfg over HTTP as examples/mockserver does:
// the API, its counters, and POST /mock/install pushing the ticket and
// every corp's create_auth to the form's command URL.
func serveMock(t *testing.T, cfg config) (*mock.Server, string) {
	t.Helper()
	srv, _, err := embedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	mux := http.NewServeMux()
	mux.Handle("/cgi-bin/", srv.Handler())
	mux.HandleFunc("GET /mock/stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(srv.Stats())
	})
	mux.HandleFunc("POST /mock/install", func(w http.ResponseWriter, r *http.Request) {
		err := srv.SetSuiteCallback(suiteID, mock.CallbackConfig{URL: r.FormValue("url"), Token: r.FormValue("token"), EncodingAESKey: r.FormValue("key")})
		if err == nil {
			err = srv.WaitCallbacks(r.Context())
		}
		for i := 0; err == nil && i < cfg.corps; i++ {
			_, err = srv.Authorize(suiteID, corpID(i))
		}
		if err == nil {
			err = srv.WaitCallbacks(r.Context())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// TestProviderFleet: one -install run keeps the authorizations of 9 corps
// in Redis; two copies sharing it then tag 6 busy corps, 3 each, over HTTP:
// both exit 0, one get_corp_token per busy corp and none for the idle ones,
// nothing refused.
func TestProviderFleet(t *testing.T) {
	rdb := redistest.Single(t)
	cfg := config{corps: 9, customers: 10, ipPerMinute: catalog.ThirdPartyIPPerMinute, latency: 10 * time.Millisecond}
	srv, base := serveMock(t, cfg)
	args := []string{"-base-url", base, "-redis", os.Getenv(redistest.EnvAddr), "-redis-prefix", redistest.Prefix(t, rdb),
		"-corps", "9", "-customers", "10", "-latency", "10ms", "-ip-per-minute", fmt.Sprint(cfg.ipPerMinute)}
	ctx := context.Background()
	var out bytes.Buffer
	if code := cli(ctx, append(args, "-install"), &out, &out); code != exitOK || !strings.Contains(out.String(), "installed: 9 corps") {
		t.Fatalf("-install: exit %d:\n%s", code, out.String())
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	codes := make([]int, 2)
	for k := range 2 {
		wg.Go(func() {
			codes[k] = cli(ctx, append(slices.Clone(args), "-busy", "6", "-shard", fmt.Sprintf("%d/2", k)), &outs[k], &outs[k])
		})
	}
	wg.Wait()
	for k, o := range outs {
		if codes[k] != exitOK || !strings.Contains(o.String(), "30 of 30 customers tagged in 3 corps") {
			t.Errorf("copy %d: exit %d:\n%s", k, codes[k], o.String())
		}
	}
	st := srv.Stats()
	if n := st.Calls[catalog.GetCorpToken.Path()]; n != 6 {
		t.Errorf("%d get_corp_token calls, want one for each of the 6 busy corps", n)
	}
	if len(st.Refusals) != 0 || st.MarkCalls != 60 {
		t.Errorf("mock: %d marks, refusals %v; want 60 marks, none refused", st.MarkCalls, st.Refusals)
	}
}
