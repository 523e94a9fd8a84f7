package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/mock"
)

// The embedded run's corp, app, member and customer.
const (
	demoBase     = "https://qyapi.weixin.qq.com"
	demoCorp     = "wwcallbackdemo"
	demoSecret   = "customer-contact-secret"
	demoMember   = "zhangsan"
	demoCustomer = "wmAnnExample"
)

// demo runs the welcome flow on an embedded mock WeCom: a receiver on a
// local port, the mock pushing add_external_contact to it, the receiver
// welcoming the customer through the mock's API. It reports whether the
// mock delivered the welcome message.
func demo(ctx context.Context, w io.Writer) (bool, error) {
	stdout := &syncWriter{w: w} // the handler writes on the server's goroutines
	srv, err := mock.New(mock.Config{})
	if err != nil {
		return false, err
	}
	defer srv.Close()
	srv.AddApp(demoCorp, demoSecret)
	srv.AddUsers(demoCorp, demoMember)
	mt := httpmock.NewMockTransport()
	srv.Register(mt, demoBase)
	client, err := wecom.New(demoCorp, demoSecret, wecom.WithBaseURL(demoBase), wecom.WithTransport(mt))
	if err != nil {
		return false, err
	}
	defer client.Drain(context.WithoutCancel(ctx))

	// A token and an EncodingAESKey made up for this run, as WeCom's
	// console makes them.
	token, key := randomToken(), randomAESKey()
	crypto, err := callback.NewCrypto(token, key, demoCorp)
	if err != nil {
		return false, err
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		return false, err
	}
	callback.Handle(h, func(ctx context.Context, e *callback.ExternalContactEvent) error {
		if e.ChangeType != callback.ChangeAddExternalContact || e.WelcomeCode == "" {
			return nil
		}
		fmt.Fprintf(stdout, "received:  %s %s: %s added %s (state %q, welcome code %s)\n",
			e.Event, e.ChangeType, e.ExternalUserID, e.UserID, e.State, e.WelcomeCode)
		start := time.Now()
		err := client.Customers.Welcome(ctx, wecom.WelcomeMessage{WelcomeCode: e.WelcomeCode,
			Text: "Hello, and welcome! I am " + e.UserID + "; ask me anything."})
		if err != nil {
			fmt.Fprintf(stdout, "welcome:   failed: %v\n", err)
			return err
		}
		fmt.Fprintf(stdout, "welcomed:  %s (send_welcome_msg answered in %v, within the code's %v)\n",
			e.ExternalUserID, time.Since(start).Round(time.Millisecond), mock.WelcomeCodeTTL)
		return nil
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, err
	}
	url := "http://" + ln.Addr().String() + "/wecom/callback"
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serve(serveCtx, ln, h) }()
	defer func() { stop(); <-served }()
	fmt.Fprintf(stdout, "receiver:  %s (a callback.Handler; token and key made up for this run)\n", url)

	if err := srv.SetCallback(demoCorp, mock.CallbackConfig{URL: url, Token: token, EncodingAESKey: key}); err != nil {
		return false, err
	}
	code := srv.AddExternalContact(demoCorp, demoMember, mock.Customer{ExternalUserID: demoCustomer, Name: "Ann", Type: 1}, "spring-fair")
	fmt.Fprintf(stdout, "mock:      %s added %s; pushing add_external_contact with welcome code %s\n", demoCustomer, demoMember, code)
	wait, cancel := context.WithTimeout(ctx, mock.WelcomeCodeTTL)
	defer cancel()
	if err := srv.WaitCallbacks(wait); err != nil {
		return false, err
	}
	deliveries := srv.CallbackDeliveries()
	delivered := 0
	for _, d := range deliveries {
		if d.Delivered {
			delivered++
		}
	}
	welcomes := srv.Welcomes(demoCorp, demoCustomer)
	fmt.Fprintf(stdout, "mock:      %d callback delivered in %d attempt(s); %d welcome message(s) delivered to %s\n",
		delivered, len(deliveries), len(welcomes), demoCustomer)
	for _, w := range welcomes {
		fmt.Fprintf(stdout, "           from %s: %q\n", w.UserID, w.Text)
	}
	return len(welcomes) == 1, nil
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// randomToken returns 32 random hex characters.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

// randomAESKey returns an EncodingAESKey: 43 characters, the base64 of 32
// random bytes without its "=".
func randomAESKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawStdEncoding.EncodeToString(b[:])
}
