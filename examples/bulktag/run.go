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
	"github.com/wecomkit/wecom/throttle"
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
	byMembers := cfg.members != "" || cfg.allMembers
	var (
		srv  *mock.Server
		opts []wecom.Option
	)
	if cfg.baseURL == "" {
		// The embedded mock answers in-process, through an httpmock transport:
		// no sockets, so the figures show the limiter, not the loopback stack.
		m, err := mock.New(mock.Config{Latency: cfg.latency, LatencyJitter: cfg.jitter})
		if err != nil {
			return exitSetup, err
		}
		m.AddApp(cfg.corpID, cfg.secret)
		if byMembers {
			s := m.SeedCustomers(cfg.corpID, cfg.seed)
			fmt.Fprintf(stderr, "embedded mock: %d made-up customers of %d members (%d pairs)\n", s.Customers, len(s.Members), s.Pairs)
		}
		mt := httpmock.NewMockTransport()
		cfg.baseURL = "http://wecom.mock"
		m.Register(mt, cfg.baseURL)
		srv, opts = m, append(opts, wecom.WithTransport(mt))
		fmt.Fprintf(stderr, "embedded mock WeCom (in-process), latency %s ± %s\n", cfg.latency, cfg.jitter)
	}
	var fl *fleetCount
	if cfg.redis != "" {
		rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(cfg.redis, ",")})
		defer rdb.Close()
		if err := rdb.Ping(stop).Err(); err != nil {
			return exitSetup, fmt.Errorf("-redis %s: %w", cfg.redis, err)
		}
		fl = newFleetCount(rdb, cfg.redisPrefix, cfg.corpID)
		limiter, err := throttle.NewRedis(rdb, throttle.RedisOptions{Prefix: cfg.redisPrefix + "throttle:"})
		if err != nil {
			return exitSetup, err
		}
		defer limiter.Close()
		store, err := wecom.NewRedisTokenStore(rdb, cfg.redisPrefix+"token:")
		if err != nil {
			return exitSetup, err
		}
		opts = append(opts, wecom.WithLimiter(limiter), wecom.WithTokenStore(store))
		fmt.Fprintf(stderr, "limits and token shared through Redis at %s\n", cfg.redis)
	}
	if cfg.leaseTTL > 0 {
		opts = append(opts, wecom.WithLeaseTTL(cfg.leaseTTL))
	}
	st := newStats()
	c, err := wecom.New(cfg.corpID, cfg.secret, append(opts, wecom.WithBaseURL(cfg.baseURL), wecom.WithObserver(st.observe))...)
	if err != nil {
		return exitSetup, err
	}
	tagID, err := ensureTag(stop, c)
	feed := synthetic(cfg.userID, cfg.customers, cfg.repeat)
	var found *walked
	if err == nil && byMembers {
		found = &walked{}
		found.members, err = members(stop, c, cfg)
		feed = memberCustomers(c, tagID, found)
	}
	if err != nil && stop.Err() != nil {
		// Stopped before marking began: nothing done, nothing started.
		o := outcome{total: cfg.customers * cfg.repeat, stopped: true}
		if byMembers {
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
