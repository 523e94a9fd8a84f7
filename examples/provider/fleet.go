package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// A copy of the provider in a fleet: several processes sharing one Redis
// (limiter, token store, permanent codes) against one mock WeCom served
// over HTTP (examples/mockserver -suite-corps). One run with -install
// receives the authorizations; then each copy, with -shard k/n, tags its
// share of the busy corps (bench/providers.sh).

// fleet is this process's part of the fleet: its installations on the
// shared Redis, and what it closes.
type fleet struct {
	in    *wecom.Installations
	close func()
}

// joinFleet connects to -redis and builds the suite's installations with
// the limiter, token store and permanent codes on it, calling the mock at
// -base-url over HTTP.
func joinFleet(ctx context.Context, cfg config) (*fleet, error) {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(cfg.redis, ",")})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("-redis %s: %w", cfg.redis, err)
	}
	limiter, err := throttleredis.New(rdb, throttleredis.Options{Prefix: cfg.redisPrefix + "throttle:"})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	f := &fleet{close: func() { limiter.Close(); rdb.Close() }}
	var lim throttle.Backend = limiter
	if cfg.localLimits { // a reference: what the limiter's Redis round trips cost
		lim = throttle.NewMemory()
	}
	store, err := redisstore.New(rdb, cfg.redisPrefix+"token:")
	var codes *redisstore.PermanentCodes
	if err == nil {
		codes, err = redisstore.NewPermanentCodes(rdb, cfg.redisPrefix, suiteID)
	}
	// Every corp's calls in flight at once on one transport: keep their
	// connections rather than the default 64 idle ones.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4096
	opts := []wecom.Option{wecom.WithBaseURL(cfg.baseURL), wecom.WithTransport(tr),
		wecom.WithLimiter(lim), wecom.WithTokenStore(store),
		wecom.WithEgress(egress), wecom.WithIPLimits(cfg.ipPerMinute, 0), wecom.WithObserver(observe)}
	var suite *wecom.Suite
	if err == nil {
		suite, err = wecom.NewSuite(suiteID, suiteCode, opts...)
	}
	if err == nil {
		f.in, err = wecom.NewInstallations(suite, codes, wecom.WithClientOptions(opts...))
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// install serves the suite's command URL on loopback, asks the mock to
// push the suite_ticket and every corp's create_auth to it, and returns
// how many authorizations the installations kept.
func install(ctx context.Context, cfg config, in *wecom.Installations) (int, error) {
	crypto, err := callback.NewCrypto(cbToken, cbKey, suiteID)
	if err != nil {
		return 0, err
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		return 0, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	var kept atomic.Int64
	in.Handle(h, func(context.Context, *callback.AuthEvent, *wecom.Authorization) error {
		kept.Add(1)
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	form := url.Values{"url": {"http://" + ln.Addr().String() + "/"}, "token": {cbToken}, "key": {cbKey}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.baseURL+"/mock/install", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("mock install: %s: %s", resp.Status, b)
	}
	if st := h.Stats(); st.Failed+st.Rejected > 0 {
		return int(kept.Load()), fmt.Errorf("the command URL: %+v", st)
	}
	return int(kept.Load()), nil
}

// shard returns the corps (indices) copy k of n serves: the busy ones it
// tags, and the idle ones it only builds a client for.
func shard(cfg config) (busy, idle []int) {
	for i := cfg.shardK; i < cfg.corps; i += cfg.shardN {
		if i < cfg.busy {
			busy = append(busy, i)
		} else {
			idle = append(idle, i)
		}
	}
	return busy, idle
}

// idleHeap builds the client of every idle corp (no token fetched) and
// returns the heap each holds.
func idleHeap(ctx context.Context, in *wecom.Installations, idle []int) (int64, error) {
	if len(idle) == 0 {
		return 0, nil
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, i := range idle {
		if _, err := in.Client(ctx, corpID(i)); err != nil {
			return 0, err
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(len(idle)), nil
}

// runShard tags this copy's busy corps on the fleet.
func runShard(ctx context.Context, cfg config, stdout io.Writer) (*summary, error) {
	f, err := joinFleet(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if cfg.install {
		n, err := install(ctx, cfg, f.in)
		fmt.Fprintf(stdout, "installed: %d corps authorized the suite\n", n)
		if err == nil && n != cfg.corps {
			err = fmt.Errorf("%d of %d authorizations received", n, cfg.corps)
		}
		return nil, err
	}
	busy, idle := shard(cfg)
	perCorp, err := idleHeap(ctx, f.in, idle)
	if err != nil {
		return nil, err
	}
	sum := tagAll(ctx, f.in, cfg, busy)
	sum.idle, sum.idleHeap = len(idle), perCorp
	sum.mock, err = remoteStats(ctx, cfg.baseURL)
	return sum, err
}

// remoteStats reads the counters of the mock at base.
func remoteStats(ctx context.Context, base string) (mock.Stats, error) {
	var st mock.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mock/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, errors.New("mock stats: " + resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}
