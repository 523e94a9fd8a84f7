// Command callback receives WeCom's callbacks.
//
// With no flags it shows the welcome flow end to end, with no set-up and no
// WeCom: an embedded mock WeCom pushes add_external_contact (a customer
// added a member) to a callback.Handler listening on a local port; the
// handler sends the customer a welcome message with the event's
// WelcomeCode, within the 20 seconds the code lives, and the mock says
// what it delivered:
//
//	go run ./examples/callback
//
// With -token, -aes-key and -corp-id it is the receiver to point WeCom at
// while building an app (the values are those of the app's "receive
// messages" settings; -corp-id is the receive id of the POSTs: the corp id
// for a corp's own app, the suite id for a suite's command URL, and
// -corp-id "" leaves it unchecked, for an app of a personal subject;
// -url-check-id is the receive id of WeCom's URL check when it differs:
// the provider's corp id for a suite's command URL):
//
//	go run ./examples/callback -token T -aes-key K -corp-id ww... -listen :8080
//	go run ./examples/callback -token T -aes-key K -corp-id wwsuite... -url-check-id wwprovider...
//
// It answers WeCom's URL check and every POST, at every path, and prints
// each message or event it delivers as one JSON line on stdout, WeCom's XML
// element names as keys (nested elements as objects, repeated ones as
// arrays, every value a string):
//
//	{"Content":"hi","CreateTime":"1700000000","FromUserName":"zhangsan","MsgId":"7","MsgType":"text","ToUserName":"ww..."}
//
// What it refuses (a bad signature, a stale timestamp, a wrong receive id)
// is logged on stderr, never on stdout; a retry WeCom makes is delivered
// once.
//
// # Exit status
//
//	0  the customer was welcomed (receiver: it was stopped by a signal)
//	1  the customer was not welcomed, or the receiver failed
//	2  bad flags
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
)

const (
	exitOK     = 0
	exitFailed = 1
	exitFlags  = 2
)

type config struct {
	token, aesKey, corpID, listen string
	corpIDSet                     bool    // -corp-id given, perhaps empty
	urlCheckID                    *string // -url-check-id given
}

// receiving reports whether the flags ask for the receiver.
func (c config) receiving() bool { return c.token != "" || c.aesKey != "" || c.corpIDSet }

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
	if cfg.receiving() {
		if err := receive(ctx, cfg, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "callback:", err)
			return exitFailed
		}
		return exitOK
	}
	ok, err := demo(ctx, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "callback:", err)
		return exitFailed
	}
	if !ok {
		return exitFailed
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("callback", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.token, "token", "", "the callback Token (receiver mode)")
	fs.StringVar(&cfg.aesKey, "aes-key", "", "the 43-character EncodingAESKey (receiver mode)")
	fs.StringVar(&cfg.corpID, "corp-id", "", `the receive id of the POSTs: the corp id, or the suite id for a suite's command URL; -corp-id "" leaves it unchecked, for an app of a personal subject (receiver mode)`)
	urlCheck := fs.String("url-check-id", "", `the receive id of WeCom's URL check when it is not -corp-id: the provider's corp id for a suite's command URL; "" leaves it unchecked (receiver mode)`)
	fs.StringVar(&cfg.listen, "listen", ":8080", "address the receiver listens on")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "corp-id":
			cfg.corpIDSet = true
		case "url-check-id":
			cfg.urlCheckID = urlCheck
		}
	})
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case (cfg.receiving() || cfg.urlCheckID != nil) && (cfg.token == "" || cfg.aesKey == "" || !cfg.corpIDSet):
		err = errors.New(`the receiver needs -token, -aes-key and -corp-id (-corp-id "" for an unchecked receive id)`)
	}
	if err != nil {
		fmt.Fprintln(stderr, "callback:", err)
	}
	return cfg, err
}
