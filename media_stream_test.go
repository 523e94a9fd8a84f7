package wecom_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"runtime"
	"strings"
	"testing"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// allocSplit runs f and returns the bytes allocated meanwhile on the mock's
// side (the HTTP server's connection goroutines and the mock's code) and on
// the client's (everything else: the client, its transport, the test),
// read from the heap profile taken at one sample per allocation while f
// runs. The test's process holds both ends; the split keeps the mock's
// copies of a file (it reads an upload whole and keeps it) out of the
// client's figure.
func allocSplit(f func()) (client, server uint64) {
	prev := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = prev }()
	before := heapProfile()
	f()
	after := heapProfile()
	for stk, n := range after {
		d := uint64(n - before[stk])
		if onServer(stk) {
			server += d
		} else {
			client += d
		}
	}
	return client, server
}

// heapProfile returns the bytes allocated so far per stack, once the
// profile holds every allocation made before the call (it is published a
// garbage collection cycle or two late).
func heapProfile() map[[32]uintptr]int64 {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			break
		}
	}
	out := make(map[[32]uintptr]int64, n)
	for _, r := range recs[:n] {
		out[r.Stack0] += r.AllocBytes
	}
	return out
}

// onServer reports whether an allocation's stack is the mock's side.
func onServer(stk [32]uintptr) bool {
	n := 0
	for n < len(stk) && stk[n] != 0 {
		n++
	}
	frames := runtime.CallersFrames(stk[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/wecomkit/wecom/mock.") || f.Function == "net/http.(*conn).serve" {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestMediaStreaming measures what the client allocates to move a 50 MB
// file and two uploads through the mock, served over loopback in the test's
// process: a 50 MB file downloaded (in Range chunks of at most 20 MB: three
// calls, the last one short) and 40 MB uploaded (two files of 20 MB, the
// largest media/upload takes). Larger sizes only cost the test time: under
// -race each byte the mock keeps costs its shadow memory. Both stream: the test fails if either allocates a tenth of the
// bytes it moves, a generous bound (a copy of the file would be ten times
// it). BENCHMARKS.md keeps the figures. Not parallel: other tests'
// allocations would count.
func TestMediaStreaming(t *testing.T) {
	const fileBytes, uploadBytes, uploads = 50 << 20, catalog.MediaFileBytes, 2
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	big := make([]byte, fileBytes)
	_, _ = rand.Read(big)
	id := srv.AddMedia(testCorp, "big.bin", "application/octet-stream", big)
	want := sha256.Sum256(big)
	part := big[:uploadBytes]
	ctx := context.Background()

	w := &hashWriter{h: sha256.New()}
	var file wecom.DownloadedFile
	var err error
	down, downServer := allocSplit(func() { file, err = c.Media.Download(ctx, id, w) })
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if !bytes.Equal(w.h.Sum(nil), want[:]) || file.Size != fileBytes {
		t.Fatalf("Download = %+v, %d bytes, not the file", file, w.n.Load())
	}
	if n := srv.Stats().Calls[catalog.MediaGet.Path()]; n != 3 {
		t.Errorf("%d requests, want 3 chunks", n)
	}

	var ids []string
	up, upServer := allocSplit(func() {
		for range uploads {
			m, err := c.Media.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "part.bin", Body: bytes.NewReader(part)})
			if err != nil {
				t.Errorf("Upload: %v", err)
				return
			}
			ids = append(ids, m.ID)
		}
	})
	for _, id := range ids {
		if _, data, ok := srv.MediaData(testCorp, id); !ok || !bytes.Equal(data, part) {
			t.Errorf("upload %s: the mock holds other bytes", id)
		}
	}
	if len(ids) != uploads {
		t.Fatalf("%d uploads, want %d", len(ids), uploads)
	}

	for _, m := range []struct {
		what           string
		moved          int
		client, server uint64
	}{{"download", fileBytes, down, downServer}, {"upload", uploads * uploadBytes, up, upServer}} {
		t.Logf("%d MB %s: the client allocated %.2f MB, %.4f bytes per byte moved (the in-process mock %.1f MB)",
			m.moved>>20, m.what, float64(m.client)/(1<<20), float64(m.client)/float64(m.moved), float64(m.server)/(1<<20))
		if m.client > uint64(m.moved/10) {
			t.Errorf("a %d MB %s allocated %d bytes in the client, want far less than the bytes moved", m.moved>>20, m.what, m.client)
		}
	}
}
