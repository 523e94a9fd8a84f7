package wecom_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// onlyReader hides every method of a reader but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// An upload goes to the mock as WeCom reads it: the file whole, its name
// raw in UTF-8, its type; the media_id comes back and downloads the same
// bytes and name.
func TestMediaUploadAndDownload(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	ctx := context.Background()
	data := bytes.Repeat([]byte("季度报告 quarterly\n"), 5000)
	for _, tc := range []struct {
		name string
		body io.Reader
		size int64
	}{
		{"a bytes.Reader", bytes.NewReader(data), 0},
		{"a reader with its size", onlyReader{bytes.NewReader(data)}, int64(len(data))},
	} {
		m, err := c.Media.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "报告 2026.txt", Body: tc.body, Size: tc.size})
		if err != nil {
			t.Fatalf("%s: Upload: %v", tc.name, err)
		}
		if m.ID == "" || m.Type != wecom.MediaFile || m.CreatedAt.IsZero() {
			t.Errorf("%s: Upload = %+v", tc.name, m)
		}
		name, got, ok := srv.MediaData(testCorp, m.ID)
		if !ok || name != "报告 2026.txt" || !bytes.Equal(got, data) {
			t.Errorf("%s: the mock holds %q, %d bytes (equal: %v), want the name raw and the file whole", tc.name, name, len(got), bytes.Equal(got, data))
		}
		var out bytes.Buffer
		f, err := c.Media.Download(ctx, m.ID, &out)
		if err != nil || !bytes.Equal(out.Bytes(), data) || f.Name != "报告 2026.txt" || f.Size != int64(len(data)) {
			t.Errorf("%s: Download = %+v, %v; %d bytes (equal: %v)", tc.name, f, err, out.Len(), bytes.Equal(out.Bytes(), data))
		}
	}
}

// Bad uploads are refused before anything is sent.
func TestMediaUploadValidates(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	for _, tc := range []struct {
		name string
		req  wecom.UploadRequest
	}{
		{"no type", wecom.UploadRequest{Filename: "a", Body: strings.NewReader("123456")}},
		{"no name", wecom.UploadRequest{Type: wecom.MediaFile, Body: strings.NewReader("123456")}},
		{"a quote in the name", wecom.UploadRequest{Type: wecom.MediaFile, Filename: `a"b`, Body: strings.NewReader("123456")}},
		{"5 bytes", wecom.UploadRequest{Type: wecom.MediaFile, Filename: "a", Body: strings.NewReader("12345")}},
		{"a voice over 2 MB", wecom.UploadRequest{Type: wecom.MediaVoice, Filename: "a", Body: bytes.NewReader(make([]byte, catalog.MediaVoiceBytes+1))}},
		{"a size nobody says", wecom.UploadRequest{Type: wecom.MediaFile, Filename: "a", Body: onlyReader{strings.NewReader("123456")}}},
		{"no body", wecom.UploadRequest{Type: wecom.MediaFile, Filename: "a"}},
	} {
		if _, err := c.Media.Upload(context.Background(), tc.req); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", tc.name, err)
		}
	}
	if n := srv.Stats().Calls[catalog.MediaUpload.Path()]; n != 0 {
		t.Errorf("%d uploads sent", n)
	}
}

// busyOnce answers the first upload "system busy" and records every body.
func busyOnce(t *testing.T) (url string, bodies func() [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var got [][]byte
	srv := tokenServer(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		n := len(got)
		mu.Unlock()
		if n == 1 {
			_, _ = io.WriteString(w, `{"errcode":-1,"errmsg":"system busy"}`)
			return
		}
		_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","type":"file","media_id":"m1","created_at":"1380000000"}`)
	})
	t.Cleanup(srv.Close)
	return srv.URL, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// A failed upload is sent again from the file's start when the body can be
// rewound, and refused, saying why, when it cannot.
func TestMediaUploadRetry(t *testing.T) {
	t.Parallel()
	policy := wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond})
	data := []byte("the whole file, twice")
	url, bodies := busyOnce(t)
	c := setup(t, wecom.WithBaseURL(url), policy)
	if _, err := c.Media.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "f", Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("Upload of a bytes.Reader after a busy answer: %v", err)
	}
	if got := bodies(); len(got) != 2 || !bytes.Contains(got[0], data) || !bytes.Contains(got[1], data) {
		t.Errorf("%d bodies sent, want two with the whole file", len(got))
	}
	url, bodies = busyOnce(t)
	c = setup(t, wecom.WithBaseURL(url), policy)
	_, err := c.Media.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "f", Body: onlyReader{bytes.NewReader(data)}, Size: int64(len(data))})
	if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), "io.ReadSeeker") {
		t.Errorf("Upload of a reader that cannot be rewound, after a busy answer: %v, want ErrInvalidRequest naming io.ReadSeeker", err)
	}
	if n := len(bodies()); n != 1 {
		t.Errorf("%d bodies sent, want 1", n)
	}
}

// hashWriter hashes and counts what it is given.
type hashWriter struct {
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n atomic.Int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.h.Write(p)
}

// cutServer serves file through a Range, but cuts the first answer's body
// off after cut bytes; it records each Range asked.
func cutServer(t *testing.T, file []byte, cut int) (url string, ranges func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	srv := tokenServer(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Range"))
		first := len(asked) == 1
		mu.Unlock()
		var start, end int
		_, _ = fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &start, &end)
		end = min(end, len(file)-1)
		w.Header().Set("Content-Disposition", `attachment; filename="f.bin"`)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(file)))
		w.Header().Set("Content-Length", fmt.Sprint(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		if first {
			_, _ = w.Write(file[start : start+cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-body
		}
		_, _ = w.Write(file[start : end+1])
	})
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return asked
	}
}

// An answer cut off mid-file is asked again from the first byte not
// written: the writer gets every byte once.
func TestMediaDownloadResumes(t *testing.T) {
	t.Parallel()
	file := make([]byte, 300_000)
	_, _ = rand.Read(file)
	url, ranges := cutServer(t, file, 100_000)
	c := setup(t, wecom.WithBaseURL(url), wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: 3,
		InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	var out bytes.Buffer
	if _, err := c.Media.Download(context.Background(), "m1", &out); err != nil {
		t.Fatalf("Download: %v", err)
	}
	if !bytes.Equal(out.Bytes(), file) {
		t.Errorf("got %d bytes, equal %v, want the file once", out.Len(), bytes.Equal(out.Bytes(), file))
	}
	if got := ranges(); len(got) != 2 || !strings.HasPrefix(got[1], "bytes=100000-") {
		t.Errorf("ranges asked %q, want the second from byte 100000", got)
	}
}

// A download of an unknown media_id is WeCom's error, and the writer gets
// nothing.
func TestMediaDownloadError(t *testing.T) {
	t.Parallel()
	c := setup(t, wecom.WithBaseURL(started(t, newMock(t, mock.Config{}))))
	var out bytes.Buffer
	_, err := c.Media.Download(context.Background(), "nope", &out)
	var ae *wecom.APIError
	if !errors.As(err, &ae) || ae.Code != 40007 || out.Len() != 0 {
		t.Errorf("Download = %v, %d bytes written, want APIError 40007 and nothing", err, out.Len())
	}
}

// slowFile serves a file in small pieces, slowly.
func slowFile(t *testing.T, size int) string {
	t.Helper()
	srv := tokenServer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="slow.bin"`)
		w.Header().Set("Content-Length", fmt.Sprint(size))
		piece := make([]byte, 1000)
		for sent := 0; sent < size; sent += len(piece) {
			if _, err := w.Write(piece); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller who gives up mid-download gets its error, and its writer is
// never written after Download returned.
func TestMediaDownloadCallerGivesUp(t *testing.T) {
	t.Parallel()
	c := setup(t, wecom.WithBaseURL(slowFile(t, 200_000)))
	ctx, cancel := context.WithCancel(context.Background())
	w := &hashWriter{h: sha256.New()}
	go func() {
		for w.n.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Media.Download(ctx, "m1", w)
	at := w.n.Load()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Download = %v, want context.Canceled", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := w.n.Load(); n != at || n >= 200_000 {
		t.Errorf("the writer got %d bytes after Download returned with %d", n-at, at)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Errorf("Drain: %v", err)
	}
}

// tokenServer is a fake WeCom that answers gettoken and passes every other
// request to h; it closes with the test.
func tokenServer(h http.HandlerFunc) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == catalog.GetToken.Path() {
			_, _ = io.WriteString(w, `{"errcode":0,"errmsg":"ok","access_token":"tok-test","expires_in":7200}`)
			return
		}
		h(w, r)
	}))
}

// unsizedRanges serves file in ranges of at most piece bytes, saying no
// size ("bytes a-b/*"), and 416 past its end.
func unsizedRanges(t *testing.T, file []byte, piece int) string {
	t.Helper()
	srv := tokenServer(func(w http.ResponseWriter, r *http.Request) {
		var start int
		_, _ = fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &start)
		if start >= len(file) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		end := min(start+piece, len(file)) - 1
		w.Header().Set("Content-Disposition", `attachment; filename="u.bin"`)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", start, end))
		w.WriteHeader(http.StatusPartialContent)
		_, _ = w.Write(file[start : end+1])
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// A server that says no size and answers shorter ranges than asked is read
// to the end: a short range is not taken for the end of the file.
func TestMediaDownloadUnsizedRanges(t *testing.T) {
	t.Parallel()
	file := make([]byte, 300)
	_, _ = rand.Read(file)
	c := setup(t, wecom.WithBaseURL(unsizedRanges(t, file, 100)))
	var out bytes.Buffer
	f, err := c.Media.Download(context.Background(), "m1", &out)
	if err != nil || !bytes.Equal(out.Bytes(), file) || f.Size != 300 {
		t.Errorf("Download = %+v, %v, %d bytes (equal %v), want the 300 bytes", f, err, out.Len(), bytes.Equal(out.Bytes(), file))
	}
}

// A retried upload of a reader that did not start at its beginning sends
// the file from where it started, not from byte 0.
func TestMediaUploadRetryFromWhereTheReaderWas(t *testing.T) {
	t.Parallel()
	url, bodies := busyOnce(t)
	c := setup(t, wecom.WithBaseURL(url), wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: 3,
		InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	r := strings.NewReader("HEADERpayload-of-the-file")
	_, _ = r.Seek(6, io.SeekStart)
	if _, err := c.Media.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "f", Body: r}); err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies() {
		if !bytes.Contains(b, []byte("\r\n\r\npayload-of-the-file\r\n")) || bytes.Contains(b, []byte("HEADER")) {
			t.Errorf("body %d: %q, want the file from byte 6", i, b)
		}
	}
}

// failFirst fails the first upload without reading its body, as a dial
// error does, and passes every other request on.
type failFirst struct {
	next   http.RoundTripper
	failed atomic.Bool
}

func (f *failFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == catalog.MediaUpload.Path() && f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("dial tcp: connection refused")
	}
	return f.next.RoundTrip(r)
}

// An upload of a reader that cannot be rewound is retried after an attempt
// that read none of it.
func TestMediaUploadRetryBeforeAnyRead(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)), wecom.WithTransport(&failFirst{next: http.DefaultTransport}),
		wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	data := []byte("a file read once")
	m, err := c.Media.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "f", Body: onlyReader{bytes.NewReader(data)}, Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if _, got, _ := srv.MediaData(testCorp, m.ID); !bytes.Equal(got, data) {
		t.Errorf("the mock holds %q", got)
	}
}

// slowReader answers every Read with at most n bytes, after d.
type slowReader struct {
	r io.Reader
	n int
	d time.Duration
}

func (s slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.d)
	return s.r.Read(p[:min(len(p), s.n)])
}

// An upload that takes longer than the attempt timeout but never pauses as
// long goes through in one attempt: the timeout bounds the pauses, not the
// transfer.
func TestMediaUploadLongerThanTheAttemptTimeout(t *testing.T) {
	t.Parallel()
	// 16 pauses of 50 ms: the transfer outlasts the 500 ms timeout, and a
	// loaded machine has ten times a pause to answer.
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)), wecom.WithAttemptTimeout(500*time.Millisecond))
	data := bytes.Repeat([]byte("x"), 64<<10)
	start := time.Now()
	m, err := c.Media.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "slow", Body: slowReader{bytes.NewReader(data), 4 << 10, 50 * time.Millisecond}, Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Upload over %s: %v", time.Since(start), err)
	}
	if n := srv.Stats().Calls[catalog.MediaUpload.Path()]; n != 1 || m.ID == "" {
		t.Errorf("%d uploads sent, want 1", n)
	}
}

// slowWriter takes d over every write.
type slowWriter struct {
	d time.Duration
	n atomic.Int64
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.d)
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// The caller's own pace is no pause of the transfer: a writer slower than
// the attempt timeout per write still gets the whole file, in one call.
func TestMediaDownloadSlowWriter(t *testing.T) {
	t.Parallel()
	// A timeout a loaded machine's mock answers within; writes slower still.
	srv := newMock(t, mock.Config{})
	c2 := setup(t, wecom.WithBaseURL(started(t, srv)), wecom.WithAttemptTimeout(400*time.Millisecond))
	id := srv.AddMedia(testCorp, "f.bin", "application/octet-stream", make([]byte, 96<<10))
	w := &slowWriter{d: 500 * time.Millisecond}
	if _, err := c2.Media.Download(context.Background(), id, w); err != nil || w.n.Load() != 96<<10 {
		t.Fatalf("Download to a slow writer: %v, %d bytes", err, w.n.Load())
	}
	if n := srv.Stats().Calls[catalog.MediaGet.Path()]; n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// blockingReader blocks every Read until released.
type blockingReader struct{ release chan struct{} }

func (b blockingReader) Read(p []byte) (int, error) {
	<-b.release
	return 0, io.EOF
}

// A caller whose reader blocks gets its call back when its context ends,
// though a read of its reader is under way.
func TestMediaUploadBlockedReaderCallerLeaves(t *testing.T) {
	t.Parallel()
	c := setup(t, wecom.WithBaseURL(started(t, newMock(t, mock.Config{}))))
	r := blockingReader{release: make(chan struct{})}
	defer close(r.release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Media.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "f", Body: r, Size: 100})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Upload = %v, want the context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Upload did not return after its context ended, its reader blocked")
	}
}
