// Command bulktag marks one customer-contact tag on many customers, as fast as
// WeCom's limits allow and never over them: the main job of the SDK.
//
// Without -base-url it starts an embedded mock WeCom that enforces the limits
// exactly as WeCom answers them (45033, 45009), with -latency of service time:
//
//	go run ./examples/bulktag -all-members
//	go run ./examples/bulktag -members member001,member002
//	go run ./examples/bulktag -customers 2000 -repeat 2 -workers 32
//
// It creates (or reuses) the tag with add_corp_tag, marks it with -workers
// goroutines, shows progress on stderr and ends with a summary on stdout.
//
// With -members or -all-members it tags real customers: it walks every
// customer of those members (-all-members: of every member who has
// customers) with batch/get_by_user and marks the tag on each (member,
// customer) pair that does not have it yet, marking from the first page on
// while the walk goes on. The embedded mock is then seeded with made-up
// customers (-seed-members, -seed-pairs, -seed-shared), so the command works
// with no set-up. The summary says how many pairs were found in how many
// pages, and how many were already marked.
//
// Without them it is a benchmark: -customers made-up customers of -user-id,
// each marked -repeat times.
//
// # Stopping
//
// The first SIGINT or SIGTERM stops the run gracefully: no new mark is
// started (each worker finishes the mark it is on), the marks in flight get
// up to -drain (default 5s) to finish, and when that runs out their calls are
// cancelled. The SDK keeps the slots of a cancelled call that was already sent
// until WeCom answers it, or until its lease TTL (-lease-ttl) if this process
// exits first, so the copies that go on never collide with it. Then the
// summary is printed as usual; its first line accounts for every mark:
//
//	marks:      600 requested, 412 done, 3 failed, 185 not started
//	stopped:    by interrupt with 16 marks in flight: 13 ended within the 5s drain, 3 cancelled when it ran out
//
// done + failed + not started is always the number requested. A second
// signal aborts at once: one line on stderr, no summary.
//
// # Exit status
//
//	0    every mark was done (a signal that came after the last mark was
//	     started and let it finish changes nothing), and every customer
//	     was found
//	1    the run ended on its own, and some marks failed, or the walk over
//	     the members' customers ended early
//	2    bad flags, or the setup failed (Redis unreachable, say): no mark was started
//	3    stopped by a first SIGINT or SIGTERM with marks not started or failed;
//	     the summary says how many of each
//	130  aborted by a second signal (128+SIGINT, as a shell reports an
//	     interrupted program); there is no summary, marks in flight are abandoned
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/mock"
)

// The exit statuses, as the package comment describes them.
const (
	exitOK      = 0
	exitFailed  = 1
	exitSetup   = 2
	exitStopped = 3
	exitAborted = 130
)

type config struct {
	baseURL, corpID, secret, userID, redis, redisPrefix string
	customers, repeat, workers                          int
	// members (comma-separated) or allMembers: mark the customers of
	// members, found with batch/get_by_user, instead of made-up ones.
	members    string
	allMembers bool
	// seed: the customers the embedded mock makes up for those modes.
	seed                             mock.CustomerSeed
	latency, jitter, leaseTTL, drain time.Duration
	// wecomConcurrency: the calls in flight the embedded mock allows per
	// API, when another system is to seem to share the budget (0: the
	// catalog's).
	wecomConcurrency int
	// fixedLimits turns off the limits learned from WeCom.
	fixedLimits bool
	// progress is how often progress is shown; 0: progressEvery's default.
	progress time.Duration
	// tty: stderr is a terminal, where progress rewrites one line.
	tty bool
}

func main() {
	// go-redis logs failed dials to stderr through a package logger of its
	// own; while Redis is down the marks wait on it (or fall back), as the
	// progress line says, and fail with throttle.ErrUnavailable only after
	// the limiter's bound, which the summary counts.
	redis.SetLogger(discardRedisLog{})
	os.Exit(bulktag(os.Args[1:], os.Stdout, os.Stderr))
}

// discardRedisLog quiets go-redis's logger.
type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

// bulktag is the whole program with real signals: the first SIGINT or
// SIGTERM stops the run gracefully, the second exits the process at once.
func bulktag(args []string, stdout, stderr io.Writer) int {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	return cli(args, sig, stdout, stderr, os.Exit)
}

// cli parses args and runs, taking its signals from sig: the first cancels
// the run's stop context, the second writes one line to stderr and calls
// exit(exitAborted). It returns the exit status.
func cli(args []string, sig <-chan os.Signal, stdout, stderr io.Writer, exit func(int)) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitSetup
	}
	cfg.tty = isTerminal(stderr)
	stderr = &lockedWriter{w: stderr} // the workers, the progress line and the signals share it
	stop, stopNow := context.WithCancel(context.Background())
	defer stopNow()
	go watchSignals(sig, func(os.Signal) { stopNow() }, func(s os.Signal) {
		fmt.Fprintf(stderr, "\nbulktag: second signal (%v): aborting now, marks in flight abandoned, no summary\n", s)
		exit(exitAborted)
	})
	code, err := run(stop, cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bulktag:", err)
	}
	return code
}

// watchSignals calls stop on the first signal from sig and abort on the
// second, then returns; it also returns when sig is closed.
func watchSignals(sig <-chan os.Signal, stop, abort func(os.Signal)) {
	first := true
	for s := range sig {
		if first {
			first = false
			stop(s)
			continue
		}
		abort(s)
		return
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bulktag", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.baseURL, "base-url", "", "WeCom API base URL (default: start the embedded mock in-process)")
	fs.StringVar(&cfg.corpID, "corp-id", "wwbulktag", "corp id")
	fs.StringVar(&cfg.secret, "secret", "bulktag-secret", "app secret")
	fs.StringVar(&cfg.userID, "user-id", "zhangsan", "member whose customers are marked")
	fs.IntVar(&cfg.customers, "customers", 2000, "number of customers to mark")
	fs.IntVar(&cfg.repeat, "repeat", 1, "times each customer is marked, interleaved so workers want the same customer at once")
	fs.IntVar(&cfg.workers, "workers", 32, "concurrent workers")
	fs.StringVar(&cfg.members, "members", "", "mark the customers of these members (comma-separated userids), walked with batch/get_by_user, instead of -customers made-up ones")
	fs.BoolVar(&cfg.allMembers, "all-members", false, "mark the customers of every member who has customers (get_follow_user_list)")
	fs.IntVar(&cfg.seed.Members, "seed-members", 3, "with -members/-all-members, members the embedded mock makes up (member001, ...)")
	fs.IntVar(&cfg.seed.Pairs, "seed-pairs", 2000, "with -members/-all-members, (member, customer) pairs the embedded mock makes up")
	fs.Float64Var(&cfg.seed.Shared, "seed-shared", 0.1, "fraction of the made-up customers that two members share")
	fs.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "service time of the embedded mock")
	fs.DurationVar(&cfg.jitter, "jitter", 0, "spread of the embedded mock's service time: drawn uniformly from latency±jitter")
	fs.BoolVar(&cfg.fixedLimits, "fixed-limits", false, "do not learn limits from WeCom's 45033s (wecom.WithoutAdaptiveLimits)")
	fs.IntVar(&cfg.wecomConcurrency, "wecom-concurrency", 0, "calls in flight the embedded mock allows per API, fewer than the SDK is told when another system shares the budget (0: the documented 5); the SDK learns it from the 45033s")
	fs.StringVar(&cfg.redis, "redis", "", "Redis for the limiter and token store shared by every copy: host:port, or a comma-separated list of cluster nodes")
	fs.StringVar(&cfg.redisPrefix, "redis-prefix", "bulktag:", "prefix of the Redis keys")
	fs.DurationVar(&cfg.leaseTTL, "lease-ttl", 0, "how long the slots of a copy that dies stay taken (default: the SDK's)")
	fs.DurationVar(&cfg.progress, "progress", 0, "how often progress is shown on stderr (default: 500ms on a terminal, where one line is rewritten; 5s elsewhere, a line each time)")
	fs.DurationVar(&cfg.drain, "drain", 5*time.Second, "after the first SIGINT/SIGTERM, how long the marks in flight may take to finish before their calls are cancelled (0: cancel them at once)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bulktag: unexpected arguments %q\n", fs.Args())
		return cfg, errors.New("unexpected arguments")
	}
	return cfg, nil
}

// lockedWriter serialises the writes of several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
