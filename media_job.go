// A file of up to 200 MB that WeCom fetches from a URL in a job of its own
// (media/upload_by_url), the job's result (media/get_upload_by_url_result),
// and a handle to wait on it.

package wecom

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// UploadByURLRequest is a file for WeCom to fetch from a URL (document/path/
// 96219): a video (mp4) or a file of up to 200 MB, its media_id valid three
// days like an uploaded one's.
type UploadByURLRequest struct {
	// Scene is what the media_id serves; 0 means catalog.UploadByURLScene,
	// the one WeCom takes today (material of customer group welcome
	// messages, 入群欢迎语素材).
	Scene int
	// Type is MediaVideo or MediaFile: WeCom fetches no image or voice.
	Type MediaType
	// Filename is the name WeCom shows, at most 128 bytes.
	Filename string
	// URL is where WeCom fetches the file, at most 1,024 bytes. The server
	// must answer Range requests (WeCom fetches in chunks).
	URL string
	// MD5 is the file's MD5, in hex: WeCom checks the file it fetched
	// against it.
	MD5 string
}

type uploadByURLBody struct {
	Scene    int       `json:"scene"`
	Type     MediaType `json:"type"`
	Filename string    `json:"filename"`
	URL      string    `json:"url"`
	MD5      string    `json:"md5"`
}

type jobIDAnswer struct {
	JobID string `json:"jobid"`
}

func (a *jobIDAnswer) validate() error {
	if a.JobID == "" {
		return fmt.Errorf("no jobid")
	}
	return nil
}

// check validates r and returns its body.
func (r UploadByURLRequest) check() (uploadByURLBody, error) {
	b := uploadByURLBody(r)
	if b.Scene == 0 {
		b.Scene = catalog.UploadByURLScene
	}
	switch {
	case b.Scene < 0:
		return b, invalid("scene", "%d is negative", b.Scene)
	case r.Type != MediaVideo && r.Type != MediaFile:
		return b, invalid("type", "%q: WeCom fetches a video or a file", r.Type)
	case r.Filename == "" || len(r.Filename) > catalog.UploadByURLFilenameBytes:
		return b, invalid("filename", "%d bytes: give 1 to %d", len(r.Filename), catalog.UploadByURLFilenameBytes)
	case r.URL == "" || len(r.URL) > catalog.UploadByURLURLBytes:
		return b, invalid("url", "%d bytes: give 1 to %d", len(r.URL), catalog.UploadByURLURLBytes)
	case r.MD5 == "" || len(r.MD5) > catalog.UploadByURLMD5Bytes:
		return b, invalid("md5", "%d bytes: give the file's MD5, at most %d", len(r.MD5), catalog.UploadByURLMD5Bytes)
	}
	return b, nil
}

// UploadByURL starts a job in which WeCom fetches a file of up to 200 MB
// from req.URL, and returns a handle to the job. The job ends on WeCom's
// side in its own time; Wait polls for its end, and WeCom also pushes
// upload_media_job_finish to the app's callback URL (callback.
// UploadMediaJobEvent), whose JobID Job takes.
func (s *MediaService) UploadByURL(ctx context.Context, req UploadByURLRequest) (*UploadJob, error) {
	body, err := req.check()
	if err != nil {
		return nil, err
	}
	var out jobIDAnswer
	if err := s.p.perform(ctx, &call{id: catalog.MediaUploadByURL, body: body, out: &out}); err != nil {
		return nil, err
	}
	return &UploadJob{ID: out.JobID, Type: req.Type, s: s}, nil
}

// Job returns a handle to the upload_by_url job jobID, started by this
// process or another one (its id from upload_media_job_finish, say). Its
// Type is unknown: the Media its Wait returns has none.
func (s *MediaService) Job(jobID string) *UploadJob {
	return &UploadJob{ID: jobID, s: s}
}

// UploadJob is an upload_by_url job. It is safe for concurrent use.
type UploadJob struct {
	// ID is WeCom's jobid.
	ID string
	// Type is the type the job was started with ("" when unknown).
	Type MediaType
	s    *MediaService
}

// UploadJobStatus is the state of an upload_by_url job.
type UploadJobStatus int

// The states WeCom reports.
const (
	UploadJobProcessing UploadJobStatus = 1
	UploadJobDone       UploadJobStatus = 2
	UploadJobFailed     UploadJobStatus = 3
)

// UploadJobResult is what get_upload_by_url_result says of a job.
type UploadJobResult struct {
	Status UploadJobStatus
	// Media is the uploaded file, once Status is UploadJobDone.
	Media Media
	// Err is why the job failed, once Status is UploadJobFailed.
	Err *UploadJobError
}

// UploadJobError is a job that failed on WeCom's side: the errcode and
// errmsg of its result's detail (the file could not be fetched, or its
// MD5 or size was wrong).
type UploadJobError struct {
	JobID   string
	Code    int
	Message string
}

// Error describes the failure.
func (e *UploadJobError) Error() string {
	return fmt.Sprintf("wecom: upload_by_url job %s failed: errcode %d: %s", e.JobID, e.Code, e.Message)
}

type uploadJobAnswer struct {
	Status UploadJobStatus `json:"status"`
	Detail struct {
		ErrCode   int             `json:"errcode"`
		ErrMsg    string          `json:"errmsg"`
		MediaID   string          `json:"media_id"`
		CreatedAt json.RawMessage `json:"created_at"` // "1380000000" in the page's example; a number taken too
	} `json:"detail"`
}

func (a *uploadJobAnswer) validate() error {
	switch {
	case a.Status < UploadJobProcessing || a.Status > UploadJobFailed:
		return fmt.Errorf("status %d is not 1, 2 or 3", a.Status)
	case a.Status == UploadJobDone && a.Detail.MediaID == "":
		return fmt.Errorf("a job done without a media_id")
	}
	return nil
}

// Result asks WeCom once how the job stands.
func (j *UploadJob) Result(ctx context.Context) (UploadJobResult, error) {
	if j.ID == "" {
		return UploadJobResult{}, invalid("job id", "empty")
	}
	var out uploadJobAnswer
	if err := j.s.p.perform(ctx, &call{id: catalog.MediaUploadByURLResult, body: map[string]string{"jobid": j.ID}, out: &out}); err != nil {
		return UploadJobResult{}, err
	}
	r := UploadJobResult{Status: out.Status}
	switch out.Status {
	case UploadJobDone:
		r.Media = Media{Type: j.Type, ID: out.Detail.MediaID}
		if s, err := lenientString(out.Detail.CreatedAt); err == nil {
			if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
				r.Media.CreatedAt = time.Unix(sec, 0)
			}
		}
	case UploadJobFailed:
		r.Err = &UploadJobError{JobID: j.ID, Code: out.Detail.ErrCode, Message: out.Detail.ErrMsg}
	}
	return r, nil
}

// Wait waits for the job to end with the default PollPolicy (see
// WaitWith).
func (j *UploadJob) Wait(ctx context.Context) (Media, error) { return j.WaitWith(ctx, PollPolicy{}) }

// WaitWith polls the job as p says until it ends, and returns its file,
// or the *UploadJobError of a job that failed. It asks at once, then after
// each wait. It returns early with ctx's error when ctx ends; an error of
// a poll ends it too.
func (j *UploadJob) WaitWith(ctx context.Context, p PollPolicy) (Media, error) {
	var r UploadJobResult
	err := p.poll(ctx, true, nil, func() (bool, error) {
		var err error
		if r, err = j.Result(ctx); err == nil && r.Status == UploadJobFailed {
			err = r.Err
		}
		return r.Status == UploadJobDone, err
	})
	switch {
	case err != nil && err == ctx.Err():
		return Media{}, fmt.Errorf("wecom: waiting for upload_by_url job %s: %w", j.ID, err)
	case err != nil:
		return Media{}, err
	}
	return r.Media, nil
}
