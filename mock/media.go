package mock

import (
	"bytes"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// The media (素材) domain: temporary files uploaded with media/upload and
// served by media/get, whole or in Range chunks of at most 20 MB.

// mediaFile is one stored file.
type mediaFile struct {
	name, ctype string
	data        []byte
}

// mediaStore is a corp's files by media_id, and what media_jobs.go keeps:
// its images by URL, its upload_by_url jobs (by jobid, and in the order
// they started), the files of the URLs its jobs fetch, and its JS-SDK
// voices by media_id (each nil until used).
type mediaStore struct {
	files    map[string]*mediaFile
	seq      int
	images   map[string][]byte
	jobs     map[string]*uploadJob
	jobOrder []string
	urls     map[string][]byte
	voices   map[string]*mediaFile
}

// mediaOf returns c's files, made if missing.
func (c *corp) mediaOf() *mediaStore {
	if c.media == nil {
		c.media = &mediaStore{files: make(map[string]*mediaFile)}
	}
	return c.media
}

// add stores f and returns its media_id.
func (m *mediaStore) add(f *mediaFile) string {
	m.seq++
	id := fmt.Sprintf("3a%08dmedia", m.seq)
	m.files[id] = f
	return id
}

// AddMedia stores a file in a corp, as an upload would, and returns its
// media_id.
func (s *Server) AddMedia(corpID, name, contentType string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.corpLocked(corpID).mediaOf().add(&mediaFile{name: name, ctype: contentType, data: bytes.Clone(data)})
}

// MediaData returns the bytes and name of a corp's file, as uploaded.
func (s *Server) MediaData(corpID, mediaID string) (name string, data []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.media == nil || c.media.files[mediaID] == nil {
		return "", nil, false
	}
	f := c.media.files[mediaID]
	return f.name, bytes.Clone(f.data), true
}

type uploadAnswer struct {
	status
	Type      string `json:"type"`
	MediaID   string `json:"media_id"`
	CreatedAt string `json:"created_at"`
}

// Media registers the media (素材) APIs.
func (handlerSets) Media() handlers {
	return handlers{
		catalog.MediaUpload: (*corp).mediaUpload,
		catalog.MediaGet:    (*corp).mediaGet,
	}
}

// mediaUpload stores the file of a multipart body, as WeCom does: one part
// named "media" with a filename, over 5 bytes and within its type's cap.
func (c *corp) mediaUpload(in *input) (any, *apiError) {
	typ := in.query.Get("type")
	caps := map[string]int{"image": catalog.MediaImageBytes, "voice": catalog.MediaVoiceBytes, "video": catalog.MediaVideoBytes, "file": catalog.MediaFileBytes}
	limit, ok := caps[typ]
	if !ok {
		return nil, errf(catalog.CodeInvalidMediaType, "invalid media type")
	}
	name, data, aerr := readMedia(in, limit)
	if aerr != nil {
		return nil, aerr
	}
	id := c.mediaOf().add(&mediaFile{name: name, ctype: "application/octet-stream", data: data})
	return uploadAnswer{status: okStatus("ok"), Type: typ, MediaID: id, CreatedAt: strconv.FormatInt(in.now.Unix(), 10)}, nil
}

// readMedia reads the file of a multipart upload, as WeCom does: one part
// named "media" with a filename, over 5 bytes and at most limit.
func readMedia(in *input, limit int) (name string, data []byte, _ *apiError) {
	mt, params, err := mime.ParseMediaType(in.header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" || in.bodyErr {
		return "", nil, errf(catalog.CodeEmptyMedia, "empty media data")
	}
	mr := multipart.NewReader(bytes.NewReader(in.body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			return "", nil, errf(catalog.CodeEmptyMedia, "empty media data")
		}
		if p.FormName() != "media" || p.FileName() == "" {
			continue
		}
		// The file is at most the body: one buffer of that size holds it.
		b := bytes.NewBuffer(make([]byte, 0, len(in.body)+bytes.MinRead))
		_, err = b.ReadFrom(p)
		data := b.Bytes()
		switch {
		case err != nil || len(data) == 0:
			return "", nil, errf(catalog.CodeEmptyMedia, "empty media data")
		case len(data) <= catalog.MediaMinBytes || len(data) > limit:
			return "", nil, errf(catalog.CodeInvalidFileSize, "invalid file size")
		}
		return p.FileName(), data, nil
	}
}

// fileAnswer is a file a handler answers, written by writeFile.
type fileAnswer struct{ *mediaFile }

// mediaGet answers the file media_id names.
func (c *corp) mediaGet(in *input) (any, *apiError) {
	id := in.query.Get("media_id")
	if c.media == nil || c.media.files[id] == nil {
		return nil, errf(catalog.CodeInvalidMediaID, "invalid media_id")
	}
	return &fileAnswer{c.media.files[id]}, nil
}

// writeFile writes f: whole (200) when it is at most 20 MB and no Range is
// asked, else the one range asked (206) if at most 20 MB; a larger file or
// range answers 830002 in JSON, as WeCom does.
func (s *Server) writeFile(w http.ResponseWriter, in *input, f *fileAnswer, ip string, release func()) {
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	size := int64(len(f.data))
	start, end := int64(0), size-1
	rng := in.header.Get("Range")
	if rng != "" {
		var ok bool
		if start, end, ok = parseRange(rng, size); !ok {
			w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
	}
	if end-start+1 > catalog.MediaChunkBytes {
		s.mu.Lock()
		out := s.errorAnswer(errf(catalog.CodeRangeRequired, "file too large, download it in ranges of at most 20 MB"), ip, s.now(), true)
		s.mu.Unlock()
		writeJSON(w, out)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Content-Disposition", `attachment; filename="`+f.name+`"`)
	h.Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	if rng != "" {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
		w.WriteHeader(http.StatusPartialContent)
	}
	body := f.data[start : end+1]
	if len(body) == 0 {
		return
	}
	_, _ = w.Write(body[:len(body)-1])
	released = true
	release()
	_, _ = w.Write(body[len(body)-1:])
}

// parseRange reads one "bytes=start-end" range of a file of size bytes (an
// open end or one past the file ends at its last byte).
func parseRange(v string, size int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	first, last, found2 := strings.Cut(spec, "-")
	if !found || !found2 || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end = size - 1
	if last != "" {
		e, err := strconv.ParseInt(last, 10, 64)
		if err != nil || e < start {
			return 0, 0, false
		}
		end = min(e, size-1)
	}
	return start, end, true
}
