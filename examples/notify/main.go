// Command notify sends app messages to a set of members, more to each than
// WeCom lets one app send one member in a minute, and shows that none is
// dropped: the second main job of the SDK.
//
// WeCom answers success to every message beyond 30 a minute and 1,000 an
// hour from one app to one member, and drops it. The SDK counts each
// message on every member it names and holds a send until all of them
// have room, so the run takes as long as those windows require, and no
// longer:
//
//	go run ./examples/notify
//	go run ./examples/notify -members zhangsan,lisi -messages 100
//
// Without -base-url it runs on an embedded mock WeCom that drops messages
// as WeCom does and counts, per member, what it delivered and dropped. The
// summary on stdout says what was sent and accepted, what the mock
// delivered and dropped, the time taken against the bound the per-member
// windows allow, and the recipients WeCom did not know:
//
//	sent:       40 messages to 4 members, 40 accepted, 0 failed
//	delivered:  120 recipient-messages, 0 dropped (the embedded mock's count; 120 expected)
//	time:       1m1.7s; the members' windows allow 1m0s at best: 97.2%
//	invalid:    ghost (unknown to WeCom: the others got every message)
//
// Against any server that speaks WeCom's API, give -base-url, -corp-id,
// -secret and -agent-id; delivered and dropped are then known only to
// WeCom.
//
// # Exit status
//
//	0  every message was accepted for every valid member (and, on the
//	   embedded mock, none was dropped)
//	1  a send failed, or the mock dropped a message
//	2  bad flags
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
	"strings"
	"syscall"
	"time"

	"github.com/jarcoal/httpmock"

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
	agentID                 int
	members                 []string
	messages, workers       int
	latency                 time.Duration
	// unknown: members the embedded mock's directory does not hold.
	unknown []string
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
			fmt.Fprintln(stderr, "notify:", err)
			return exitFlags
		}
		cfg.baseURL = embeddedBase
	}
	sum, err := run(ctx, cfg, rt, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "notify:", err)
		return exitFlags
	}
	if srv != nil {
		sum.tally(srv, cfg)
	}
	sum.print(stdout, cfg)
	if !sum.ok() {
		return exitFailed
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	var members, unknown string
	fs := flag.NewFlagSet("notify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.baseURL, "base-url", "", "WeCom API base URL (default: an embedded mock WeCom)")
	fs.StringVar(&cfg.corpID, "corp-id", "wwnotify", "corp id")
	fs.StringVar(&cfg.secret, "secret", "notify-secret", "the app's secret")
	fs.IntVar(&cfg.agentID, "agent-id", 1000002, "the app's agentid")
	fs.StringVar(&members, "members", "zhangsan,lisi,wangwu,ghost", "members to send to (comma-separated userids)")
	fs.IntVar(&cfg.messages, "messages", 40, "messages each member gets")
	fs.IntVar(&cfg.workers, "workers", 4, "sends in flight at once")
	fs.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "service time of the embedded mock")
	fs.StringVar(&unknown, "mock-unknown", "ghost", "members the embedded mock's directory does not hold (comma-separated), to show invalid recipients")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.members, cfg.unknown = split(members), split(unknown)
	switch {
	case fs.NArg() > 0:
		err := fmt.Errorf("unexpected arguments %q", fs.Args())
		fmt.Fprintln(stderr, "notify:", err)
		return cfg, err
	case len(cfg.members) == 0 || cfg.messages < 1 || cfg.workers < 1:
		err := errors.New("-members, -messages and -workers must name at least one")
		fmt.Fprintln(stderr, "notify:", err)
		return cfg, err
	}
	return cfg, nil
}

// split returns the non-empty fields of a comma-separated list.
func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// embedded returns a mock WeCom holding the app and the members (but the
// unknown ones), and a transport that reaches it in process.
func embedded(cfg config) (*mock.Server, http.RoundTripper, error) {
	srv, err := mock.New(mock.Config{Latency: cfg.latency})
	if err != nil {
		return nil, nil, err
	}
	srv.AddApp(cfg.corpID, cfg.secret)
	for _, m := range cfg.members {
		if !contains(cfg.unknown, m) {
			srv.AddUsers(cfg.corpID, m)
		}
	}
	mt := httpmock.NewMockTransport()
	srv.Register(mt, embeddedBase)
	return srv, mt, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
