package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// receive serves the receiver on cfg.listen until ctx ends.
func receive(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	h, err := newReceiver(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	rid := cfg.corpID
	if rid == "" {
		rid = "(unchecked)"
	}
	fmt.Fprintf(stderr, "callback: receiving on %s for receive id %s\n", ln.Addr(), rid)
	return serve(ctx, ln, h)
}

// newServer returns the server of a callback handler, every phase of a
// connection bounded: WeCom sends a few kilobytes and waits 5 s for the
// answer, so a request still being read after 10 s, or an answer still
// being written after 10 s (past the handler's deadline and the deduper's
// margin), is not WeCom's; an idle keep-alive connection is closed after
// a minute.
func newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
	}
}

// serve serves h on ln until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := newServer(h)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shut)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// newReceiver returns the receiver's handler, at every path: each callback
// delivered is a JSON line on stdout; every refusal is logged on stderr.
func newReceiver(cfg config, stdout, stderr io.Writer) (http.Handler, error) {
	crypto, err := callback.NewCrypto(cfg.token, cfg.aesKey, cfg.corpID)
	if err != nil {
		return nil, err
	}
	opts := []callback.Option{callback.WithLogger(slog.New(slog.NewTextHandler(stderr, nil)))}
	if cfg.urlCheckID != nil {
		opts = append(opts, callback.WithURLCheckReceiveID(*cfg.urlCheckID))
	}
	h, err := callback.NewHandler(crypto, opts...)
	if err != nil {
		return nil, err
	}
	out := &syncWriter{w: stdout}
	callback.Handle(h, func(_ context.Context, e callback.Event) error {
		line, err := jsonLine(e.Common().XML)
		if err != nil {
			return err // a 500: WeCom tries again; it was parsed, so this does not happen
		}
		_, err = out.Write(line)
		return err
	})
	return h, nil
}

// jsonLine renders a callback's XML as one line of JSON: the root's
// children by element name, nested elements as objects, repeated names as
// arrays, text as strings.
func jsonLine(data []byte) ([]byte, error) {
	v, err := xmlValue(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		obj = map[string]any{}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
