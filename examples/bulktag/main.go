// Command bulktag marks one customer-contact tag on many customers, as fast as
// WeCom's limits allow and never over them: the main job of the SDK.
//
// Without -base-url it starts an embedded mock WeCom that enforces the limits
// exactly as WeCom answers them (45033, 45009), with -latency of service time:
//
//	go run ./examples/bulktag
//	go run ./examples/bulktag -customers 2000 -repeat 2 -workers 32
//
// It creates (or reuses) the tag with add_corp_tag, marks it with -workers
// goroutines, shows progress on stderr and ends with a summary. It exits
// non-zero if any mark failed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

const (
	groupName = "bulktag"
	tagName   = "bulk-marked"
)

type config struct {
	baseURL, corpID, secret, userID, redis, redisPrefix string
	customers, repeat, workers                          int
	latency, jitter, leaseTTL                           time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.baseURL, "base-url", "", "WeCom API base URL (default: start the embedded mock in-process)")
	flag.StringVar(&cfg.corpID, "corp-id", "wwbulktag", "corp id")
	flag.StringVar(&cfg.secret, "secret", "bulktag-secret", "app secret")
	flag.StringVar(&cfg.userID, "user-id", "zhangsan", "member whose customers are marked")
	flag.IntVar(&cfg.customers, "customers", 2000, "number of customers to mark")
	flag.IntVar(&cfg.repeat, "repeat", 1, "times each customer is marked, interleaved so workers want the same customer at once")
	flag.IntVar(&cfg.workers, "workers", 32, "concurrent workers")
	flag.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "service time of the embedded mock")
	flag.DurationVar(&cfg.jitter, "jitter", 0, "spread of the embedded mock's service time: drawn uniformly from latency±jitter")
	flag.StringVar(&cfg.redis, "redis", "", "Redis for the limiter and token store shared by every copy: host:port, or a comma-separated list of cluster nodes")
	flag.StringVar(&cfg.redisPrefix, "redis-prefix", "bulktag:", "prefix of the Redis keys")
	flag.DurationVar(&cfg.leaseTTL, "lease-ttl", 0, "how long the slots of a copy that dies stay taken (default: the SDK's)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ok, err := run(ctx, cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bulktag:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// stats are gathered by the observer and the workers.
type stats struct {
	attempts, retries atomic.Int64
	sending           atomic.Int64 // total ns from sending to answer
	mu                sync.Mutex
	failures          map[string]int // by errcode or error class
	latencies         []time.Duration
}

func (s *stats) fail(err error) {
	key := "other"
	var ae *wecom.APIError
	switch {
	case errors.As(err, &ae):
		key = fmt.Sprintf("errcode %d", ae.Code)
	case errors.Is(err, wecom.ErrRateLimited):
		key = "rate limited (cooldown)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		key = "cancelled"
	}
	s.mu.Lock()
	s.failures[key]++
	s.mu.Unlock()
}

func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (bool, error) {
	switch {
	case cfg.customers <= 0 || cfg.repeat <= 0 || cfg.workers <= 0:
		return false, errors.New("-customers, -repeat and -workers must be positive")
	}
	var (
		srv  *mock.Server
		opts []wecom.Option
	)
	if cfg.baseURL == "" {
		// The embedded mock answers in-process, through an httpmock transport:
		// no sockets, so the figures show the limiter, not the loopback stack.
		m, err := mock.New(mock.Config{Latency: cfg.latency, LatencyJitter: cfg.jitter})
		if err != nil {
			return false, err
		}
		m.AddApp(cfg.corpID, cfg.secret)
		mt := httpmock.NewMockTransport()
		cfg.baseURL = "http://wecom.mock"
		m.Register(mt, cfg.baseURL)
		srv, opts = m, append(opts, wecom.WithTransport(mt))
		fmt.Fprintf(stderr, "embedded mock WeCom (in-process), latency %s ± %s\n", cfg.latency, cfg.jitter)
	}

	if cfg.redis != "" {
		rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(cfg.redis, ",")})
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return false, fmt.Errorf("-redis %s: %w", cfg.redis, err)
		}
		limiter, err := throttle.NewRedis(rdb, throttle.RedisOptions{Prefix: cfg.redisPrefix + "throttle:"})
		if err != nil {
			return false, err
		}
		defer limiter.Close()
		store, err := wecom.NewRedisTokenStore(rdb, cfg.redisPrefix+"token:")
		if err != nil {
			return false, err
		}
		opts = append(opts, wecom.WithLimiter(limiter), wecom.WithTokenStore(store))
		fmt.Fprintf(stderr, "limits and token shared through Redis at %s\n", cfg.redis)
	}

	if cfg.leaseTTL > 0 {
		opts = append(opts, wecom.WithLeaseTTL(cfg.leaseTTL))
	}
	st := &stats{failures: map[string]int{}}
	c, err := wecom.New(cfg.corpID, cfg.secret, append(opts,
		wecom.WithBaseURL(cfg.baseURL),
		wecom.WithObserver(func(_ context.Context, a wecom.Attempt) {
			if a.Path != "/cgi-bin/externalcontact/mark_tag" {
				return
			}
			st.attempts.Add(1)
			st.sending.Add(int64(a.Duration))
			if a.Number > 1 {
				st.retries.Add(1)
			}
		}))...)
	if err != nil {
		return false, err
	}
	tagID, err := ensureTag(ctx, c)
	if err != nil {
		return false, fmt.Errorf("tag: %w", err)
	}
	tokenCalls := 0
	if srv != nil {
		tokenCalls = srv.Stats().GetTokenCalls
		srv.ResetStats() // count only the marks from here
	}

	jobs := make(chan string)
	total := cfg.customers * cfg.repeat
	var done, ok atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for ext := range jobs {
				t0 := time.Now()
				err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: cfg.userID, ExternalUserID: ext, AddTags: []string{tagID}})
				d := time.Since(t0)
				if err != nil {
					st.fail(err)
				} else {
					ok.Add(1)
				}
				st.mu.Lock()
				st.latencies = append(st.latencies, d)
				st.mu.Unlock()
				done.Add(1)
			}
		})
	}
	progressDone := make(chan struct{})
	go progress(stderr, &done, total, start, progressDone)
	// Each customer's marks are adjacent, so several workers want it at once.
feed:
	for i := range cfg.customers {
		for range cfg.repeat {
			select {
			case jobs <- fmt.Sprintf("wm%08d", i):
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	close(progressDone)

	marks := int(done.Load())
	fmt.Fprintf(stdout, "marks:      %d requested, %d done, %d ok, %d failed\n", total, marks, ok.Load(), int64(marks)-ok.Load())
	fmt.Fprintf(stdout, "calls:      %d mark_tag attempts, %d retries, mean round trip %s\n", st.attempts.Load(), st.retries.Load(),
		time.Duration(st.sending.Load()/max(1, st.attempts.Load())).Round(10*time.Microsecond))
	if len(st.failures) > 0 {
		keys := make([]string, 0, len(st.failures))
		for k := range st.failures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "failures:   %s: %d\n", k, st.failures[k])
		}
	}
	rate := float64(ok.Load()) / elapsed.Seconds()
	fmt.Fprintf(stdout, "elapsed:    %s\n", elapsed.Round(time.Millisecond))
	// Unix times, for tools that add up copies running at once.
	end := start.Add(elapsed)
	fmt.Fprintf(stdout, "marking:    %d.%09d to %d.%09d (unix seconds)\n", start.Unix(), start.Nanosecond(), end.Unix(), end.Nanosecond())
	fmt.Fprintf(stdout, "throughput: %.1f marks/s\n", rate)
	if len(st.latencies) > 0 {
		slices.Sort(st.latencies)
		fmt.Fprintf(stdout, "latency:    p50 %s, p99 %s\n", pct(st.latencies, 0.50), pct(st.latencies, 0.99))
	}
	if srv == nil {
		if ms, err := remoteStats(ctx, cfg.baseURL); err == nil {
			fmt.Fprintf(stdout, "mock:       (all processes so far) max in flight %d, 45033 answered %d, 45009 answered %d, gettoken calls %d, marks %d\n",
				ms.MaxInFlight["/cgi-bin/externalcontact/mark_tag"], ms.Refusals[wecom.CodeConcurrencyLimited], ms.Refusals[wecom.CodeFrequencyLimited], ms.GetTokenCalls, ms.MarkCalls)
		}
	}
	if srv != nil {
		s := srv.Stats()
		bound := float64(wecom.DefaultLimits("/cgi-bin/externalcontact/mark_tag").Concurrency) / cfg.latency.Seconds()
		fmt.Fprintf(stdout, "mock:       max in flight %d, 45033 answered %d, 45009 answered %d, gettoken calls %d\n",
			s.MaxInFlight["/cgi-bin/externalcontact/mark_tag"], s.Refusals[wecom.CodeConcurrencyLimited], s.Refusals[wecom.CodeFrequencyLimited], tokenCalls+s.GetTokenCalls)
		fmt.Fprintf(stdout, "bound:      %.1f%% of the concurrency bound 5/latency = %.0f marks/s\n", 100*rate/bound, bound)
	}
	return marks == total && ok.Load() == int64(total), nil
}

// ensureTag returns the id of the tag to mark, reusing it if it exists.
func ensureTag(ctx context.Context, c *wecom.Client) (string, error) {
	groups, err := c.CustomerTags.List(ctx, wecom.CorpTagListRequest{})
	if err != nil {
		return "", err
	}
	for _, g := range groups {
		if g.GroupName != groupName {
			continue
		}
		for _, t := range g.Tags {
			if t.Name == tagName {
				return t.ID, nil
			}
		}
	}
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: groupName, Tags: []wecom.CorpTagSpec{{Name: tagName}}})
	var ae *wecom.APIError
	if errors.As(err, &ae) && ae.Code == wecom.CodeTagNameExists {
		return ensureTag(ctx, c) // another copy created it meanwhile
	}
	if err != nil {
		return "", err
	}
	if len(g.Tags) == 0 {
		return "", errors.New("add_corp_tag answered no tag")
	}
	return g.Tags[0].ID, nil
}

// mockStats are the counters examples/mockserver serves.
type mockStats struct {
	MaxInFlight   map[string]int
	Refusals      map[int]int
	GetTokenCalls int
	MarkCalls     int
}

// remoteStats reads the counters of a mock served by examples/mockserver.
func remoteStats(ctx context.Context, baseURL string) (*mockStats, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(baseURL, "/")+"/mock/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var ms mockStats
	return &ms, json.NewDecoder(resp.Body).Decode(&ms)
}

func progress(w io.Writer, done *atomic.Int64, total int, start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			fmt.Fprintln(w)
			return
		case <-t.C:
			n := done.Load()
			fmt.Fprintf(w, "\rmarked %d/%d (%.0f/s)   ", n, total, float64(n)/time.Since(start).Seconds())
		}
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(10 * time.Microsecond)
}
