package mock

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// The media APIs beside media/upload and media/get: images uploaded for a
// permanent URL (media/uploadimg, under its quotas per CST day and month,
// which admission enforces from the catalog), files WeCom fetches from a
// URL in jobs of its own (media/upload_by_url, get_upload_by_url_result),
// and the voices of JS-SDK pages (media/get/jssdk).
//
// A job fetches only the URLs the mock was given (AddURLFile). It ends
// UploadJobTime after it started, on the mock's clock (Config.Now): before
// the mock serves the corp's next call of any API once that time has
// passed, or at once on FinishUploadJobs. Then its file is stored as a
// temporary file (media/get serves it, in Range chunks over 20 MB), and
// upload_media_job_finish is pushed to the corp's receiver (SetCallback).
// WeCom's page lists the errcodes of a failed job's detail without the
// mock knowing them: a job whose URL the mock does not serve, or whose MD5
// does not match, fails with 40058 (invalid parameter), one whose file is
// not over 5 bytes and at most 200 MB with 40006 (invalid file size), the
// mock's choices.

// UploadJobTime is how long an upload_by_url job of the mock takes, on its
// clock (WeCom says nothing of how long its jobs take).
const UploadJobTime = 5 * time.Second

// uploadJob is one upload_by_url job.
type uploadJob struct {
	typ, filename, url, md5 string
	due                     time.Time
	status                  int // 1 processing, 2 done, 3 failed
	code                    int
	msg, mediaID            string
	createdAt               time.Time
}

// The states of a job, as get_upload_by_url_result says them.
const (
	jobProcessing = 1
	jobDone       = 2
	jobFailed     = 3
)

// AddURLFile makes url serve data to corp corpID's upload_by_url jobs, as
// a CDN would.
func (s *Server) AddURLFile(corpID, url string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.corpLocked(corpID).mediaOf()
	if m.urls == nil {
		m.urls = make(map[string][]byte)
	}
	m.urls[url] = bytes.Clone(data)
}

// AddVoice stores a voice as a JS-SDK page's wx.uploadVoice would, and
// returns its media_id, which media/get/jssdk serves (as voice/speex).
func (s *Server) AddVoice(corpID, name string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.corpLocked(corpID).mediaOf()
	if m.voices == nil {
		m.voices = make(map[string]*mediaFile)
	}
	m.seq++
	id := fmt.Sprintf("3a%08dvoice", m.seq)
	m.voices[id] = &mediaFile{name: name, ctype: "voice/speex", data: bytes.Clone(data)}
	return id
}

// Image returns the bytes of an image of corp corpID that uploadimg
// answered url for.
func (s *Server) Image(corpID, url string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.media == nil || c.media.images[url] == nil {
		return nil, false
	}
	return bytes.Clone(c.media.images[url]), true
}

// FinishUploadJobs ends every upload_by_url job of corp corpID still
// processing, as if UploadJobTime had passed, and pushes their callbacks.
func (s *Server) FinishUploadJobs(corpID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.media == nil {
		return
	}
	now := s.now()
	for _, j := range c.media.jobs {
		if j.status == jobProcessing {
			j.due = now
		}
	}
	s.finishUploadJobsLocked(c, now)
}

// finishUploadJobsLocked ends the jobs of c due by now, in the order they
// started, and pushes upload_media_job_finish for each. s.mu must be held.
func (s *Server) finishUploadJobsLocked(c *corp, now time.Time) {
	if c.media == nil {
		return
	}
	var events []callbackEvent
	for _, id := range c.media.jobOrder {
		j := c.media.jobs[id]
		if j.status != jobProcessing || now.Before(j.due) {
			continue
		}
		c.media.finish(j)
		events = append(events, callbackEvent{event: "upload_media_job_finish", fields: []xmlField{text("JobId", id)}})
	}
	if len(events) > 0 {
		s.pushEventsLocked(c.id, now, events)
	}
}

// finish ends j: its file fetched from the URLs the corp was given, checked
// and stored.
func (m *mediaStore) finish(j *uploadJob) {
	data, ok := m.urls[j.url]
	sum := md5.Sum(data)
	switch {
	case !ok:
		j.status, j.code, j.msg = jobFailed, catalog.CodeInvalidParam, "url download failed"
	case len(data) <= catalog.MediaMinBytes || len(data) > catalog.UploadByURLBytes:
		j.status, j.code, j.msg = jobFailed, catalog.CodeInvalidFileSize, "invalid file size"
	case !strings.EqualFold(hex.EncodeToString(sum[:]), j.md5):
		j.status, j.code, j.msg = jobFailed, catalog.CodeInvalidParam, "md5 mismatch"
	default:
		ctype := "application/octet-stream"
		if j.typ == "video" {
			ctype = "video/mp4"
		}
		j.status, j.msg = jobDone, "ok"
		j.mediaID = m.add(&mediaFile{name: j.filename, ctype: ctype, data: data})
		j.createdAt = j.due
	}
}

// MediaMore registers the media APIs beside upload and get.
func (handlerSets) MediaMore() handlers {
	return handlers{
		catalog.MediaUploadImage:       (*corp).mediaUploadImage,
		catalog.MediaUploadByURL:       (*corp).mediaUploadByURL,
		catalog.MediaUploadByURLResult: (*corp).mediaUploadByURLResult,
		catalog.MediaGetJSSDK:          (*corp).mediaGetJSSDK,
	}
}

type imageAnswer struct {
	status
	URL string `json:"url"`
}

// mediaUploadImage stores the image of a multipart body and answers its
// permanent URL.
func (c *corp) mediaUploadImage(in *input) (any, *apiError) {
	_, data, aerr := readMedia(in, catalog.MediaUploadImageBytes)
	if aerr != nil {
		return nil, aerr
	}
	m := c.mediaOf()
	if m.images == nil {
		m.images = make(map[string][]byte)
	}
	m.seq++
	url := fmt.Sprintf("https://wework.qpic.cn/wwpic/%s/%08d/0", c.id, m.seq)
	m.images[url] = data
	return imageAnswer{status: okStatus("ok"), URL: url}, nil
}

type uploadByURLRequest struct {
	Scene    int    `json:"scene"`
	Type     string `json:"type"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
	MD5      string `json:"md5"`
}

type jobAnswer struct {
	status
	JobID string `json:"jobid"`
}

// mediaUploadByURL starts a job, as WeCom does: scene 1, a video or a
// file, a filename, url and md5 within their lengths.
func (c *corp) mediaUploadByURL(in *input) (any, *apiError) {
	var req uploadByURLRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.Type != "video" && req.Type != "file":
		return nil, errf(catalog.CodeInvalidMediaType, "invalid media type")
	case req.Scene != catalog.UploadByURLScene,
		req.Filename == "" || len(req.Filename) > catalog.UploadByURLFilenameBytes,
		req.URL == "" || len(req.URL) > catalog.UploadByURLURLBytes,
		req.MD5 == "" || len(req.MD5) > catalog.UploadByURLMD5Bytes:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter")
	}
	m := c.mediaOf()
	if m.jobs == nil {
		m.jobs = make(map[string]*uploadJob)
	}
	m.seq++
	id := "jobid_" + strconv.Itoa(m.seq)
	m.jobs[id] = &uploadJob{typ: req.Type, filename: req.Filename, url: req.URL, md5: req.MD5, due: in.now.Add(UploadJobTime), status: jobProcessing}
	m.jobOrder = append(m.jobOrder, id)
	return jobAnswer{status: okStatus("ok"), JobID: id}, nil
}

type jobDetail struct {
	status
	MediaID   string `json:"media_id,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
}

type jobResultAnswer struct {
	status
	Status int        `json:"status"`
	Detail *jobDetail `json:"detail,omitempty"`
}

// mediaUploadByURLResult answers how a job stands: processing, or ended
// with its detail.
func (c *corp) mediaUploadByURLResult(in *input) (any, *apiError) {
	var req struct {
		JobID string `json:"jobid"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	var j *uploadJob
	if c.media != nil {
		j = c.media.jobs[req.JobID]
	}
	if j == nil {
		return nil, errf(catalog.CodeInvalidParam, "invalid jobid")
	}
	out := jobResultAnswer{status: okStatus("ok"), Status: j.status}
	switch j.status {
	case jobDone:
		out.Detail = &jobDetail{status: okStatus("ok"), MediaID: j.mediaID, CreatedAt: strconv.FormatInt(j.createdAt.Unix(), 10)}
	case jobFailed:
		out.Detail = &jobDetail{status: status{ErrCode: j.code, ErrMsg: j.msg}}
	}
	return out, nil
}

// mediaGetJSSDK answers the voice media_id names, whole or in Range
// chunks, as media/get answers a file.
func (c *corp) mediaGetJSSDK(in *input) (any, *apiError) {
	id := in.query.Get("media_id")
	if c.media == nil || c.media.voices[id] == nil {
		return nil, errf(catalog.CodeInvalidMediaID, "invalid media_id")
	}
	return &fileAnswer{c.media.voices[id]}, nil
}
