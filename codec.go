// The bodies other than JSON: a multipart upload streamed from an
// io.Reader, and a file downloaded to an io.Writer in Range chunks. Both
// go through the pipeline as any call (limits, token, retries); only the
// HTTP exchange differs.

package wecom

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// guard stops a caller's reader or writer being used once the caller has
// gone: an attempt whose caller gave up goes on in the background (see
// exchange), and must not start a read or write of the caller's file after
// the call returned. Its mu also guards the state of the upload or
// download it belongs to.
type guard struct {
	mu   sync.Mutex
	idle sync.Cond // signalled when a read or write ends
	gone bool
	busy bool // a read or write of the caller's is under way
}

// leave marks the caller gone. It does not wait for a read or write under
// way: a caller's reader or writer that blocks must not keep the caller.
func (g *guard) leave() {
	g.mu.Lock()
	g.gone = true
	g.mu.Unlock()
}

// use runs io, a read or a write of the caller's, unless the caller has
// gone or ended() says the attempt did; one at a time, without holding mu
// meanwhile, and with the attempt's idle timeout paused (the caller's own
// pace is no pause of the transfer). after runs under mu with its result.
// The caller holds g.mu; use returns holding it.
func (g *guard) use(ended func() bool, t *ticker, io func() (int, error), after func(n int)) (int, error) {
	g.settle()
	if g.gone || ended() {
		return 0, errCallerGone
	}
	g.busy = true
	g.mu.Unlock()
	t.pause()
	n, err := io()
	t.tick()
	g.mu.Lock()
	g.busy = false
	g.idle.Broadcast()
	after(n)
	return n, err
}

// settle waits, holding g.mu, until no read or write is under way.
func (g *guard) settle() {
	if g.idle.L == nil {
		g.idle.L = &g.mu
	}
	for g.busy {
		g.idle.Wait()
	}
}

// ticker is an attempt's idle timeout: progress resets it, a pause stops
// it. The zero ticker does nothing.
type ticker struct {
	t *time.Timer
	d time.Duration
}

func (t *ticker) tick() {
	if t != nil && t.t != nil {
		t.t.Reset(t.d)
	}
}

func (t *ticker) pause() {
	if t != nil && t.t != nil {
		t.t.Stop()
	}
}

var errCallerGone = errors.New("the caller gave up: its reader or writer is no longer used")

// upload is a call's multipart body: one file in the form field field.
type upload struct {
	field, filename string
	size            int64
	r               io.Reader
	g               guard // its mu also guards started, start and the attempts' views
	started         bool  // an attempt read bytes from r
	start           int64 // where r began, for a rewind (-1: r is no io.Seeker)
	measured        bool  // start is known
}

// view is one attempt's reading of the file: it ends with the attempt,
// so that a transport still reading a failed attempt's body never reads
// the file under the next attempt, nor after the call returned.
type view struct {
	u    *upload
	done bool
	t    *ticker
}

// Read reads the caller's file, until the attempt ends or the caller has
// gone.
func (v *view) Read(p []byte) (int, error) {
	u := v.u
	u.g.mu.Lock()
	defer u.g.mu.Unlock()
	return u.g.use(func() bool { return v.done }, v.t, func() (int, error) { return u.r.Read(p) }, func(n int) {
		if n > 0 {
			u.started = true
		}
	})
}

// end ends the view.
func (v *view) end() {
	v.u.g.mu.Lock()
	v.done = true
	v.u.g.mu.Unlock()
}

// body returns the request body of one attempt, its length and its type:
// the file from where it began (an io.Seeker is rewound for a retry;
// another reader can be sent again only if no attempt read from it),
// between a multipart head and tail.
func (u *upload) body(t *ticker) (*view, io.Reader, int64, string, error) {
	u.g.mu.Lock()
	defer u.g.mu.Unlock()
	u.g.settle() // a failed attempt's transport may still be reading
	if !u.measured {
		u.measured, u.start = true, -1
		if s, ok := u.r.(io.Seeker); ok {
			if at, err := s.Seek(0, io.SeekCurrent); err == nil {
				u.start = at
			}
		}
	}
	if u.started {
		s, ok := u.r.(io.Seeker)
		if !ok || u.start < 0 {
			return nil, nil, 0, "", invalid("upload", "the file was read by an attempt that failed, and cannot be read again: give an io.ReadSeeker to let the SDK retry")
		}
		if _, err := s.Seek(u.start, io.SeekStart); err != nil {
			return nil, nil, 0, "", fmt.Errorf("wecom: rewinding the upload: %w", err)
		}
		u.started = false
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	boundary := hex.EncodeToString(b[:])
	// WeCom reads the name raw, in UTF-8: not RFC 2231's filename*, not
	// URL-encoded (peers that did so got mangled names).
	head := fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=%q; filename=\"%s\"; filelength=%d\r\nContent-Type: application/octet-stream\r\n\r\n",
		boundary, u.field, u.filename, u.size)
	tail := "\r\n--" + boundary + "--\r\n"
	v := &view{u: u, t: t}
	body := io.MultiReader(strings.NewReader(head), io.LimitReader(v, u.size), strings.NewReader(tail))
	return v, body, int64(len(head)) + u.size + int64(len(tail)), "multipart/form-data; boundary=" + boundary, nil
}

// download receives a file in Range chunks of at most chunk bytes into w.
type download struct {
	w      io.Writer
	chunk  int64
	offset int64 // bytes written to w
	total  int64 // the file's size; -1 until an answer says it
	file   DownloadedFile
	g      guard
	t      *ticker // the idle timeout of the attempt under way
}

// Write writes to the caller's writer, until the caller has gone.
func (d *download) Write(p []byte) (int, error) {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	return d.g.use(func() bool { return false }, d.t, func() (int, error) { return d.w.Write(p) }, func(n int) { d.offset += int64(n) })
}

// receive copies one answer that carries file bytes into the writer: a
// 206 whose Content-Range starts where the writer is, or a 200 with the
// whole file (the part already written skipped).
func (d *download) receive(resp *http.Response) error {
	start, total := int64(0), resp.ContentLength
	if resp.StatusCode == http.StatusPartialContent {
		var err error
		if start, total, err = contentRange(resp.Header.Get("Content-Range")); err != nil {
			return err
		}
	}
	name := ""
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		name = params["filename"]
	}
	d.g.mu.Lock()
	offset := d.offset
	d.file.Name, d.file.ContentType = name, resp.Header.Get("Content-Type")
	d.g.mu.Unlock()
	if start > offset || total >= 0 && offset > total {
		return fmt.Errorf("the answer starts at byte %d of %d, not %d", start, total, offset)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, offset-start); err != nil {
		return err
	}
	_, err := io.Copy(d, resp.Body)
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	if err == nil && total < 0 && (resp.StatusCode == http.StatusOK || d.offset == offset) {
		// No size said: a whole answer (200) ends where the file does, a
		// range ("bytes a-b/*") only when it is empty (or the next one is
		// refused, 416).
		total = d.offset
	}
	d.total, d.file.Size = total, total
	return err
}

// ended records that a Range past the last byte written was refused (416):
// the file ends there.
func (d *download) ended() {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	d.total, d.file.Size = d.offset, d.offset
}

// state returns what the download has written and knows, once no attempt
// writes.
func (d *download) state() (offset int64, done bool, file DownloadedFile) {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	return d.offset, d.total >= 0 && d.offset >= d.total, d.file
}

// past reports whether the download has written bytes and knows no size:
// a 416 then says the file ended at them.
func (d *download) past() bool {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	return d.offset > 0 && d.total < 0
}

// rangeHeader asks for the next chunk.
func (d *download) rangeHeader() string {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	return fmt.Sprintf("bytes=%d-%d", d.offset, d.offset+d.chunk-1)
}

// contentRange reads "bytes start-end/total" (total "*": unknown, -1).
func contentRange(v string) (start, total int64, err error) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	span, size, ok2 := strings.Cut(rest, "/")
	first, _, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, fmt.Errorf("bad Content-Range %q", v)
	}
	if start, err = strconv.ParseInt(first, 10, 64); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad Content-Range %q", v)
	}
	if size == "*" {
		return start, -1, nil
	}
	if total, err = strconv.ParseInt(size, 10, 64); err != nil || total < start {
		return 0, 0, fmt.Errorf("bad Content-Range %q", v)
	}
	return start, total, nil
}

// isFileAnswer reports whether an answer of media/get is the file rather
// than WeCom's JSON (an error, or a proxy's body): WeCom names the file in
// Content-Disposition, and answers JSON without it.
func isFileAnswer(h http.Header) bool {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	t, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && params["filename"] != "" && t != "application/json"
}
