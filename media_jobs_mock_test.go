package wecom_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// TestUploadByURLOnMock: end to end. A job the mock runs ends on its clock;
// Wait polls it to its end and gets its file, which media/get serves; the
// mock pushes upload_media_job_finish, which a callback.Handler parses into
// an UploadMediaJobEvent whose JobID names the job. A job whose MD5 does
// not match fails, and Wait returns its *UploadJobError.
func TestUploadByURLOnMock(t *testing.T) {
	t.Parallel()
	const token, key = "pushToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	// The receiver checks a push's timestamp against its own clock: the
	// mock's starts at now.
	clock := wecom.NewFakeClock(time.Now().Truncate(time.Second))
	srv := newMock(t, mock.Config{Now: clock.Now})
	t.Cleanup(srv.Close)
	c := setup(t, on(srv))
	crypto, err := callback.NewCrypto(token, key, testCorp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan string, 4)
	callback.Handle(h, func(_ context.Context, e *callback.UploadMediaJobEvent) error {
		finished <- e.JobID
		return nil
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	if err := srv.SetCallback(testCorp, mock.CallbackConfig{URL: hs.URL, Token: token, EncodingAESKey: key}); err != nil {
		t.Fatal(err)
	}

	video := bytes.Repeat([]byte("an mp4 of sorts "), 4096)
	sum := md5.Sum(video)
	srv.AddURLFile(testCorp, "https://cdn.example/welcome.mp4", video)
	ctx := context.Background()
	job, err := c.Media.UploadByURL(ctx, wecom.UploadByURLRequest{Type: wecom.MediaVideo, Filename: "欢迎.mp4", URL: "https://cdn.example/welcome.mp4", MD5: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := job.Result(ctx); err != nil || r.Status != wecom.UploadJobProcessing {
		t.Fatalf("a job just started: %+v, %v, want processing", r, err)
	}
	clock.Advance(mock.UploadJobTime)
	m, err := job.WaitWith(ctx, wecom.PollPolicy{Interval: time.Millisecond, MaxInterval: 16 * time.Millisecond})
	if err != nil || m.ID == "" || m.Type != wecom.MediaVideo || !m.CreatedAt.Equal(clock.Now()) {
		t.Fatalf("Wait = %+v, %v", m, err)
	}
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-finished:
		if id != job.ID {
			t.Errorf("upload_media_job_finish for %q, want %q", id, job.ID)
		}
	default:
		t.Fatal("no upload_media_job_finish reached the handler")
	}
	r, err := c.Media.Job(job.ID).Result(ctx) // as the callback's receiver would
	if err != nil || r.Status != wecom.UploadJobDone || r.Media.ID != m.ID {
		t.Errorf("the job by its id: %+v, %v", r, err)
	}
	var got bytes.Buffer
	file, err := c.Media.Download(ctx, m.ID, &got)
	if err != nil || !bytes.Equal(got.Bytes(), video) || file.Name != "欢迎.mp4" {
		t.Errorf("the job's file: %+v, %d bytes, %v", file, got.Len(), err)
	}

	bad, err := c.Media.UploadByURL(ctx, wecom.UploadByURLRequest{Type: wecom.MediaFile, Filename: "a.bin", URL: "https://cdn.example/welcome.mp4", MD5: strings.Repeat("0", 32)})
	if err != nil {
		t.Fatal(err)
	}
	srv.FinishUploadJobs(testCorp)
	var je *wecom.UploadJobError
	if _, err := bad.WaitWith(ctx, wecom.PollPolicy{Interval: time.Millisecond, MaxInterval: 16 * time.Millisecond}); !errors.As(err, &je) || je.Code != catalog.CodeInvalidParam {
		t.Errorf("Wait on a job whose MD5 does not match: %v, want an *UploadJobError", err)
	}
}

// TestUploadImageQuotaOnMock: the mock enforces uploadimg's quotas itself
// (the client's own counts turned off): the 1,001st of a CST day gets
// 45009, and the next CST day has room again; the 3,001st of a CST month
// gets 45009 on a day with room, and the next month has room again.
func TestUploadImageQuotaOnMock(t *testing.T) {
	t.Parallel()
	clock := wecom.NewFakeClock(time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)) // 23:00 CST
	srv := newMock(t, mock.Config{Now: clock.Now})
	path := catalog.MediaUploadImage.Path()
	c := setup(t, on(srv), wecom.WithLimits(path, wecom.Limits{PerDay: wecom.NoLimit, PerMonth: wecom.NoLimit, BlockFor: time.Millisecond}))
	upload := func() error {
		_, err := c.Media.UploadImage(context.Background(), wecom.ImageRequest{Filename: "a.png", Body: strings.NewReader("a small png")})
		return err
	}
	for i := range 1000 {
		if err := upload(); err != nil {
			t.Fatalf("upload %d: %v", i+1, err)
		}
	}
	var ae *wecom.APIError
	if err := upload(); !errors.As(err, &ae) || ae.Code != wecom.CodeFrequencyLimited {
		t.Fatalf("upload 1,001 of the CST day: %v, want 45009", err)
	}
	clock.Advance(time.Hour)         // 00:00 CST
	time.Sleep(5 * time.Millisecond) // the client's BlockFor
	if err := upload(); err != nil {
		t.Errorf("the first upload of the next CST day: %v", err)
	}
	if n := srv.Stats().Calls[path]; n != 1002 {
		t.Errorf("%d uploads reached the mock, want 1,002", n)
	}
	// 2,000 more on the 28th and the 29th fill November's 3,000.
	for day, n := range []int{999, 1000} {
		for i := range n {
			if err := upload(); err != nil {
				t.Fatalf("day %d, upload %d: %v", day+2, i+1, err)
			}
		}
		clock.Advance(24 * time.Hour)
	}
	time.Sleep(5 * time.Millisecond)
	if err := upload(); !errors.As(err, &ae) || ae.Code != wecom.CodeFrequencyLimited {
		t.Fatalf("upload 3,001 of the CST month, on the 30th: %v, want 45009", err)
	}
	clock.Advance(24 * time.Hour) // 2026-12-01 00:00 CST
	time.Sleep(5 * time.Millisecond)
	if err := upload(); err != nil {
		t.Errorf("the first upload of the next CST month: %v", err)
	}
}

// TestDownloadVoiceOnMock: media/get/jssdk serves the voice a JS-SDK page
// uploaded (AddVoice), streamed to the writer; an unknown media_id is 40007.
func TestDownloadVoiceOnMock(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	voice := bytes.Repeat([]byte("speex frame "), 500)
	id := srv.AddVoice(testCorp, "voice.speex", voice)
	var got bytes.Buffer
	file, err := c.Media.DownloadVoice(context.Background(), id, &got)
	if err != nil || !bytes.Equal(got.Bytes(), voice) || file.ContentType != "voice/speex" || file.Name != "voice.speex" {
		t.Fatalf("DownloadVoice = %+v, %d bytes, %v", file, got.Len(), err)
	}
	var ae *wecom.APIError
	if _, err := c.Media.DownloadVoice(context.Background(), "3a00000000none", &got); !errors.As(err, &ae) || ae.Code != catalog.CodeInvalidMediaID {
		t.Errorf("an unknown media_id: %v, want 40007", err)
	}
}
