package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// summary is what a run did.
type summary struct {
	sent, accepted, failed int
	took                   time.Duration
	invalid                []string
	errs                   []error
	// from the embedded mock: recipient-messages delivered and dropped;
	// counted reports that it counted.
	counted            bool
	delivered, dropped int
}

// run sends cfg.messages messages, each to all of cfg.members, with
// cfg.workers sends in flight, through a client on rt (nil: the default
// transport). Waits for the members' windows are told on stderr.
func run(ctx context.Context, cfg config, rt http.RoundTripper, stderr io.Writer) (*summary, error) {
	opts := []wecom.Option{wecom.WithBaseURL(cfg.baseURL), wecom.WithAgentID(cfg.agentID), wecom.WithStallObserver(stalls(stderr))}
	if rt != nil {
		opts = append(opts, wecom.WithTransport(rt))
	}
	c, err := wecom.New(cfg.corpID, cfg.secret, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Drain(context.WithoutCancel(ctx))
	var (
		mu   sync.Mutex
		sum  summary
		next = make(chan int)
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range cfg.workers {
		wg.Go(func() {
			for i := range next {
				res, err := c.Messages.Send(ctx, wecom.Message{ToUser: cfg.members,
					Content: &wecom.TextMessage{Content: fmt.Sprintf("notification %d of %d", i+1, cfg.messages)}})
				mu.Lock()
				sum.sent++
				if err != nil {
					sum.failed++
					sum.errs = append(sum.errs, err)
				} else {
					sum.accepted++
					for _, u := range res.InvalidUsers {
						if !slices.Contains(sum.invalid, u) {
							sum.invalid = append(sum.invalid, u)
						}
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range cfg.messages {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	sum.took = time.Since(start)
	return &sum, nil
}

// stalls tells on w what the sends wait for, once per stall.
func stalls(w io.Writer) wecom.StallObserver {
	var mu sync.Mutex
	return func(_ context.Context, path string, s throttle.Stall) {
		mu.Lock()
		defer mu.Unlock()
		until := "an unknown time"
		if !s.Until.IsZero() {
			until = s.Until.Format("15:04:05")
		}
		fmt.Fprintf(w, "notify: %s waits for %s (%s) until %s\n", path, s.Key, s.Reason, until)
	}
}

// tally reads what the embedded mock delivered to the valid members.
func (s *summary) tally(srv *mock.Server, cfg config) {
	s.counted = true
	for _, m := range cfg.members {
		t := srv.MessageTally(cfg.corpID, m)
		s.delivered += t.Delivered
		s.dropped += t.Dropped
	}
}

// bound is the least time n messages to one member can take under WeCom's
// windows: 30 a minute and 1,000 an hour, the first sent at once.
func bound(n int) time.Duration {
	return max(time.Duration((n-1)/30)*time.Minute, time.Duration((n-1)/1000)*time.Hour)
}

// ok reports a run whose every message was accepted, none dropped.
func (s *summary) ok() bool { return s.failed == 0 && s.dropped == 0 && s.sent > 0 }

func (s *summary) print(w io.Writer, cfg config) {
	valid := len(cfg.members) - len(s.invalid)
	fmt.Fprintf(w, "sent:       %d messages to %d members, %d accepted, %d failed\n", s.sent, len(cfg.members), s.accepted, s.failed)
	if s.counted {
		fmt.Fprintf(w, "delivered:  %d recipient-messages, %d dropped (the embedded mock's count; %d expected)\n", s.delivered, s.dropped, s.accepted*valid)
	} else {
		fmt.Fprintln(w, "delivered:  known to WeCom only (it answers success to what it drops)")
	}
	b := bound(cfg.messages)
	if b > 0 && s.took > 0 {
		fmt.Fprintf(w, "time:       %s; the members' windows allow %s at best: %.1f%%\n", s.took.Round(100*time.Millisecond), b, 100*b.Seconds()/s.took.Seconds())
	} else {
		fmt.Fprintf(w, "time:       %s; within one minute's window\n", s.took.Round(time.Millisecond))
	}
	invalid := "none"
	if len(s.invalid) > 0 {
		invalid = strings.Join(s.invalid, ", ") + " (unknown to WeCom: the others got every message)"
	}
	fmt.Fprintf(w, "invalid:    %s\n", invalid)
	for i, err := range s.errs {
		if i == 5 {
			fmt.Fprintf(w, "... and %d more errors\n", len(s.errs)-5)
			break
		}
		fmt.Fprintf(w, "error:      %v\n", err)
	}
}
