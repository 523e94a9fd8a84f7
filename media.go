package wecom

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// MediaService calls the media (素材) APIs: temporary files uploaded for
// messages and other APIs, and files downloaded by media_id.
type MediaService service

// MediaType is the type of a temporary file.
type MediaType string

// The media types WeCom takes, with the largest file of each (see catalog's
// caps).
const (
	MediaImage MediaType = "image" // jpg or png, 10 MB
	MediaVoice MediaType = "voice" // AMR, 2 MB, 60 s
	MediaVideo MediaType = "video" // mp4, 10 MB
	MediaFile  MediaType = "file"  // 20 MB
)

// maxBytes returns the largest upload of t, and whether t is a type.
func (t MediaType) maxBytes() (int64, bool) {
	switch t {
	case MediaImage:
		return catalog.MediaImageBytes, true
	case MediaVoice:
		return catalog.MediaVoiceBytes, true
	case MediaVideo:
		return catalog.MediaVideoBytes, true
	case MediaFile:
		return catalog.MediaFileBytes, true
	}
	return 0, false
}

// UploadRequest is a file to upload (media/upload, document/path/90253).
type UploadRequest struct {
	Type MediaType
	// Filename is the name WeCom shows, sent as it is in UTF-8.
	Filename string
	// Body is the file, streamed as it is read. An io.ReadSeeker (an
	// *os.File, a *bytes.Reader) is rewound to retry a failed attempt;
	// another reader is sent once. It is not read after Upload returns.
	Body io.Reader
	// Size is the file's length in bytes. Zero: Body's length, when it
	// says it (Len, or Seek for an io.Seeker).
	Size int64
}

// Media is an uploaded temporary file: its media_id is valid three days,
// for every app of the corp.
type Media struct {
	Type      MediaType
	ID        string
	CreatedAt time.Time
}

type uploadAnswer struct {
	Type      MediaType `json:"type"`
	MediaID   string    `json:"media_id"`
	CreatedAt string    `json:"created_at"` // a string: "1380000000"
}

func (a *uploadAnswer) validate() error {
	if a.MediaID == "" {
		return fmt.Errorf("no media_id")
	}
	return nil
}

// Upload uploads a temporary file, streamed from req.Body.
func (s *MediaService) Upload(ctx context.Context, req UploadRequest) (Media, error) {
	size, err := req.check()
	if err != nil {
		return Media{}, err
	}
	return sendUpload(ctx, s.p, catalog.MediaUpload, req, size)
}

// sendUpload sends req, checked and size bytes long, to the upload endpoint id
// (media/upload, a robot's webhook/upload_media): the two answer alike.
func sendUpload(ctx context.Context, p *pipeline, id catalog.ID, req UploadRequest, size int64) (Media, error) {
	var out uploadAnswer
	if err := postFile(ctx, p, id, url.Values{"type": {string(req.Type)}}, req, size, &out); err != nil {
		return Media{}, err
	}
	m := Media{Type: out.Type, ID: out.MediaID}
	if sec, err := strconv.ParseInt(out.CreatedAt, 10, 64); err == nil {
		m.CreatedAt = time.Unix(sec, 0)
	}
	return m, nil
}

// postFile sends the file of req, checked and size bytes long, as the
// multipart body of a call of id (its form field "media", as every upload
// of WeCom names it), the answer decoded into out.
func postFile(ctx context.Context, p *pipeline, id catalog.ID, query url.Values, req UploadRequest, size int64, out any) error {
	return p.perform(ctx, &call{id: id, query: query, out: out,
		upload: &upload{field: "media", filename: req.Filename, size: size, r: req.Body}})
}

// check validates r and returns the file's size.
func (r UploadRequest) check() (int64, error) {
	limit, ok := r.Type.maxBytes()
	if !ok {
		return 0, invalid("type", "%q is not image, voice, video or file", r.Type)
	}
	return r.checkFile(limit)
}

// checkFile validates r's name and body, and returns the file's size, at
// most limit bytes.
func (r UploadRequest) checkFile(limit int64) (int64, error) {
	switch {
	case r.Filename == "" || strings.ContainsAny(r.Filename, "\"\\\r\n"):
		return 0, invalid("filename", "%q is empty or holds a quote, a backslash or a line break", r.Filename)
	case r.Body == nil:
		return 0, invalid("body", "nil")
	}
	size := r.Size
	if size == 0 {
		size = lengthOf(r.Body)
	}
	switch {
	case size < 0:
		return 0, invalid("size", "unknown: give Size, or a Body that says its length")
	case size <= catalog.MediaMinBytes || size > limit:
		return 0, invalid("size", "%d bytes: a %s must be over %d bytes and at most %d", size, r.Type, catalog.MediaMinBytes, limit)
	}
	return size, nil
}

// lengthOf returns the bytes left in r when it says (-1 otherwise).
func lengthOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case io.Seeker:
		cur, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		end, err := v.Seek(0, io.SeekEnd)
		if _, err2 := v.Seek(cur, io.SeekStart); err != nil || err2 != nil {
			return -1
		}
		return end - cur
	}
	return -1
}

// DownloadedFile describes a downloaded file.
type DownloadedFile struct {
	Name        string // from Content-Disposition
	ContentType string
	Size        int64
}

// Download writes the file mediaID names to w as it arrives (media/get,
// document/path/90254), in Range chunks of at most 20 MB (WeCom refuses
// larger files in one answer), each a call of its own: an attempt cut off
// mid-file is retried from the last byte written, so w gets every byte
// once. w is not written after Download returns. On an error, w may hold a
// part of the file.
func (s *MediaService) Download(ctx context.Context, mediaID string, w io.Writer) (DownloadedFile, error) {
	return fetchFile(ctx, s.p, catalog.MediaGet, mediaID, w)
}

// fetchFile writes the file mediaID names to w, fetched from the download
// endpoint id (media/get, media/get/jssdk) in Range chunks, each a call of
// its own, as Download says.
func fetchFile(ctx context.Context, p *pipeline, id catalog.ID, mediaID string, w io.Writer) (DownloadedFile, error) {
	if mediaID == "" {
		return DownloadedFile{}, invalid("media id", "empty")
	}
	if w == nil {
		return DownloadedFile{}, invalid("writer", "nil")
	}
	d := &download{w: w, chunk: catalog.MediaChunkBytes, total: -1}
	for {
		before, _, _ := d.state()
		err := p.perform(ctx, &call{id: id, query: url.Values{"media_id": {mediaID}}, download: d})
		offset, done, file := d.state()
		switch {
		case err != nil:
			return file, err
		case done:
			return file, nil
		case offset == before:
			return file, &ResponseError{Path: id.Path(), StatusCode: http.StatusPartialContent, Err: fmt.Errorf("an empty chunk at byte %d", offset)}
		}
	}
}
