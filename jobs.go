package wecom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
)

// JobService runs the directory's asynchronous batch jobs (异步批量接口,
// document/path/90979): a CSV of members or departments, uploaded through
// media/upload, applied by WeCom in the background. A job started here is
// a *Job, waited on by polling batch/getresult, by the batch_job_result
// callback (Job.Done, JobSet), or both.
//
// WeCom keeps the results of a corp's last five jobs only: the result of
// an older one is gone (40089, a *JobGoneError). Read a job's result before
// starting five more.
type JobService service

// JobType is the kind of a batch job, as getresult and the callback name
// it.
type JobType string

// The batch jobs.
const (
	JobSyncUsers          JobType = "sync_user"     // batch/syncuser (增量更新成员)
	JobReplaceUsers       JobType = "replace_user"  // batch/replaceuser (全量覆盖成员)
	JobReplaceDepartments JobType = "replace_party" // batch/replaceparty (全量覆盖部门)
)

// JobRequest is the file of a batch job and how WeCom reports its end.
// Give the CSV (CSV, uploaded first through media/upload with type file)
// or a CSV uploaded already (MediaID), not both. UsersCSV and
// DepartmentsCSV write the files in WeCom's templates.
type JobRequest struct {
	// CSV is the file to upload, at most 20 MB. A reader that does not
	// say its length (Len, or Seek) is read into memory first.
	CSV io.Reader
	// Filename is the uploaded file's name (default "users.csv" or
	// "departments.csv").
	Filename string
	// MediaID names a CSV uploaded already (Media.Upload, MediaFile),
	// valid three days.
	MediaID string
	// ToInvite says whether WeCom invites the members a job creates to
	// use WeCom (default true; members' jobs only).
	ToInvite *bool
	// Callback, when set, is where WeCom pushes the job's batch_job_result
	// when it ends (else the app's callback URL, if it has one).
	Callback *JobCallback
}

// JobCallback is a receiver of the batch_job_result callback: its URL
// (http or https) and the Token and EncodingAESKey it verifies and
// decrypts with, as callback.NewCrypto takes them. Neither secret is ever
// put in an error or a log; String leaves them out.
type JobCallback struct {
	URL            string
	Token          string
	EncodingAESKey string
}

// String describes the callback without its secrets.
func (c JobCallback) String() string {
	return "JobCallback{URL: " + c.URL + ", Token and EncodingAESKey redacted}"
}

// GoString is String, so that %#v does not print the secrets either.
func (c JobCallback) GoString() string { return c.String() }

// check validates the callback, never quoting its secrets.
func (c *JobCallback) check() error {
	if c == nil {
		return nil
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return invalid("callback url", "not an absolute http or https URL")
	case c.Token == "" || len(c.Token) > 32:
		return invalid("callback token", "empty or over 32 characters")
	case len(c.EncodingAESKey) != 43:
		return invalid("callback encodingaeskey", "%d characters, want 43", len(c.EncodingAESKey))
	}
	return nil
}

// jobRequest is the body of syncuser, replaceuser and replaceparty.
type jobRequest struct {
	MediaID  string       `json:"media_id"`
	ToInvite *bool        `json:"to_invite,omitempty"`
	Callback *jobCallback `json:"callback,omitempty"`
}

type jobCallback struct {
	URL            string `json:"url"`
	Token          string `json:"token"`
	EncodingAESKey string `json:"encodingaeskey"`
}

// SyncUsers starts batch/syncuser (增量更新成员, document/path/90980): the
// members of the CSV are added, or updated in the fields the file gives;
// the directory's other members stay as they are.
func (s *JobService) SyncUsers(ctx context.Context, r JobRequest) (*Job, error) {
	return s.start(ctx, catalog.BatchSyncUser, JobSyncUsers, r)
}

// ReplaceUsers starts batch/replaceuser (全量覆盖成员, document/path/90981):
// the directory's members become those of the CSV; a member the file does
// not list is deleted. WeCom stops the job, for safety, when it would
// delete more than 50 members and over 20% of them, or fewer than 50 and
// over 80%.
func (s *JobService) ReplaceUsers(ctx context.Context, r JobRequest) (*Job, error) {
	return s.start(ctx, catalog.BatchReplaceUser, JobReplaceUsers, r)
}

// ReplaceDepartments starts batch/replaceparty (全量覆盖部门,
// document/path/90982): the departments of the CSV are added or changed,
// and one the file does not list is deleted when no member and no
// department is in it.
func (s *JobService) ReplaceDepartments(ctx context.Context, r JobRequest) (*Job, error) {
	if r.ToInvite != nil {
		return nil, invalid("to_invite", "a departments' job invites no one")
	}
	return s.start(ctx, catalog.BatchReplaceParty, JobReplaceDepartments, r)
}

// start uploads r's CSV if it has one, then starts the job. It is not
// repeated after an answer that never came (the job might run twice): the
// error then matches ErrMaybeDone.
func (s *JobService) start(ctx context.Context, id catalog.ID, typ JobType, r JobRequest) (*Job, error) {
	switch {
	case (r.CSV == nil) == (r.MediaID == ""):
		return nil, invalid("csv", "give the CSV or the media_id of one uploaded, not both")
	case r.MediaID != "" && r.Filename != "":
		return nil, invalid("filename", "for a CSV to upload only")
	}
	if err := r.Callback.check(); err != nil {
		return nil, err
	}
	mediaID := r.MediaID
	if r.CSV != nil {
		m, err := s.upload(ctx, typ, r)
		if err != nil {
			return nil, err
		}
		mediaID = m.ID
	}
	body := jobRequest{MediaID: mediaID, ToInvite: r.ToInvite}
	if cb := r.Callback; cb != nil {
		body.Callback = &jobCallback{URL: cb.URL, Token: cb.Token, EncodingAESKey: cb.EncodingAESKey}
	}
	var out jobAnswer
	if err := s.p.perform(ctx, &call{id: id, body: body, out: &out}); err != nil {
		if r.CSV != nil {
			// The file is WeCom's for three days: a new start can name it.
			return nil, fmt.Errorf("wecom: %s: the CSV was uploaded as media_id %s, but the job did not start: %w", id, mediaID, err)
		}
		return nil, err
	}
	return newJob(s, out.JobID, typ, mediaID), nil
}

// upload sends r's CSV through media/upload, type file.
func (s *JobService) upload(ctx context.Context, typ JobType, r JobRequest) (Media, error) {
	name := r.Filename
	if name == "" {
		name = "users.csv"
		if typ == JobReplaceDepartments {
			name = "departments.csv"
		}
	}
	body := r.CSV
	if lengthOf(body) < 0 {
		data, err := io.ReadAll(io.LimitReader(body, catalog.MediaFileBytes+1))
		if err != nil {
			return Media{}, fmt.Errorf("wecom: reading the CSV: %w", err)
		}
		body = bytes.NewReader(data)
	}
	return (*MediaService)(s).Upload(ctx, UploadRequest{Type: MediaFile, Filename: name, Body: body})
}

type jobAnswer struct {
	JobID string `json:"jobid"`
}

func (a *jobAnswer) validate() error {
	if a.JobID == "" {
		return errors.New("no jobid")
	}
	return nil
}

// MaxJobIDLen is the most bytes of a jobid.
const MaxJobIDLen = 64

// Result reads the result of job jobID once (batch/getresult,
// document/path/90983). A job older than the corp's last five has none:
// the error is then a *JobGoneError (ErrJobGone), never retried.
func (s *JobService) Result(ctx context.Context, jobID string) (*JobResult, error) {
	if jobID == "" || len(jobID) > MaxJobIDLen {
		return nil, invalid("jobid", "%d bytes, want 1 to %d", len(jobID), MaxJobIDLen)
	}
	var out JobResult
	err := s.p.perform(ctx, &call{id: catalog.BatchGetResult, query: url.Values{"jobid": {jobID}}, out: &out})
	if errcodeOf(err) == CodeInvalidJobID {
		return nil, &JobGoneError{JobID: jobID, Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Job returns a handle on job jobID of type typ, started earlier (by
// another process, or before a restart), to wait on as on one started
// here.
func (s *JobService) Job(jobID string, typ JobType) *Job { return newJob(s, jobID, typ, "") }

// JobStatus is where a batch job stands.
type JobStatus int

// The statuses getresult answers.
const (
	JobQueued  JobStatus = 1 // 任务开始: accepted, not yet running
	JobRunning JobStatus = 2 // 任务进行中
	JobDone    JobStatus = 3 // 任务已完成: Rows holds the result
)

// JobResult is what batch/getresult answers of a job.
type JobResult struct {
	Status JobStatus `json:"status"`
	Type   JobType   `json:"type"`
	// Total is the number of rows the job runs, and Percentage how far it
	// is (100 when done).
	Total      int `json:"total"`
	Percentage int `json:"percentage"`
	// Rows are the rows' outcomes, once the job is done.
	Rows []JobRow `json:"result"`
}

// Done reports whether the job has ended.
func (r *JobResult) Done() bool { return r.Status == JobDone }

// Failed returns the rows whose errcode is not 0.
func (r *JobResult) Failed() []JobRow {
	var out []JobRow
	for _, row := range r.Rows {
		if row.ErrCode != 0 {
			out = append(out, row)
		}
	}
	return out
}

func (r *JobResult) validate() error {
	if r.Status < JobQueued || r.Status > JobDone {
		return fmt.Errorf("status %d is not 1, 2 or 3", r.Status)
	}
	return nil
}

// The bits of JobRow.Action, for a departments' job.
const (
	ActionCreate  = 1 // the department was created
	ActionRename  = 2 // its name changed
	ActionMove    = 4 // its parent changed
	ActionReorder = 8 // its order changed
)

// JobRow is the outcome of one row of a job's file: a member's (UserID) in
// a members' job, a department's (PartyID, with what was done to it in
// Action) in a departments' job.
type JobRow struct {
	UserID  string `json:"userid,omitempty"`
	PartyID int    `json:"partyid,omitempty"`
	Action  int    `json:"action,omitempty"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// Job is a batch job started in WeCom. Wait for its end by polling
// (Wait), by its batch_job_result callback handed to Done, or both: the
// callback then ends the wait at once, and polls are a fallback for a
// callback that never came. A Job is safe for concurrent use.
type Job struct {
	// ID is the jobid, Type the job's kind, and MediaID the file it runs
	// ("" for a handle made by JobService.Job).
	ID      string
	Type    JobType
	MediaID string

	s    *JobService
	once sync.Once
	done chan struct{} // closed by the first Done of this job
	ev   *callback.BatchJobEvent
}

func newJob(s *JobService, id string, typ JobType, mediaID string) *Job {
	return &Job{ID: id, Type: typ, MediaID: mediaID, s: s, done: make(chan struct{})}
}

// Done hands the job its batch_job_result callback, and reports whether
// the event was this job's (its JobId is the job's ID); a Wait going on
// ends at once. A second event of the job (WeCom retries callbacks) is
// ignored.
func (j *Job) Done(e *callback.BatchJobEvent) bool {
	if e == nil || e.BatchJob.JobID != j.ID {
		return false
	}
	j.once.Do(func() {
		j.ev = e
		close(j.done)
	})
	return true
}

// Result reads the job's result once (see JobService.Result).
func (j *Job) Result(ctx context.Context) (*JobResult, error) { return j.s.Result(ctx, j.ID) }

// Wait waits for the job to end with the default PollPolicy (see
// WaitWith).
func (j *Job) Wait(ctx context.Context) (*JobResult, error) { return j.WaitWith(ctx, PollPolicy{}) }

// waitFor is Job.WaitWith.
func (s *JobService) waitFor(ctx context.Context, job *Job, p PollPolicy) (*JobResult, error) {
	var res *JobResult
	err := p.poll(ctx, false, job.done, func() (bool, error) {
		if ev := job.event(); ev != nil && ev.BatchJob.ErrCode != 0 {
			return false, &JobError{JobID: job.ID, Type: job.Type, Code: ev.BatchJob.ErrCode, Message: ev.BatchJob.ErrMsg}
		}
		var err error
		res, err = s.Result(ctx, job.ID)
		// Not done yet, though the callback may have come: getresult
		// catches up, so poll on.
		return err == nil && res.Done(), err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// WaitWith waits for the job to end, polling batch/getresult as p says,
// and returns its result. Done ends the wait at once: the result is then
// read straight away, or, when the callback says the job failed as a
// whole, a *JobError is returned. Each wait is a select on a timer, the
// callback and ctx, whose error is returned when it ends first. A result
// that is gone (a *JobGoneError: five later jobs pushed it out) ends the
// wait; it is not asked again.
func (j *Job) WaitWith(ctx context.Context, p PollPolicy) (*JobResult, error) {
	return j.s.waitFor(ctx, j, p)
}

// event returns the job's callback, once Done handed it.
func (j *Job) event() *callback.BatchJobEvent {
	select {
	case <-j.done:
		return j.ev
	default:
		return nil
	}
}

// JobSet routes batch_job_result callbacks to the jobs waiting for them,
// by jobid: Add each job started, and hand every event to Done from the
// callback handler. The zero value is an empty set; it is safe for
// concurrent use.
type JobSet struct {
	mu   sync.Mutex
	jobs map[string]*Job
}

// Add puts jobs in the set.
func (s *JobSet) Add(jobs ...*Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = make(map[string]*Job)
	}
	for _, j := range jobs {
		if j != nil {
			s.jobs[j.ID] = j
		}
	}
}

// Done hands e to the job of the set it is about, which leaves the set,
// and reports whether there was one.
func (s *JobSet) Done(e *callback.BatchJobEvent) bool {
	if e == nil {
		return false
	}
	s.mu.Lock()
	j := s.jobs[e.BatchJob.JobID]
	delete(s.jobs, e.BatchJob.JobID)
	s.mu.Unlock()
	return j != nil && j.Done(e)
}

// Len returns the number of jobs in the set.
func (s *JobSet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}
