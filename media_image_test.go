package wecom

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
)

// TestUploadImageWire: uploadimg sends one multipart part with the name
// as given, raw UTF-8 (peers that sent RFC 2231's filename* or a
// URL-encoded name got them mangled, and a hand-built body without its
// boundary got 44001), no type in the query, and reads the URL of
// document/path/90256's example answer.
func TestUploadImageWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const want = "http://p.qpic.cn/pic_wework/3474110808/7a6344sdadfwehe42060/0"
	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 100)
	f.mt.RegisterResponder("POST", testBaseURL+catalog.MediaUploadImage.Path(), func(r *http.Request) (*http.Response, error) {
		raw, _ := io.ReadAll(r.Body)
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case err != nil || mt != "multipart/form-data" || params["boundary"] == "":
			t.Errorf("Content-Type %q, want multipart/form-data with a boundary", r.Header.Get("Content-Type"))
		case r.URL.Query().Has("type"):
			t.Errorf("query %q: uploadimg takes no type", r.URL.RawQuery)
		case bytes.Contains(raw, []byte("filename*")) || !bytes.Contains(raw, []byte(`filename="产品图.png"`)):
			t.Errorf("the part's header does not name the file raw in UTF-8: %q", raw[:min(len(raw), 200)])
		}
		p, err := multipart.NewReader(bytes.NewReader(raw), params["boundary"]).NextPart()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(p)
		if p.FileName() != "产品图.png" || !bytes.Equal(got, image) {
			t.Errorf("part %q of %d bytes, want 产品图.png of %d", p.FileName(), len(got), len(image))
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"","url":"`+want+`"}`), nil
	})
	url, err := f.c.Media.UploadImage(context.Background(), ImageRequest{Filename: "产品图.png", Body: bytes.NewReader(image)})
	if err != nil || url != want {
		t.Fatalf("UploadImage = %q, %v, want %q", url, err, want)
	}
	f.respond("POST", catalog.MediaUploadImage.Path(), `{"errcode":0,"errmsg":"ok"}`)
	var re *ResponseError
	if _, err := f.c.Media.UploadImage(context.Background(), ImageRequest{Filename: "a.png", Body: bytes.NewReader(image)}); !errors.As(f.record(err), &re) {
		t.Errorf("an answer without url: %v, want a *ResponseError", err)
	}
}

// TestUploadImageChecks: an image over 2 MB, of 5 bytes or less, or without
// a name is refused unsent.
func TestUploadImageChecks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, req := range []ImageRequest{
		{Filename: "big.png", Body: bytes.NewReader(make([]byte, catalog.MediaUploadImageBytes+1))},
		{Filename: "tiny.png", Body: strings.NewReader("12345")},
		{Body: strings.NewReader("123456")},
		{Filename: "nil.png"},
	} {
		if _, err := f.c.Media.UploadImage(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%q: %v, want ErrInvalidRequest", req.Filename, err)
		}
	}
	if n := f.calls("POST", catalog.MediaUploadImage.Path()); n != 0 {
		t.Errorf("%d uploads sent", n)
	}
	if _, err := f.c.Media.UploadImage(context.Background(), ImageRequest{Filename: "max.png", Body: bytes.NewReader(make([]byte, catalog.MediaUploadImageBytes))}); err != nil {
		t.Errorf("an image of 2 MB: %v", err)
	}
}

// docImageAnswer is uploadimg's answer in document/path/90256.
const docImageAnswer = `{"errcode":0,"errmsg":"","url":"http://p.qpic.cn/pic_wework/3474110808/7a6344sdadfwehe42060/0"}`

// uploadImages uploads n small images, failing the test on an error.
func uploadImages(t *testing.T, f *fixture, n int) {
	t.Helper()
	for i := range n {
		if _, err := f.c.Media.UploadImage(context.Background(), ImageRequest{Filename: "a.png", Body: strings.NewReader("a small png")}); err != nil {
			t.Fatalf("upload %d: %v", i+1, err)
		}
	}
}

// The client's calendar quotas of uploadimg are tested at a hundredth of
// WeCom's (1,000 a CST day, 3,000 a CST month; TestUploadImageQuotasInCatalog
// pins those), set with WithLimits: the same limiter and calendar, with 40
// uploads where WeCom's figures take 4,000.
const testImagesPerDay, testImagesPerMonth = 10, 30

// TestUploadImageQuotasInCatalog: uploadimg carries WeCom's 1,000 a CST day
// and 3,000 a CST month (document/path/90256).
func TestUploadImageQuotasInCatalog(t *testing.T) {
	e, _ := catalog.Lookup(catalog.MediaUploadImage.Path())
	got := map[string]int{}
	for _, r := range e.Rules {
		got[r.Name] = r.Limit
	}
	if got[catalog.RulePerDay] != 1000 || got[catalog.RulePerMonth] != 3000 {
		t.Errorf("uploadimg's rules %v, want 1,000 a day and 3,000 a month", got)
	}
}

// imageQuotaSetup is setup with uploadimg's quotas at testImagesPerDay and
// testImagesPerMonth, on clock, answered as document/path/90256 shows (the
// client's quotas alone).
func imageQuotaSetup(t *testing.T, clock *fakeClock, opts ...Option) *fixture {
	t.Helper()
	path := catalog.MediaUploadImage.Path()
	opts = append([]Option{withClock(clock.Now), WithLimits(path, Limits{PerDay: testImagesPerDay, PerMonth: testImagesPerMonth})}, opts...)
	f := setup(t, opts...)
	f.respond("POST", path, docImageAnswer)
	return f
}

// TestUploadImageDayQuota: the upload past a CST day's quota is refused
// before it is sent, with a RetryAfter to the next CST midnight, and the
// next day has its quota again. A caller who waits on rate limits, with a
// deadline before that midnight, is refused at once all the same.
func TestUploadImageDayQuota(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Date(2026, 11, 27, 14, 30, 0, 0, time.UTC)) // 22:30 CST
	f := imageQuotaSetup(t, clock, WithWaitOnRateLimit(true))
	path := catalog.MediaUploadImage.Path()
	uploadImages(t, f, testImagesPerDay)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := f.c.Media.UploadImage(ctx, ImageRequest{Filename: "a.png", Body: strings.NewReader("one too many")})
	var rl *RateLimitError
	if !errors.As(f.record(err), &rl) || rl.RetryAfter != 90*time.Minute || rl.calendar != catalog.Day {
		t.Fatalf("upload %d: %v, want a daily RateLimitError for 90 minutes (to 00:00 CST)", testImagesPerDay+1, err)
	}
	if !strings.Contains(err.Error(), "midnight CST") {
		t.Errorf("the error does not say the day is spent: %v", err)
	}
	if n := f.calls("POST", path); n != testImagesPerDay {
		t.Errorf("%d uploads sent, want %d", n, testImagesPerDay)
	}
	clock.Advance(90 * time.Minute) // 00:00 CST, a new day
	uploadImages(t, f, 1)
	if n := f.calls("POST", path); n != testImagesPerDay+1 {
		t.Errorf("%d uploads sent, want %d", n, testImagesPerDay+1)
	}
}

// TestUploadImageMonthQuota: a CST month's quota spent over three days, a
// day's quota on each, and the next upload is refused unsent on the fourth,
// whose day has room, its RetryAfter running to the first of the next month
// at 00:00 CST; that month starts afresh.
func TestUploadImageMonthQuota(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC) // 2026-11-27 00:00 CST
	clock := newFakeClock(start)
	f := imageQuotaSetup(t, clock)
	for range testImagesPerMonth / testImagesPerDay { // the 27th, 28th and 29th of November, CST
		uploadImages(t, f, testImagesPerDay)
		clock.Advance(24 * time.Hour)
	}
	clock.Set(start.Add(3*24*time.Hour + 20*time.Hour)) // 2026-11-30 20:00 CST
	if got := catalog.MonthOf(clock.Now()); got != "202611" {
		t.Fatalf("the clock is in %s", got)
	}
	_, err := f.c.Media.UploadImage(context.Background(), ImageRequest{Filename: "a.png", Body: strings.NewReader("one too many")})
	var rl *RateLimitError
	if !errors.As(f.record(err), &rl) || rl.calendar != catalog.Month || rl.RetryAfter != 4*time.Hour {
		t.Fatalf("upload %d of the month: %v, want a monthly RateLimitError for 4 hours (to 2026-12-01 00:00 CST)", testImagesPerMonth+1, err)
	}
	if !strings.Contains(err.Error(), "monthly") {
		t.Errorf("the error does not say the month is spent: %v", err)
	}
	if n := f.calls("POST", catalog.MediaUploadImage.Path()); n != testImagesPerMonth {
		t.Errorf("%d uploads sent, want %d", n, testImagesPerMonth)
	}
	clock.Advance(4 * time.Hour)
	uploadImages(t, f, 1)
}

// TestDownloadVoiceWire: media/get/jssdk is a GET of media_id answered as
// document/path/90255 shows (Content-Type voice/speex, the name in
// Content-disposition), streamed to the writer; its JSON error is an
// *APIError.
func TestDownloadVoiceWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	voice := bytes.Repeat([]byte("speex"), 1000)
	f.mt.RegisterResponder("GET", testBaseURL+catalog.MediaGetJSSDK.Path(), func(r *http.Request) (*http.Response, error) {
		if got := r.URL.Query().Get("media_id"); got != "MEDIA_ID" {
			t.Errorf("media_id %q", got)
		}
		resp := httpmock.NewBytesResponse(200, voice)
		resp.Header.Set("Content-Type", "voice/speex")
		resp.Header.Set("Content-disposition", `attachment; filename="XXX"`)
		resp.ContentLength = int64(len(voice))
		return resp, nil
	})
	var buf bytes.Buffer
	file, err := f.c.Media.DownloadVoice(context.Background(), "MEDIA_ID", &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), voice) || file.Name != "XXX" || file.ContentType != "voice/speex" || file.Size != int64(len(voice)) {
		t.Fatalf("DownloadVoice = %+v, %d bytes, %v", file, buf.Len(), err)
	}
	f.respond("GET", catalog.MediaGetJSSDK.Path(), `{"errcode":40007,"errmsg":"invalid media_id"}`)
	var ae *APIError
	if _, err := f.c.Media.DownloadVoice(context.Background(), "MEDIA_ID", io.Discard); !errors.As(f.record(err), &ae) || ae.Code != catalog.CodeInvalidMediaID {
		t.Errorf("an unknown media_id: %v, want errcode 40007", err)
	}
}

// TestUploadImageWaitsForTheMonth: with WithWaitOnRateLimit and no
// deadline, an upload refused by the month's count waits until the next
// CST month starts and goes out then, as one refused by the day's waits
// for the next midnight.
func TestUploadImageWaitsForTheMonth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits Limits
		at     time.Time
	}{
		{"month", Limits{PerMonth: 1}, time.Date(2026, 11, 30, 15, 59, 59, 900_000_000, time.UTC)}, // 100 ms before December, CST
		{"day", Limits{PerDay: 1}, time.Date(2026, 11, 27, 15, 59, 59, 900_000_000, time.UTC)},     // 100 ms before midnight, CST
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(tc.at)
			f := setup(t, withClock(clock.Now), WithWaitOnRateLimit(true), WithLimits(catalog.MediaUploadImage.Path(), tc.limits))
			f.respond("POST", catalog.MediaUploadImage.Path(), docImageAnswer)
			uploadImages(t, f, 1)
			go func() { // the clock passes into the next period while the upload waits
				time.Sleep(50 * time.Millisecond)
				clock.Advance(time.Second)
			}()
			start := time.Now()
			uploadImages(t, f, 1)
			if waited := time.Since(start); waited < 100*time.Millisecond {
				t.Errorf("the second upload went out after %s, before the next %s", waited, tc.name)
			}
			if n := f.calls("POST", catalog.MediaUploadImage.Path()); n != 2 {
				t.Errorf("%d uploads sent, want 2", n)
			}
		})
	}
}
