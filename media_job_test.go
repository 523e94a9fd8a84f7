package wecom

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
)

// The job of document/path/96219's examples.
const docJobID = "jobid_S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4"

// TestUploadByURLWire: upload_by_url posts document/path/96219's body
// (scene 1 when not given) and reads its jobid; get_upload_by_url_result
// posts the jobid and reads status and detail, created_at a string as the
// page shows it or a number.
func TestUploadByURLWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.mt.RegisterResponder("POST", testBaseURL+catalog.MediaUploadByURL.Path(), func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		if want := `{"scene":1,"type":"video","filename":"video.mp4","url":"https://xxxx","md5":"MD5"}`; string(b) != want {
			t.Errorf("body %s, want %s", b, want)
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","jobid":"`+docJobID+`"}`), nil
	})
	job, err := f.c.Media.UploadByURL(context.Background(), UploadByURLRequest{Type: MediaVideo, Filename: "video.mp4", URL: "https://xxxx", MD5: "MD5"})
	if err != nil || job.ID != docJobID || job.Type != MediaVideo {
		t.Fatalf("UploadByURL = %+v, %v", job, err)
	}
	for _, created := range []string{`"1380000000"`, `1380000000`} {
		f.mt.RegisterResponder("POST", testBaseURL+catalog.MediaUploadByURLResult.Path(), func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			if want := `{"jobid":"` + docJobID + `"}`; string(b) != want {
				t.Errorf("body %s, want %s", b, want)
			}
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","status":2,"detail":{"errcode":0,"errmsg":"ok","media_id":"3*1G6nrLmr5EC3MMb_-zK1dDdzmd0p7cNliYu9V5w7o8K1aAkJzlGGyD0YEuQGXzG","created_at":`+created+`}}`), nil
		})
		r, err := job.Result(context.Background())
		if err != nil || r.Status != UploadJobDone || r.Err != nil || r.Media.Type != MediaVideo ||
			r.Media.ID != "3*1G6nrLmr5EC3MMb_-zK1dDdzmd0p7cNliYu9V5w7o8K1aAkJzlGGyD0YEuQGXzG" || r.Media.CreatedAt.Unix() != 1380000000 {
			t.Errorf("created_at %s: Result = %+v, %v", created, r, err)
		}
	}
	f.respond("POST", catalog.MediaUploadByURLResult.Path(), `{"errcode":0,"errmsg":"ok","status":3,"detail":{"errcode":40058,"errmsg":"md5 mismatch"}}`)
	r, err := job.Result(context.Background())
	if err != nil || r.Status != UploadJobFailed || r.Err == nil || r.Err.Code != 40058 || r.Err.JobID != docJobID {
		t.Errorf("a failed job: Result = %+v, %v", r, err)
	}
	f.respond("POST", catalog.MediaUploadByURLResult.Path(), `{"errcode":0,"errmsg":"ok"}`)
	var re *ResponseError
	if _, err := job.Result(context.Background()); !errors.As(f.record(err), &re) {
		t.Errorf("an answer without status: %v, want a *ResponseError", err)
	}
}

// TestUploadByURLChecks: what WeCom refuses is refused unsent: an image or
// a voice (it fetches videos and files only), a name over 128 bytes, a URL
// over 1,024, no MD5; and a handle without a job id.
func TestUploadByURLChecks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ok := UploadByURLRequest{Type: MediaFile, Filename: "a.zip", URL: "https://cdn.example/a.zip", MD5: "0cc175b9c0f1b6a831c399e269772661"}
	for name, change := range map[string]func(r *UploadByURLRequest){
		"an image":         func(r *UploadByURLRequest) { r.Type = MediaImage },
		"a long name":      func(r *UploadByURLRequest) { r.Filename = strings.Repeat("a", 129) },
		"a long URL":       func(r *UploadByURLRequest) { r.URL = "https://cdn.example/" + strings.Repeat("a", 1024) },
		"no MD5":           func(r *UploadByURLRequest) { r.MD5 = "" },
		"a negative scene": func(r *UploadByURLRequest) { r.Scene = -1 },
	} {
		req := ok
		change(&req)
		if _, err := f.c.Media.UploadByURL(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := f.c.Media.Job("").Result(context.Background()); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("no job id: %v, want ErrInvalidRequest", err)
	}
	if n := f.calls("POST", catalog.MediaUploadByURL.Path()) + f.calls("POST", catalog.MediaUploadByURLResult.Path()); n != 0 {
		t.Errorf("%d calls sent", n)
	}
}

// TestUploadJobWait: Wait polls until the job ends, waiting longer between
// polls (doubling from every up to 16 times it), returns its file, or the
// job's *UploadJobError, and returns when ctx ends.
func TestUploadJobWait(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var polls atomic.Int32
	var last atomic.Int64
	var gaps []time.Duration // between the polls, in order
	f.mt.RegisterResponder("POST", testBaseURL+catalog.MediaUploadByURLResult.Path(), func(*http.Request) (*http.Response, error) {
		now := time.Now().UnixNano()
		if prev := last.Swap(now); prev != 0 {
			gaps = append(gaps, time.Duration(now-prev))
		}
		if polls.Add(1) < 5 {
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","status":1}`), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","status":2,"detail":{"errcode":0,"errmsg":"ok","media_id":"m1","created_at":"1380000000"}}`), nil
	})
	const every = 5 * time.Millisecond
	m, err := f.c.Media.Job(docJobID).WaitWith(context.Background(), PollPolicy{Interval: every, MaxInterval: 16 * every})
	if err != nil || m.ID != "m1" {
		t.Fatalf("Wait = %+v, %v", m, err)
	}
	if polls.Load() != 5 || len(gaps) != 4 {
		t.Fatalf("%d polls, want 5", polls.Load())
	}
	for i, want := range []time.Duration{every, 2 * every, 4 * every, 8 * every} {
		if gaps[i] < want {
			t.Errorf("wait %d between polls: %s, want at least %s", i+1, gaps[i], want)
		}
	}

	f.respond("POST", catalog.MediaUploadByURLResult.Path(), `{"errcode":0,"errmsg":"ok","status":3,"detail":{"errcode":40006,"errmsg":"invalid file size"}}`)
	var je *UploadJobError
	if _, err := f.c.Media.Job(docJobID).WaitWith(context.Background(), PollPolicy{Interval: every, MaxInterval: 16 * every}); !errors.As(err, &je) || je.Code != 40006 || je.JobID != docJobID {
		t.Errorf("Wait on a failed job: %v, want its *UploadJobError", err)
	}

	f.respond("POST", catalog.MediaUploadByURLResult.Path(), `{"errcode":0,"errmsg":"ok","status":1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.c.Media.Job(docJobID).WaitWith(ctx, PollPolicy{Interval: time.Hour}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past ctx's deadline: %v, want context.DeadlineExceeded", err)
	}
}
