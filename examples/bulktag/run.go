package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

const (
	groupName = "bulktag"
	tagName   = "bulk-marked"
	markPath  = string(catalog.MarkTag)
	batchPath = string(catalog.CustomerBatch)
)

// run sets up the client (and the embedded mock without -base-url), marks
// every customer and prints the summary on stdout. When stop ends, no new
// mark is started and the marks in flight get cfg.drain to finish (see
// markAll). It returns the exit status, and the error that ended a failed
// setup (then the status is exitSetup).
func run(stop context.Context, cfg config, stdout, stderr io.Writer) (int, error) {
	if cfg.customers <= 0 || cfg.repeat <= 0 || cfg.workers <= 0 || cfg.drain < 0 {
		return exitSetup, errors.New("-customers, -repeat and -workers must be positive, -drain not negative")
	}
	if cfg.members != "" && cfg.allMembers {
		return exitSetup, errors.New("-members and -all-members: give one")
	}
	srv, opts, err := embeddedMock(&cfg, stderr)
	if err != nil {
		return exitSetup, err
	}
	fl, ropts, closeRedis, err := sharedRedis(stop, cfg, stderr)
	if err != nil {
		return exitSetup, err
	}
	defer closeRedis()
	opts = append(opts, ropts...)
	if cfg.leaseTTL > 0 {
		opts = append(opts, wecom.WithLeaseTTL(cfg.leaseTTL))
	}
	if cfg.fixedLimits {
		opts = append(opts, wecom.WithoutAdaptiveLimits())
	}
	st := newStats()
	c, err := wecom.New(cfg.corpID, cfg.secret, append(opts, wecom.WithBaseURL(cfg.baseURL), wecom.WithObserver(st.observe), wecom.WithStallObserver(st.stalled))...)
	if err != nil {
		return exitSetup, err
	}
	tagID, found, feed, err := prepare(stop, c, cfg)
	if err != nil && stop.Err() != nil {
		// Stopped before marking began: nothing done, nothing started.
		o := outcome{total: cfg.customers * cfg.repeat, stopped: true}
		if cfg.byMembers() {
			o.total = 0
		}
		o.undrained = !drainClient(c, time.Now().Add(cfg.drain))
		return o.print(stdout, st, cfg, srv), nil
	}
	if err != nil {
		return exitSetup, fmt.Errorf("tag or members: %w", err)
	}
	tokenCalls := 0
	if srv != nil {
		tokenCalls = srv.Stats().GetTokenCalls
		srv.ResetStats() // count only the marks from here
	}
	o := markAll(stop, c, cfg, tagID, st, fl, stderr, feed)
	o.found = found
	code := o.print(stdout, st, cfg, srv)
	printFleet(stdout, fl)
	printMockStats(stdout, cfg, srv, tokenCalls, o)
	return code, nil
}

// byMembers reports whether the run marks members' customers (-members,
// -all-members) rather than made-up ones.
func (cfg config) byMembers() bool { return cfg.members != "" || cfg.allMembers }

// embeddedMock starts the embedded mock when no -base-url is given, seeded
// with customers for -members and -all-members, and points cfg at it. It
// answers in-process, through an httpmock transport: no sockets, so the
// figures show the limiter, not the loopback stack.
func embeddedMock(cfg *config, stderr io.Writer) (*mock.Server, []wecom.Option, error) {
	if cfg.baseURL != "" {
		return nil, nil, nil
	}
	m, err := mock.New(mock.Config{Latency: cfg.latency, LatencyJitter: cfg.jitter, Concurrency: cfg.wecomConcurrency})
	if err != nil {
		return nil, nil, err
	}
	m.AddApp(cfg.corpID, cfg.secret)
	if cfg.byMembers() {
		s := m.SeedCustomers(cfg.corpID, cfg.seed)
		fmt.Fprintf(stderr, "embedded mock: %d made-up customers of %d members (%d pairs)\n", s.Customers, len(s.Members), s.Pairs)
	}
	mt := httpmock.NewMockTransport()
	cfg.baseURL = "http://wecom.mock"
	m.Register(mt, cfg.baseURL)
	fmt.Fprintf(stderr, "embedded mock WeCom (in-process), latency %s ± %s\n", cfg.latency, cfg.jitter)
	return m, []wecom.Option{wecom.WithTransport(mt)}, nil
}

// sharedRedis connects to -redis, if given, for the limiter, the token store
// and the fleet's counters; closeRedis is never nil.
func sharedRedis(ctx context.Context, cfg config, stderr io.Writer) (fl *fleetCount, opts []wecom.Option, closeRedis func(), err error) {
	closeRedis = func() {}
	if cfg.redis == "" {
		return nil, nil, closeRedis, nil
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(cfg.redis, ",")})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, closeRedis, fmt.Errorf("-redis %s: %w", cfg.redis, err)
	}
	limiter, err := throttleredis.New(rdb, throttleredis.Options{Prefix: cfg.redisPrefix + "throttle:"})
	if err != nil {
		rdb.Close()
		return nil, nil, closeRedis, err
	}
	closeRedis = func() {
		limiter.Close()
		rdb.Close()
	}
	store, err := redisstore.New(rdb, cfg.redisPrefix+"token:")
	if err != nil {
		closeRedis()
		return nil, nil, func() {}, err
	}
	fmt.Fprintf(stderr, "limits and token shared through Redis at %s\n", cfg.redis)
	return newFleetCount(rdb, cfg.redisPrefix, cfg.corpID), []wecom.Option{wecom.WithLimiter(limiter), wecom.WithTokenStore(store)}, closeRedis, nil
}

// prepare finds (or makes) the tag and, for -members and -all-members, the
// members, and returns what hands out the marks.
func prepare(ctx context.Context, c *wecom.Client, cfg config) (tagID string, found *walked, feed feeder, err error) {
	if tagID, err = ensureTag(ctx, c); err != nil {
		return "", nil, nil, err
	}
	if !cfg.byMembers() {
		return tagID, nil, synthetic(cfg.userID, cfg.customers, cfg.repeat), nil
	}
	found = &walked{found: make(map[string]bool)}
	if found.members, err = members(ctx, c, cfg); err != nil {
		return "", nil, nil, err
	}
	return tagID, found, memberCustomers(c, tagID, found), nil
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
