// Command directory exports a corp's whole directory (通讯录) to CSV, as
// fast as WeCom's limits allow: the third main job of the SDK.
//
// It reads the departments (department/simplelist), walks the members with
// user/list_id, then reads every member with user/get, from -workers
// goroutines, and writes a header row and one row per member, the userid
// first, to -out:
//
//	go run ./examples/directory
//	go run ./examples/directory -members 3000 -out members.csv
//
// WeCom allows 10,000 calls a minute per corp and API. Without -base-url
// the run is against an embedded mock WeCom that enforces that window
// (45009 beyond, and the API blocked for the rest of the minute), seeded
// with -members members (12,000 by default): more user/get calls than a
// minute allows, so the client's limiter holds the calls past 10,000 until
// the sliding window has room, and none is refused. The summary says how
// long the user/get phase took against the least the window allows:
//
//	members:    12000 written to directory.csv, 0 failed (12000 userids from user/list_id, 101 departments)
//	user/get:   12000 calls in 1m1.9s; the window allows 1m1.3s at best (60s + 2000 calls at 32/20ms): 99.0%
//	mock:       45009 answered 0, calls user/get 12000, user/list_id 3
//
// The bound: the first 10,000 calls may go as fast as the workers and the
// latency let them (workers/latency calls a second); call k > 10,000 starts
// no earlier than a minute after call k-10,000 started; so the last ends no
// earlier than 60 s + (N - 10,000) / (workers/latency) after the first
// started, plus its own latency.
//
// -per-minute sets another minute window, in the client and the embedded
// mock, for a corp whose limit is known to differ or a shorter run:
// -members 1200 -per-minute 1000 spills over the window as the default
// does, with a tenth of the calls.
//
// Against any server that speaks WeCom's API, give -base-url, -corp-id and
// -secret (the contact-sync secret, or an app's that can read the
// directory); 45009 is then known only to WeCom.
//
// # Exit status
//
//	0  every member listed was written (and, on the embedded mock, no
//	   call was refused with 45009)
//	1  a member could not be read, or the mock refused a call
//	2  bad flags, or the export could not start
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const (
	exitOK     = 0
	exitFailed = 1
	exitFlags  = 2
)

// embeddedBase is the base URL of the embedded mock.
const embeddedBase = "https://qyapi.weixin.qq.com"

type config struct {
	baseURL, corpID, secret string
	out                     string
	workers                 int
	// members, departments, latency: the embedded mock's directory and
	// service time.
	members, departments int
	latency              time.Duration
	progress             time.Duration
	// perMinute overrides WeCom's user/get calls a minute per corp, in the
	// client and the embedded mock (0: the catalog's).
	perMinute int
}

// minuteLimit is the user/get calls a minute per corp the run holds to:
// -per-minute, or WeCom's, as the catalog states it.
func (cfg config) minuteLimit() int {
	if cfg.perMinute > 0 {
		return cfg.perMinute
	}
	return catalogLimit(catalog.RulePerMinute)
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
	var srv *mock.Server
	var rt http.RoundTripper
	if cfg.baseURL == "" {
		srv, rt, err = embedded(cfg)
		if err != nil {
			fmt.Fprintln(stderr, "directory:", err)
			return exitFlags
		}
		cfg.baseURL = embeddedBase
	}
	f, err := os.Create(cfg.out)
	if err != nil {
		fmt.Fprintln(stderr, "directory:", err)
		return exitFlags
	}
	sum, err := export(ctx, cfg, rt, f, stderr)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(stderr, "directory:", err)
		if sum == nil {
			return exitFlags
		}
	}
	sum.print(stdout, cfg, srv)
	if err != nil || !sum.ok(srv) {
		return exitFailed
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("directory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.baseURL, "base-url", "", "WeCom API base URL (default: an embedded mock WeCom)")
	fs.StringVar(&cfg.corpID, "corp-id", "wwdirectory", "corp id")
	fs.StringVar(&cfg.secret, "secret", "directory-secret", "a secret that can read the directory (the contact-sync secret, 通讯录同步)")
	fs.StringVar(&cfg.out, "out", "directory.csv", "the CSV file written: a header row, then one row per member")
	fs.IntVar(&cfg.workers, "workers", 32, "user/get calls in flight at once")
	fs.IntVar(&cfg.members, "members", 12000, "members of the embedded mock's directory")
	fs.IntVar(&cfg.departments, "departments", 100, "departments of the embedded mock's directory, below the root")
	fs.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "service time of the embedded mock")
	fs.DurationVar(&cfg.progress, "progress", 5*time.Second, "how often progress is shown on stderr (0: never)")
	fs.IntVar(&cfg.perMinute, "per-minute", 0, "user/get calls a minute per corp, in the client and the embedded mock (default: WeCom's)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.workers < 1 || cfg.members < 0 || cfg.departments < 0 || cfg.latency < 0 || cfg.progress < 0 || cfg.perMinute < 0:
		err = errors.New("-workers must be positive; -members, -departments, -latency, -progress and -per-minute not negative")
	case cfg.out == "":
		err = errors.New("-out is required")
	}
	if err != nil {
		fmt.Fprintln(stderr, "directory:", err)
	}
	return cfg, err
}

// embedded returns a mock WeCom holding the app and a directory of
// cfg.members members in cfg.departments departments, and a transport
// that reaches it in process.
func embedded(cfg config) (*mock.Server, http.RoundTripper, error) {
	mc := mock.Config{Latency: cfg.latency}
	if cfg.perMinute > 0 {
		// Windows replaces the catalog's for every API: the hour's is kept.
		mc.Windows = []mock.Window{{Limit: cfg.perMinute, Period: time.Minute}, {Limit: catalogLimit(catalog.RulePerHour), Period: time.Hour}}
	}
	srv, err := mock.New(mc)
	if err != nil {
		return nil, nil, err
	}
	srv.AddApp(cfg.corpID, cfg.secret)
	srv.SeedDirectory(cfg.corpID, cfg.departments, cfg.members)
	mt := httpmock.NewMockTransport()
	srv.Register(mt, embeddedBase)
	return srv, mt, nil
}
