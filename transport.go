// The send step: one HTTP exchange through the client's resty client, for
// a JSON body, a multipart upload streamed from the caller's reader and a
// download streamed to the caller's writer alike; the one place where a
// failure of the transport becomes a *TransportError.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/go-resty/resty/v2"
)

// maxAnswer bounds the JSON answer read.
const maxAnswer = 16 << 20

// outgoing is a call as it goes on the wire: its query carries the
// credential.
type outgoing struct {
	cl    *call
	query url.Values
}

// send makes one HTTP exchange of a call, bounded by the attempt timeout
// (for a file: the wait for the answer and every pause of the transfer,
// not the transfer, so that a large file on a slow link goes on as long
// as it moves), not by the caller's context, and
// reads its answer into cl.out or the error a caller sees. d.unanswered
// reports a request that may be running at WeCom while no answer (no HTTP
// status) came back: it was written to a connection, or the transport
// cannot tell. A panic on the way (the transport's, the caller's reader
// or writer) is recovered into panicked, for the caller to settle the
// call's limits before it goes on: the request may have left.
func (p *pipeline) send(ctx context.Context, out outgoing) (d delivery, panicked any, err error) {
	d.sent = true
	defer func() {
		if r := recover(); r != nil {
			d.unanswered, panicked = true, r
		}
	}()
	d.unanswered, err = p.sendHTTP(ctx, out.cl, out.query)
	return d, nil, err
}

// sendHTTP is send without its recovery.
func (p *pipeline) sendHTTP(ctx context.Context, cl *call, q url.Values) (unanswered bool, err error) {
	var cancel context.CancelFunc
	var t *ticker
	if cl.upload != nil || cl.download != nil {
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		t = &ticker{t: time.AfterFunc(p.cfg.attemptTimeout, cancel), d: p.cfg.attemptTimeout}
		defer t.pause()
	} else {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), p.cfg.attemptTimeout)
	}
	defer cancel()
	var w wire
	req := p.cfg.http.R().SetContext(httptrace.WithClientTrace(ctx, w.trace())).
		SetQueryParamsFromValues(q).SetDoNotParseResponse(true)
	switch {
	case cl.upload != nil:
		v, body, length, ctype, err := cl.upload.body(t)
		if err != nil {
			return false, err
		}
		defer v.end()
		// resty would read a reader whole (to send it again): it gets no
		// body, and streamBody hands the request this one as it goes out.
		req.SetContext(context.WithValue(req.Context(), streamed{}, &streamedBody{r: body, n: length})).
			SetHeader("Content-Type", ctype)
	case cl.download != nil:
		cl.download.g.mu.Lock()
		cl.download.t = t
		cl.download.g.mu.Unlock()
		req.SetHeader("Range", cl.download.rangeHeader())
	case cl.body != nil:
		req.SetHeader("Content-Type", "application/json").SetBody(cl.body)
	}
	resp, err := req.Execute(cl.method, p.cfg.baseURL+cl.path)
	if err != nil {
		answered := resp != nil && resp.RawResponse != nil
		sent := answered || w.mayHaveArrived()
		return sent && !answered, p.transportError(ctx, cl, sent, "", err)
	}
	return false, p.read(ctx, cl, resp)
}

// read reads an answer: the file of a download, or WeCom's JSON.
func (p *pipeline) read(ctx context.Context, cl *call, resp *resty.Response) error {
	body := resp.RawBody()
	defer body.Close()
	status := resp.StatusCode()
	if d := cl.download; d != nil {
		if status == http.StatusRequestedRangeNotSatisfiable && d.past() {
			d.ended()
			return nil
		}
		if (status == http.StatusOK || status == http.StatusPartialContent) && isFileAnswer(resp.Header()) {
			if err := d.receive(resp.RawResponse); err != nil {
				return p.transportError(ctx, cl, true, "reading the file", err)
			}
			return nil
		}
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxAnswer))
	if err != nil {
		// The answer began: WeCom is done with the call.
		return p.transportError(ctx, cl, true, "reading the answer", err)
	}
	if status != http.StatusOK {
		return &ResponseError{Path: cl.path, StatusCode: status}
	}
	err = p.answer(cl, raw)
	if err == nil && cl.download != nil {
		err = &ResponseError{Path: cl.path, StatusCode: status, Err: errors.New("a JSON success instead of the file")}
	}
	return err
}

// transportError is a failure of the transport, its text redacted: sent
// reports a request that may have reached WeCom; what, when not empty,
// says what was under way.
func (p *pipeline) transportError(ctx context.Context, cl *call, sent bool, what string, err error) error {
	err = p.redactErr(err)
	if what != "" {
		err = fmt.Errorf("%s: %w", what, err)
	}
	return &TransportError{Path: cl.path, Sent: sent, Timeout: ctx.Err() != nil, Err: err}
}

// streamed is the context key of a request's streamedBody.
type streamed struct{}

// streamedBody is a request body read as it is sent, never buffered
// whole: n bytes from r.
type streamedBody struct {
	r io.Reader
	n int64
}

// streamBody is the resty client's pre-request hook: it gives a request
// whose context holds a streamedBody that body, with its length, and no
// way to read it again (an upload's retry is the pipeline's: see upload).
func streamBody(_ *resty.Client, r *http.Request) error {
	if b, ok := r.Context().Value(streamed{}).(*streamedBody); ok {
		r.Body, r.ContentLength, r.GetBody = io.NopCloser(b.r), b.n, nil
	}
	return nil
}

// wire learns from the HTTP layer whether a request may have reached the
// server: net/http reports getting a connection and writing the request
// through httptrace.
type wire struct {
	conn, wrote atomic.Bool
}

func (w *wire) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) { w.conn.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				w.wrote.Store(true)
			}
		},
	}
}

// mayHaveArrived reports whether the request may be at the server: it was
// written to a connection, or the transport is not one that reports it
// (httpmock, a custom RoundTripper), in which case the answer is "maybe". A
// refused or failed dial, or a request cancelled before it was written, is
// known not to have left.
func (w *wire) mayHaveArrived() bool { return w.wrote.Load() || !w.conn.Load() }
