package wecom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// The receiver's secrets in these tests: a token and a 43-character
// EncodingAESKey, as WeCom's console makes them.
const (
	jobToken = "jobCallbackToken"
	jobKey   = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
)

// TestJobsWire: the requests are WeCom's documented bodies, and its
// documented answers decode (document/path/90980 to 90983).
func TestJobsWire(t *testing.T) {
	t.Parallel()
	mt := tokenTransport()
	var bodies []string
	record := func(answer string) httpmock.Responder {
		return func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			bodies = append(bodies, string(b))
			return httpmock.NewStringResponse(http.StatusOK, answer), nil
		}
	}
	for _, id := range []catalog.ID{catalog.BatchSyncUser, catalog.BatchReplaceUser, catalog.BatchReplaceParty} {
		mt.RegisterResponder(http.MethodPost, testBase+id.Path(), record(`{"errcode":0,"errmsg":"ok","jobid":"xxxxx"}`))
	}
	c, err := wecom.New(testCorp, testSecret, wecom.WithBaseURL(testBase), wecom.WithTransport(mt))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cb := &wecom.JobCallback{URL: "https://receiver.example/cb", Token: jobToken, EncodingAESKey: jobKey}
	r := wecom.JobRequest{MediaID: "xxxxxx", ToInvite: wecom.Ptr(true), Callback: cb}
	for _, start := range []func(context.Context, wecom.JobRequest) (*wecom.Job, error){c.Jobs.SyncUsers, c.Jobs.ReplaceUsers} {
		job, err := start(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if job.ID != "xxxxx" || job.MediaID != "xxxxxx" {
			t.Errorf("job %+v, want jobid xxxxx on media xxxxxx", job)
		}
	}
	job, err := c.Jobs.ReplaceDepartments(ctx, wecom.JobRequest{MediaID: "xxxxxx", Callback: cb})
	if err != nil || job.Type != wecom.JobReplaceDepartments {
		t.Fatalf("ReplaceDepartments: %v, %+v", err, job)
	}
	wantUsers := `{"media_id":"xxxxxx","to_invite":true,"callback":{"url":"https://receiver.example/cb","token":"jobCallbackToken","encodingaeskey":"` + jobKey + `"}}`
	wantParty := `{"media_id":"xxxxxx","callback":{"url":"https://receiver.example/cb","token":"jobCallbackToken","encodingaeskey":"` + jobKey + `"}}`
	for i, want := range []string{wantUsers, wantUsers, wantParty} {
		if i >= len(bodies) || !jsonEqual(t, bodies[i], want) {
			t.Errorf("request %d: %v, want %s", i, bodies, want)
		}
	}

	// getresult, as the page shows it for each kind.
	for _, tc := range []struct {
		answer string
		want   wecom.JobResult
	}{
		{`{"errcode":0,"errmsg":"ok","status":1,"type":"replace_user","total":3,"percentage":33,"result":[{},{}]}`,
			wecom.JobResult{Status: wecom.JobQueued, Type: wecom.JobReplaceUsers, Total: 3, Percentage: 33, Rows: []wecom.JobRow{{}, {}}}},
		{`{"errcode":0,"errmsg":"ok","status":3,"type":"sync_user","total":2,"percentage":100,"result":[{"userid":"lisi","errcode":0,"errmsg":"ok"},{"userid":"zhangsan","errcode":0,"errmsg":"ok"}]}`,
			wecom.JobResult{Status: wecom.JobDone, Type: wecom.JobSyncUsers, Total: 2, Percentage: 100,
				Rows: []wecom.JobRow{{UserID: "lisi", ErrMsg: "ok"}, {UserID: "zhangsan", ErrMsg: "ok"}}}},
		{`{"errcode":0,"errmsg":"ok","status":3,"type":"replace_party","total":2,"percentage":100,"result":[{"action":1,"partyid":1,"errcode":0,"errmsg":"ok"},{"action":4,"partyid":2,"errcode":0,"errmsg":"ok"}]}`,
			wecom.JobResult{Status: wecom.JobDone, Type: wecom.JobReplaceDepartments, Total: 2, Percentage: 100,
				Rows: []wecom.JobRow{{Action: wecom.ActionCreate, PartyID: 1, ErrMsg: "ok"}, {Action: wecom.ActionMove, PartyID: 2, ErrMsg: "ok"}}}},
	} {
		var query string
		mt.RegisterResponder(http.MethodGet, testBase+catalog.BatchGetResult.Path(), func(r *http.Request) (*http.Response, error) {
			query = r.URL.Query().Get("jobid")
			return httpmock.NewStringResponse(http.StatusOK, tc.answer), nil
		})
		got, err := c.Jobs.Result(ctx, "xxxxx")
		if err != nil {
			t.Fatal(err)
		}
		if query != "xxxxx" {
			t.Errorf("jobid %q sent, want xxxxx", query)
		}
		if fmt.Sprint(*got) != fmt.Sprint(tc.want) {
			t.Errorf("result %+v, want %+v", *got, tc.want)
		}
		if got.Done() != (tc.want.Status == wecom.JobDone) {
			t.Errorf("Done() = %t for status %d", got.Done(), got.Status)
		}
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return fmt.Sprint(va) == fmt.Sprint(vb)
}

// TestSyncUsersPolled: the CSV is uploaded first and the job started with
// its media_id; Wait polls it queued, running and done on the mock's
// clock (a synctest bubble: no real time passes), and the directory holds
// the file's members.
func TestSyncUsersPolled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		srv.AddMembers(testCorp, mock.Member{UserID: "lisi", Name: "Li Si", Departments: []int{2}, Mobile: "+86 13800000002"})
		c := setup(t, on(srv))
		file, err := wecom.UsersCSV(
			wecom.UserRow{Name: "张三", UserID: "zhangsan", Mobile: "+86 13800000001", Departments: []int{1, 2}, Gender: wecom.GenderMale},
			wecom.UserRow{Name: "Li Si", UserID: "lisi", Position: "engineer", Departments: []int{2}},
			wecom.UserRow{Name: "Nobody", UserID: "nobody", Departments: []int{99}},
		)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		job, err := c.Jobs.SyncUsers(ctx, wecom.JobRequest{CSV: bytes.NewReader(file)})
		if err != nil {
			t.Fatal(err)
		}
		jobs := srv.BatchJobs(testCorp)
		if len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].MediaID != job.MediaID || jobs[0].Type != "sync_user" {
			t.Fatalf("mock's jobs %+v, want job %s on media %s", jobs, job.ID, job.MediaID)
		}
		name, data, ok := srv.MediaData(testCorp, job.MediaID)
		if !ok || name != "users.csv" || !bytes.Equal(data, file) {
			t.Fatalf("media %s: %q, %t: want the CSV uploaded as users.csv", job.MediaID, name, ok)
		}
		res, err := job.Result(ctx)
		if err != nil || res.Status != wecom.JobQueued || len(res.Rows) != 0 {
			t.Fatalf("at once: %+v, %v: want queued", res, err)
		}
		time.Sleep(mock.JobQueuedFor + time.Second)
		if res, err = job.Result(ctx); err != nil || res.Status != wecom.JobRunning || res.Percentage <= 0 || res.Percentage >= 100 {
			t.Fatalf("after %v: %+v, %v: want running", mock.JobQueuedFor+time.Second, res, err)
		}
		res, err = job.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < mock.JobDuration {
			t.Errorf("Wait returned after %v of the bubble's clock, before the job's %v", took, mock.JobDuration)
		}
		want := []wecom.JobRow{{UserID: "zhangsan", ErrMsg: "ok"}, {UserID: "lisi", ErrMsg: "ok"},
			{UserID: "nobody", ErrCode: wecom.CodeDepartmentNotFound, ErrMsg: "department not found"}}
		if !res.Done() || res.Total != 3 || res.Percentage != 100 || !slices.Equal(res.Rows, want) {
			t.Errorf("result %+v, want done with rows %+v", res, want)
		}
		if f := res.Failed(); len(f) != 1 || f[0].UserID != "nobody" {
			t.Errorf("Failed() = %+v, want nobody's row", f)
		}
		got := srv.Members(testCorp)
		if len(got) != 2 || got[0].UserID != "lisi" || got[0].Position != "engineer" || got[0].Mobile != "+86 13800000002" ||
			got[1].UserID != "zhangsan" || got[1].Gender != "1" || !slices.Equal(got[1].Departments, []int{1, 2}) {
			t.Errorf("members %+v: want lisi updated (mobile kept) and zhangsan added", got)
		}
	})
}

// TestReplaceJobs: replaceuser leaves exactly the file's members;
// replaceparty the file's departments (an empty one unlisted is deleted,
// one holding a member stays), with the actions done to each.
func TestReplaceJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		srv.AddDepartments(testCorp, mock.Department{ID: 2, Name: "R&D", ParentID: 1}, mock.Department{ID: 3, Name: "Sales", ParentID: 1},
			mock.Department{ID: 4, Name: "Empty", ParentID: 1})
		srv.AddMembers(testCorp, mock.Member{UserID: "old1", Name: "Old", Departments: []int{2}}, mock.Member{UserID: "keep", Name: "Keep", Departments: []int{3}})
		c := setup(t, on(srv))
		ctx := context.Background()

		users, err := wecom.UsersCSV(wecom.UserRow{Name: "Keep", UserID: "keep", Departments: []int{2}},
			wecom.UserRow{Name: "New", UserID: "new", Departments: []int{2}, Disabled: true})
		if err != nil {
			t.Fatal(err)
		}
		job, err := c.Jobs.ReplaceUsers(ctx, wecom.JobRequest{CSV: bytes.NewReader(users), ToInvite: wecom.Ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := job.Wait(ctx); err != nil || !res.Done() || len(res.Failed()) != 0 || res.Type != wecom.JobReplaceUsers {
			t.Fatalf("replaceuser: %+v, %v", res, err)
		}
		var ids []string
		for _, m := range srv.Members(testCorp) {
			ids = append(ids, fmt.Sprintf("%s%v/%d", m.UserID, m.Departments, m.Status))
		}
		if want := []string{"keep[2]/1", "new[2]/2"}; !slices.Equal(ids, want) {
			t.Errorf("members %v, want %v", ids, want)
		}

		parties, err := wecom.DepartmentsCSV(
			wecom.DepartmentRow{Name: "Team", ID: 5, ParentID: 2, Order: 3}, // a new department under one renamed below
			wecom.DepartmentRow{Name: "Research", ID: 2, ParentID: 1},
			wecom.DepartmentRow{Name: "Lost", ID: 6, ParentID: 42},
		)
		if err != nil {
			t.Fatal(err)
		}
		job, err = c.Jobs.ReplaceDepartments(ctx, wecom.JobRequest{CSV: bytes.NewReader(parties)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := job.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []wecom.JobRow{{PartyID: 5, Action: wecom.ActionCreate, ErrMsg: "ok"}, {PartyID: 2, Action: wecom.ActionRename, ErrMsg: "ok"},
			{PartyID: 6, ErrCode: wecom.CodeDepartmentParentAbsent, ErrMsg: "parent department not found"}}
		if !slices.Equal(res.Rows, want) {
			t.Errorf("rows %+v, want %+v", res.Rows, want)
		}
		var depts []string
		for _, d := range srv.Departments(testCorp) {
			depts = append(depts, fmt.Sprintf("%d:%s<%d", d.ID, d.Name, d.ParentID))
		}
		// 3 and 4 are not listed: 4 is empty and goes, 3 held keep once but
		// keep moved to 2, so it goes too.
		if want := []string{"1:" + testCorp + "<0", "2:Research<1", "5:Team<2"}; !slices.Equal(depts, want) {
			t.Errorf("departments %v, want %v", depts, want)
		}
		if name, _, _ := srv.MediaData(testCorp, job.MediaID); name != "departments.csv" {
			t.Errorf("the departments' CSV was uploaded as %q", name)
		}
	})
}

// memoryTransport serves every request with h, in process (in a synctest
// bubble, where a real connection would not let the clock move).
type memoryTransport struct{ h http.Handler }

func (m memoryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestJobCallback: the mock pushes batch_job_result when the job ends; the
// handler hands it to a JobSet, which ends the job's Wait at once: with
// polls an hour apart, the one getresult is the one the callback started.
// The push goes to the request's callback, under its token and key.
func TestJobCallback(t *testing.T) {
	for _, own := range []bool{false, true} {
		name := "the app's receiver"
		if own {
			name = "the request's callback"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newMock(t, mock.Config{})
				t.Cleanup(srv.Close)
				c := setup(t, on(srv))
				ctx := context.Background()
				// With its own callback, the request's token and key are
				// the only ones the receiver takes.
				token, key := jobToken, jobKey
				appToken, appKey := token, key
				if own {
					appToken, appKey = "appToken", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
				}
				crypto, err := callback.NewCrypto(token, key, testCorp)
				if err != nil {
					t.Fatal(err)
				}
				h, err := callback.NewHandler(crypto)
				if err != nil {
					t.Fatal(err)
				}
				var set wecom.JobSet
				var events atomic.Int32
				callback.Handle(h, func(_ context.Context, e *callback.BatchJobEvent) error {
					events.Add(1)
					if !set.Done(e) {
						t.Errorf("event of job %s, which the set does not hold", e.BatchJob.JobID)
					}
					return nil
				})
				if err := srv.SetCallback(testCorp, mock.CallbackConfig{URL: "https://app.example/callback", Token: appToken,
					EncodingAESKey: appKey, Transport: memoryTransport{h}}); err != nil {
					t.Fatal(err)
				}
				mediaID := srv.AddMedia(testCorp, "users.csv", "text/csv", mustCSV(t, wecom.UserRow{Name: "Ann", UserID: "ann"}))
				r := wecom.JobRequest{MediaID: mediaID}
				if own {
					r.Callback = &wecom.JobCallback{URL: "https://job.example/callback", Token: token, EncodingAESKey: key}
				}
				job, err := c.Jobs.SyncUsers(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				set.Add(job)
				start := time.Now()
				res, err := job.WaitWith(ctx, wecom.PollPolicy{Interval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > mock.JobDuration {
					t.Errorf("Wait took %v of the bubble's clock: the callback did not end it at the job's end (%v)", took, mock.JobDuration)
				}
				if !res.Done() || len(res.Rows) != 1 || res.Rows[0].UserID != "ann" {
					t.Errorf("result %+v, want ann's row, done", res)
				}
				if err := srv.WaitCallbacks(ctx); err != nil {
					t.Fatal(err)
				}
				if n := srv.Stats().Calls[catalog.BatchGetResult.Path()]; n != 1 {
					t.Errorf("%d getresult calls, want the one after the callback", n)
				}
				d := srv.CallbackDeliveries()
				if events.Load() != 1 || len(d) != 1 || !d[0].Delivered || d[0].Event != "batch_job_result" {
					t.Errorf("%d events handled, deliveries %+v: want one batch_job_result", events.Load(), d)
				}
				if set.Len() != 0 {
					t.Errorf("the set still holds %d jobs", set.Len())
				}
			})
		})
	}
}

// mustCSV is UsersCSV of rows.
func mustCSV(t *testing.T, rows ...wecom.UserRow) []byte {
	t.Helper()
	b, err := wecom.UsersCSV(rows...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJobFailedCallback: a batch_job_result whose ErrCode is not 0 ends
// the wait with a *JobError, without asking getresult.
func TestJobFailedCallback(t *testing.T) {
	t.Parallel()
	c := setup(t, wecom.WithTransport(tokenTransport()))
	job := c.Jobs.Job("jobid_x", wecom.JobReplaceUsers)
	e := &callback.BatchJobEvent{}
	e.BatchJob.JobID, e.BatchJob.JobType, e.BatchJob.ErrCode, e.BatchJob.ErrMsg = "jobid_y", "replace_user", 0, "ok"
	if job.Done(e) {
		t.Error("Done took another job's event")
	}
	e.BatchJob.JobID, e.BatchJob.ErrCode, e.BatchJob.ErrMsg = "jobid_x", 60123, "too many members to delete"
	if !job.Done(e) {
		t.Fatal("Done refused the job's event")
	}
	_, err := job.WaitWith(context.Background(), wecom.PollPolicy{Interval: time.Hour})
	var je *wecom.JobError
	if !errors.As(err, &je) || je.Code != 60123 || je.JobID != "jobid_x" || je.Type != wecom.JobReplaceUsers {
		t.Fatalf("err = %v, want the job's *JobError", err)
	}
}

// TestJobResultGone: WeCom keeps the last five jobs' results: the sixth
// job pushes the first's out, and its getresult (40089) is a *JobGoneError
// that says so, asked once, not retried; Wait ends on it.
func TestJobResultGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv))
		ctx := context.Background()
		mediaID := srv.AddMedia(testCorp, "users.csv", "text/csv", mustCSV(t, wecom.UserRow{Name: "Ann", UserID: "ann"}))
		var jobs []*wecom.Job
		for range mock.JobResultsKept + 1 {
			job, err := c.Jobs.SyncUsers(ctx, wecom.JobRequest{MediaID: mediaID})
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job)
		}
		srv.ResetStats()
		for i, job := range jobs {
			_, err := job.Wait(ctx)
			if i > 0 {
				if err != nil {
					t.Errorf("job %d: %v", i+1, err)
				}
				continue
			}
			var gone *wecom.JobGoneError
			var ae *wecom.APIError
			if !errors.As(err, &gone) || gone.JobID != job.ID || !errors.Is(err, wecom.ErrJobGone) ||
				!errors.As(err, &ae) || ae.Code != wecom.CodeInvalidJobID {
				t.Fatalf("first job: err = %v, want a *JobGoneError of 40089", err)
			}
			if !strings.Contains(err.Error(), "result is gone") || !strings.Contains(err.Error(), "last five") {
				t.Errorf("err %q does not say the result is gone", err)
			}
			if n := srv.Stats().Calls[catalog.BatchGetResult.Path()]; n != 1 {
				t.Errorf("%d getresult calls for the gone job, want 1", n)
			}
		}
		if got := srv.BatchJobs(testCorp); len(got) != mock.JobResultsKept || got[0].ID != jobs[1].ID {
			t.Errorf("mock keeps %d jobs, want the last %d", len(got), mock.JobResultsKept)
		}
	})
}

// TestJobRequestChecks: what WeCom would refuse is refused before a
// request, and the callback's secrets are in no error and no print.
func TestJobRequestChecks(t *testing.T) {
	t.Parallel()
	c := setup(t, wecom.WithTransport(tokenTransport()))
	ctx := context.Background()
	cb := wecom.JobCallback{URL: "https://receiver.example/cb", Token: jobToken, EncodingAESKey: jobKey[:40]}
	for _, r := range []wecom.JobRequest{
		{},
		{MediaID: "m", CSV: strings.NewReader("a")},
		{MediaID: "m", Filename: "x.csv"},
		{MediaID: "m", Callback: &cb},
		{MediaID: "m", Callback: &wecom.JobCallback{URL: "ftp://x", Token: jobToken, EncodingAESKey: jobKey}},
	} {
		_, err := c.Jobs.SyncUsers(ctx, r)
		if !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", r, err)
		}
		if err != nil && (strings.Contains(err.Error(), jobToken) || strings.Contains(err.Error(), jobKey[:40])) {
			t.Errorf("error %q holds the callback's secret", err)
		}
	}
	if _, err := c.Jobs.ReplaceDepartments(ctx, wecom.JobRequest{MediaID: "m", ToInvite: wecom.Ptr(true)}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("replaceparty with to_invite: err = %v", err)
	}
	if _, err := c.Jobs.Result(ctx, ""); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("an empty jobid: err = %v", err)
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(f, cb); strings.Contains(s, jobToken) || strings.Contains(s, jobKey[:40]) || !strings.Contains(s, cb.URL) {
			t.Errorf("%s of a JobCallback: %q", f, s)
		}
		if s := fmt.Sprintf(f, wecom.JobRequest{Callback: &cb}); strings.Contains(s, jobToken) {
			t.Errorf("%s of a JobRequest: %q", f, s)
		}
	}
}

// TestJobStartRefused: the mock refuses a job on a media_id it does not
// hold (40007) and on a file without the template's header (40058), as
// the job's own start, not as a failed job.
func TestJobStartRefused(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	ctx := context.Background()
	var ae *wecom.APIError
	if _, err := c.Jobs.SyncUsers(ctx, wecom.JobRequest{MediaID: "3a00000404media"}); !errors.As(err, &ae) || ae.Code != catalog.CodeInvalidMediaID {
		t.Errorf("unknown media_id: err = %v, want 40007", err)
	}
	_, err := c.Jobs.ReplaceDepartments(ctx, wecom.JobRequest{CSV: bytes.NewReader(mustCSV(t, wecom.UserRow{Name: "Ann", UserID: "ann"}))})
	if !errors.As(err, &ae) || ae.Code != catalog.CodeInvalidParam {
		t.Errorf("a members' file to replaceparty: err = %v, want 40058", err)
	}
	if jobs := srv.BatchJobs(testCorp); len(jobs) != 0 {
		t.Errorf("jobs %+v started, want none", jobs)
	}
}

// TestJobCallbackWithoutReceiver: a corp with no receiver of its own still
// gets the callback its job's request names, over the network; on a clock
// moved by hand, the job ends at the first call after its time.
func TestJobCallbackWithoutReceiver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now() // the receiver checks a push's timestamp against its own clock
	srv := newMock(t, mock.Config{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	t.Cleanup(srv.Close)
	c := setup(t, on(srv))
	ctx := context.Background()
	crypto, err := callback.NewCrypto(jobToken, jobKey, testCorp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	var set wecom.JobSet
	callback.Handle(h, func(_ context.Context, e *callback.BatchJobEvent) error {
		set.Done(e)
		return nil
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	mediaID := srv.AddMedia(testCorp, "users.csv", "text/csv", mustCSV(t, wecom.UserRow{Name: "Ann", UserID: "ann"}))
	job, err := c.Jobs.SyncUsers(ctx, wecom.JobRequest{MediaID: mediaID,
		Callback: &wecom.JobCallback{URL: hs.URL + "/jobs", Token: jobToken, EncodingAESKey: jobKey}})
	if err != nil {
		t.Fatal(err)
	}
	set.Add(job)
	if res, err := job.Result(ctx); err != nil || res.Done() {
		t.Fatalf("before its time: %+v, %v", res, err)
	}
	mu.Lock()
	now = now.Add(mock.JobDuration)
	mu.Unlock()
	res, err := job.Result(ctx) // the first call after its time ends it
	if err != nil || !res.Done() {
		t.Fatalf("after its time: %+v, %v", res, err)
	}
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	if d := srv.CallbackDeliveries(); len(d) != 1 || !d[0].Delivered || set.Len() != 0 {
		for _, a := range d {
			t.Errorf("attempt %d: HTTP %d, %s", a.Attempt, a.Status, a.Err)
		}
		t.Errorf("%d attempts, %d jobs left in the set: want the job's callback delivered at once", len(d), set.Len())
	}
}
