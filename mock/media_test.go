package mock_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"testing"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// mediaRequest sends one media request with headers and returns its status,
// headers and body.
func mediaRequest(t *testing.T, c *client, method, path string, q url.Values, h http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// multipartFile returns a multipart body holding data in field as filename.
func multipartFile(t *testing.T, field, filename string, data []byte) (http.Header, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	return http.Header{"Content-Type": {mw.FormDataContentType()}}, buf.Bytes()
}

func errcodeOf(t *testing.T, b []byte) int {
	t.Helper()
	var a struct {
		ErrCode int `json:"errcode"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return a.ErrCode
}

// TestMedia: media/upload stores the file of a multipart body, checked as
// WeCom checks it; media/get serves it whole or by Range, refuses a file
// over 20 MB without a Range (830002), and answers JSON for an unknown id.
func TestMedia(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		tok := e.c.token()
		q := func(kv ...string) url.Values {
			v := url.Values{"access_token": {tok}}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
		up := catalog.MediaUpload.Path()
		h, body := multipartFile(t, "media", "a.txt", []byte("hello, media"))
		for _, tc := range []struct {
			name string
			q    url.Values
			h    http.Header
			body []byte
			code int
		}{
			{"a bad type", q("type", "doc"), h, body, 40004},
			{"no multipart", q("type", "file"), http.Header{"Content-Type": {"application/json"}}, []byte(`{}`), 44001},
			{"5 bytes", q("type", "file"), nil, nil, 40006},
			{"another field", q("type", "file"), nil, nil, 44001},
		} {
			switch tc.name {
			case "5 bytes":
				tc.h, tc.body = multipartFile(t, "media", "a.txt", []byte("12345"))
			case "another field":
				tc.h, tc.body = multipartFile(t, "file", "a.txt", []byte("hello, media"))
			}
			if _, _, b := mediaRequest(t, e.c, http.MethodPost, up, tc.q, tc.h, tc.body); errcodeOf(t, b) != tc.code {
				t.Errorf("%s: %s, want errcode %d", tc.name, b, tc.code)
			}
		}
		_, _, b := mediaRequest(t, e.c, http.MethodPost, up, q("type", "file"), h, body)
		var a struct {
			ErrCode   int    `json:"errcode"`
			MediaID   string `json:"media_id"`
			CreatedAt string `json:"created_at"`
		}
		if err := json.Unmarshal(b, &a); err != nil || a.ErrCode != 0 || a.MediaID == "" || a.CreatedAt == "" {
			t.Fatalf("upload: %s", b)
		}
		get := catalog.MediaGet.Path()
		status, hdr, got := mediaRequest(t, e.c, http.MethodGet, get, q("media_id", a.MediaID), nil, nil)
		if status != 200 || string(got) != "hello, media" || hdr.Get("Content-Disposition") != `attachment; filename="a.txt"` {
			t.Errorf("get whole: %d %q %v", status, got, hdr)
		}
		status, hdr, got = mediaRequest(t, e.c, http.MethodGet, get, q("media_id", a.MediaID), http.Header{"Range": {"bytes=7-"}}, nil)
		if status != 206 || string(got) != "media" || hdr.Get("Content-Range") != "bytes 7-11/12" {
			t.Errorf("get a range: %d %q %v", status, got, hdr)
		}
		if status, _, _ = mediaRequest(t, e.c, http.MethodGet, get, q("media_id", a.MediaID), http.Header{"Range": {"bytes=12-"}}, nil); status != 416 {
			t.Errorf("a range past the end: %d, want 416", status)
		}
		if _, _, b := mediaRequest(t, e.c, http.MethodGet, get, q("media_id", "nope"), nil, nil); errcodeOf(t, b) != 40007 {
			t.Errorf("an unknown id: %s, want 40007", b)
		}
		big := e.srv.AddMedia(corpID, "big.bin", "application/octet-stream", make([]byte, catalog.MediaChunkBytes+1))
		if _, _, b := mediaRequest(t, e.c, http.MethodGet, get, q("media_id", big), nil, nil); errcodeOf(t, b) != 830002 {
			t.Errorf("a file over 20 MB without Range: %.80s, want 830002", b)
		}
		if status, _, got := mediaRequest(t, e.c, http.MethodGet, get, q("media_id", big), http.Header{"Range": {"bytes=1-10"}}, nil); status != 206 || len(got) != 10 {
			t.Errorf("a range of a file over 20 MB: %d, %d bytes", status, len(got))
		}
	})
}

// A download is in flight until its last byte: a second one of the same
// media_id meanwhile is refused with 45033, as WeCom refuses it.
func TestMediaDownloadInFlightUntilItsEnd(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	ts := srv.Start()
	t.Cleanup(ts.Close)
	c := &client{t: t, http: ts.Client(), base: ts.URL}
	tok := c.token()
	id := srv.AddMedia(corpID, "big.bin", "application/octet-stream", make([]byte, 15<<20))
	q := url.Values{"access_token": {tok}, "media_id": {id}}
	req, err := http.NewRequest(http.MethodGet, ts.URL+catalog.MediaGet.Path()+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := ts.Client().Do(req) // its 15 MB stay unread: the mock is still sending them
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	if _, _, b := mediaRequest(t, c, http.MethodGet, catalog.MediaGet.Path(), q, nil, nil); errcodeOf(t, b) != 45033 {
		t.Errorf("a second download during the first: %.80s, want 45033", b)
	}
	if _, err := io.Copy(io.Discard, first.Body); err != nil {
		t.Fatal(err)
	}
	if status, _, got := mediaRequest(t, c, http.MethodGet, catalog.MediaGet.Path(), q, http.Header{"Range": {"bytes=0-9"}}, nil); status != 206 || len(got) != 10 {
		t.Errorf("a download after the first ended: %d, %d bytes", status, len(got))
	}
}
