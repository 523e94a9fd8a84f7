// Command provider serves a third-party suite's authorizing corps, as a
// service provider (服务商) does from one deployment: it receives the
// suite's ticket and the authorizations of -corps corps by callback, then
// tags every customer of every corp at once.
//
//	go run ./examples/provider
//	go run ./examples/provider -corps 200 -customers 50 -ip-per-minute 4000
//
// It runs against an embedded mock WeCom, in process. The mock pushes the
// suite_ticket and each corp's create_auth to the command URL, served by a
// callback.Handler on which wecom.Installations registered its handlers:
// each auth code is spent for the corp's permanent code, kept in a
// PermanentCodeStore. A Registry then builds each corp's client on first
// use, running on the corp's token from get_corp_token (one fetch per
// corp). Every corp marks a tag (externalcontact/mark_tag) on each of its
// customers, all corps at once.
//
// Two limits hold the run, both enforced by the mock as WeCom does: 5
// mark_tag calls in flight per corp (45033 beyond), which the client holds
// per corp, so each corp runs at its own bound; and WeCom's per-IP window,
// which counts the calls of every corp sending from the provider's egress
// IP (45009 beyond): the mock's is set to -ip-per-minute, and the
// client's to match (WithEgress, WithIPLimits), so that it holds the marks
// past it until the window has room (-mock-ip-per-minute gives the mock a
// smaller window than the client knows: the run is then refused 45009 and
// fails). The summary says, per corp and in total, what was tagged and
// refused (a run of 2026-11-27, on a shared machine):
//
//	corp wwprov0001: 200 tagged, 0 failed, 0 refused (45033 0, 45009 0) in 1m4.533s
//	...
//	total:     10000 of 10000 customers tagged in 50 corps, 0 failed, 0 refused (45033 0, 45009 0); 50 get_corp_token calls
//	time:      1m4.703s, 155 marks a second; the per-IP window of 6000 a minute allows 1m0s at best
//	mock:      45033 answered 0, 45009 answered 0; mark_tag most in flight per corp 5
//
// # A fleet
//
// With -base-url and -redis, a copy runs against a mock WeCom served over
// HTTP (examples/mockserver -suite-corps) and keeps the limits, the tokens
// and the permanent codes on Redis, shared with the other copies under
// -redis-prefix: one run with -install receives the authorizations on a
// loopback command URL; then each copy, with -shard k/n, builds the
// clients of its share of the idle corps (the summary's heap per idle
// corp) and tags its share of the first -busy corps, each corp's line
// giving its marks a second over its bound 5/-latency
// (bench/providers.sh runs three).
//
// # Exit status
//
//	0  every customer of every corp was tagged, and the mock answered no
//	   45033 and no 45009
//	1  a customer was not tagged, or the mock refused a call
//	2  bad flags, or the set-up (callbacks, authorizations) failed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	exitOK     = 0
	exitFailed = 1
	exitFlags  = 2
)

type config struct {
	corps, customers int
	// ipPerMinute is the client's per-IP window, and the mock's unless
	// mockIPPerMinute is set.
	ipPerMinute, mockIPPerMinute int
	latency                      time.Duration
	// A copy in a fleet (fleet.go): the mock at baseURL, Redis shared
	// under redisPrefix; install receives the authorizations; otherwise
	// the copy tags the busy corps i (i < busy) with i%shardN == shardK.
	baseURL, redis, redisPrefix string
	install, localLimits        bool
	busy, shardK, shardN        int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// cli parses args and runs; it returns the exit status.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitFlags
	}
	sum, err := run(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "provider:", err)
		return exitFlags
	}
	if sum == nil { // -install
		return exitOK
	}
	sum.print(stdout)
	if !sum.ok() {
		return exitFailed
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.corps, "corps", 50, "corps that authorize the suite")
	fs.IntVar(&cfg.customers, "customers", 200, "customers of each corp, each tagged once")
	fs.IntVar(&cfg.ipPerMinute, "ip-per-minute", 6000, "WeCom's per-IP window of an API, across every corp: the mock's and the client's")
	fs.IntVar(&cfg.mockIPPerMinute, "mock-ip-per-minute", 0, "the mock's per-IP window, when it is to differ from the client's (0: -ip-per-minute)")
	fs.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "service time of the embedded mock (with -base-url: of that mock, for the bound 5/latency)")
	fs.StringVar(&cfg.baseURL, "base-url", "", "a mock WeCom served over HTTP (examples/mockserver -suite-corps) instead of the embedded one; needs -redis")
	fs.StringVar(&cfg.redis, "redis", "", "with -base-url: Redis address(es), comma-separated, for the limiter, token store and permanent codes")
	fs.StringVar(&cfg.redisPrefix, "redis-prefix", "provider:", "prefix of the Redis keys")
	fs.BoolVar(&cfg.install, "install", false, "with -base-url: receive the authorizations of -corps corps, keep their permanent codes in Redis, and exit")
	fs.BoolVar(&cfg.localLimits, "local-limits", false, "with -base-url: limits held in this process, not on Redis (each copy's own per-IP window): a reference for what the shared limiter costs")
	fs.IntVar(&cfg.busy, "busy", 0, "with -base-url: how many of the -corps corps tag (0: all); the others' clients are built idle")
	shardFlag := fs.String("shard", "0/1", "with -base-url: k/n, this copy tags the busy corps i with i%n == k")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	_, err := fmt.Sscanf(*shardFlag, "%d/%d", &cfg.shardK, &cfg.shardN)
	if cfg.busy == 0 {
		cfg.busy = cfg.corps
	}
	switch {
	case err != nil || cfg.shardN < 1 || cfg.shardK < 0 || cfg.shardK >= cfg.shardN:
		err = fmt.Errorf("-shard %q: want k/n with 0 <= k < n", *shardFlag)
	case (cfg.baseURL == "") != (cfg.redis == ""):
		err = errors.New("-base-url and -redis go together")
	case cfg.baseURL == "" && (cfg.install || cfg.localLimits || cfg.shardN > 1 || cfg.busy != cfg.corps):
		err = errors.New("-install, -local-limits, -busy and -shard need -base-url")
	case cfg.busy < 0 || cfg.busy > cfg.corps:
		err = errors.New("-busy must be between 0 and -corps")
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.corps < 1 || cfg.corps > 9999 || cfg.customers < 1 || cfg.ipPerMinute < 1 || cfg.mockIPPerMinute < 0 || cfg.latency < 0:
		err = errors.New("-corps (up to 9999), -customers and -ip-per-minute must be positive, -latency not negative")
	}
	if err != nil {
		fmt.Fprintln(stderr, "provider:", err)
	}
	return cfg, err
}
