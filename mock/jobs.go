package mock

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
)

// The directory's asynchronous batch jobs (异步批量接口, document/path/90979):
// batch/syncuser, replaceuser and replaceparty start a job on a CSV
// uploaded with media/upload; the job ends on the Server's clock
// (Config.Now): queued (status 1) for JobQueuedFor, running (status 2,
// its percentage growing) until JobDuration, then done (status 3). At its
// end it is applied to the corp's directory, its rows' results are
// recorded, and batch_job_result is pushed: to the request's callback when
// it names one (through the transport of the corp's receiver, if
// SetCallback set one), else to the corp's receiver, if any. A job ends
// when its time comes on a timer, or at the first call to the corp after
// it (for a clock Config.Now moves by hand). Only the results of a corp's
// last JobResultsKept jobs are kept: getresult of an older (or unknown)
// jobid answers 40089.

// The life of a batch job on the Server's clock.
const (
	JobQueuedFor = time.Second
	JobDuration  = 3 * time.Second
)

// JobResultsKept is how many jobs' results WeCom keeps per corp.
const JobResultsKept = 5

// BatchJob is a batch job as a Server holds it.
type BatchJob struct {
	ID string
	// Type is sync_user, replace_user or replace_party.
	Type string
	// MediaID is the file the job runs.
	MediaID  string
	ToInvite bool
	// CallbackURL is the request's callback URL ("" for none).
	CallbackURL string
	Started     time.Time
	// Done: the job ended and was applied.
	Done bool
}

// batchJob is a job and its file.
type batchJob struct {
	BatchJob
	cols    map[string]int // column name → index
	rows    [][]string
	cb      *jobCallback
	results []jobRowJSON
	timer   *time.Timer
}

type jobCallback struct {
	URL            string `json:"url"`
	Token          string `json:"token"`
	EncodingAESKey string `json:"encodingaeskey"`
}

// jobBook is a corp's jobs: every job not yet applied, and the last
// JobResultsKept, whose results getresult answers.
type jobBook struct {
	seq    int
	jobs   map[string]*batchJob
	recent []string
}

// jobsOf returns c's jobs, made if missing.
func (c *corp) jobsOf() *jobBook {
	if c.jobs == nil {
		c.jobs = &jobBook{jobs: make(map[string]*batchJob)}
	}
	return c.jobs
}

// BatchJobs returns a corp's jobs whose results are kept, oldest first.
func (s *Server) BatchJobs(corpID string) []BatchJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.jobs == nil {
		return nil
	}
	s.settleJobsLocked(c, s.now())
	var out []BatchJob
	for _, id := range c.jobs.recent {
		out = append(out, c.jobs.jobs[id].BatchJob)
	}
	return out
}

// Jobs registers the batch job APIs.
func (handlerSets) Jobs() handlers {
	return handlers{
		catalog.BatchSyncUser:     (*corp).jobStart,
		catalog.BatchReplaceUser:  (*corp).jobStart,
		catalog.BatchReplaceParty: (*corp).jobStart,
		catalog.BatchGetResult:    (*corp).jobResult,
	}
}

// requiredColumns returns the columns a job's file must have: a members'
// file its account, a departments' file their names and ids.
func requiredColumns(party bool) []string {
	if party {
		return []string{"部门名称", "部门ID", "父部门ID"}
	}
	return []string{"帐号"}
}

// jobStart starts a job on the CSV its media_id names.
func (c *corp) jobStart(in *input) (any, *apiError) {
	var req struct {
		MediaID  string       `json:"media_id"`
		ToInvite *bool        `json:"to_invite"`
		Callback *jobCallback `json:"callback"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	typ := map[catalog.ID]string{catalog.BatchSyncUser: "sync_user", catalog.BatchReplaceUser: "replace_user",
		catalog.BatchReplaceParty: "replace_party"}[in.endpoint.ID]
	if c.media == nil || c.media.files[req.MediaID] == nil {
		return nil, errf(catalog.CodeInvalidMediaID, "invalid media_id")
	}
	if cb := req.Callback; cb != nil && cb.URL != "" {
		u, err := url.Parse(cb.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errf(catalog.CodeInvalidParam, "invalid callback url")
		}
		if _, err := callback.NewCrypto(cb.Token, cb.EncodingAESKey, c.id); err != nil {
			return nil, errf(catalog.CodeInvalidParam, "invalid callback token or encodingaeskey")
		}
	} else {
		req.Callback = nil
	}
	required := requiredColumns(typ == "replace_party")
	cols, rows, ok := readJobCSV(c.media.files[req.MediaID].data, required)
	if !ok {
		return nil, errf(catalog.CodeInvalidParam, "invalid csv file: a header row with the template's columns (%s) is required", strings.Join(required, ","))
	}
	b := c.jobsOf()
	b.seq++
	sum := sha256.Sum256([]byte(c.id + "\x00job\x00" + strconv.Itoa(b.seq)))
	j := &batchJob{BatchJob: BatchJob{ID: "jobid_" + base64.RawURLEncoding.EncodeToString(sum[:24]), Type: typ,
		MediaID: req.MediaID, ToInvite: req.ToInvite == nil || *req.ToInvite, Started: in.now},
		cols: cols, rows: rows, cb: req.Callback}
	if j.cb != nil {
		j.CallbackURL = j.cb.URL
	}
	b.jobs[j.ID] = j
	b.recent = append(b.recent, j.ID)
	if len(b.recent) > JobResultsKept {
		gone := b.recent[0]
		b.recent = b.recent[1:]
		if b.jobs[gone].Done {
			delete(b.jobs, gone)
		}
	}
	in.jobs = append(in.jobs, j)
	return struct {
		status
		JobID string `json:"jobid"`
	}{okStatus("ok"), j.ID}, nil
}

// readJobCSV reads a job's file: a header row holding the required
// columns (an optional UTF-8 BOM first), then the rows.
func readJobCSV(data []byte, required []string) (cols map[string]int, rows [][]string, ok bool) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\uFEFF"))))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	recs, err := r.ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, nil, false
	}
	cols = make(map[string]int)
	for i, name := range recs[0] {
		name = strings.TrimSpace(name)
		if name == "账号" { // the template's spelling is 帐号; both are read
			name = "帐号"
		}
		cols[name] = i
	}
	for _, name := range required {
		if _, ok := cols[name]; !ok {
			return nil, nil, false
		}
	}
	return cols, recs[1:], true
}

type jobRowJSON struct {
	UserID  string `json:"userid,omitempty"`
	Action  int    `json:"action,omitempty"`
	PartyID int    `json:"partyid,omitempty"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// jobResult answers a job's status, and its rows once it is done.
func (c *corp) jobResult(in *input) (any, *apiError) {
	id := in.query.Get("jobid")
	if c.jobs == nil || !slices.Contains(c.jobs.recent, id) {
		return nil, errf(catalog.CodeInvalidJobID, "invalid jobid: unknown, or not among the last %d jobs", JobResultsKept)
	}
	j := c.jobs.jobs[id]
	out := struct {
		status
		Status     int          `json:"status"`
		Type       string       `json:"type"`
		Total      int          `json:"total"`
		Percentage int          `json:"percentage"`
		Result     []jobRowJSON `json:"result"`
	}{status: okStatus("ok"), Type: j.Type, Total: len(j.rows), Result: []jobRowJSON{}}
	switch elapsed := in.now.Sub(j.Started); {
	case j.Done:
		out.Status, out.Percentage, out.Result = 3, 100, j.results
	case elapsed < JobQueuedFor:
		out.Status = 1
	default:
		out.Status = 2
		out.Percentage = min(99, int(100*(elapsed-JobQueuedFor)/(JobDuration-JobQueuedFor)))
	}
	return out, nil
}

// scheduleJobLocked ends j on a timer when its time comes. s.mu must be
// held.
func (s *Server) scheduleJobLocked(c *corp, j *batchJob) {
	j.timer = time.AfterFunc(JobDuration, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.settleJobsLocked(c, s.now())
	})
}

// stopJobsLocked stops the timers of every job. s.mu must be held.
func (s *Server) stopJobsLocked() {
	for _, c := range s.corps {
		if c.jobs == nil {
			continue
		}
		for _, j := range c.jobs.jobs {
			if j.timer != nil {
				j.timer.Stop()
			}
		}
	}
}

// settleJobsLocked ends c's jobs due by now, oldest first: each is applied
// to the directory and its callback pushed. s.mu must be held.
func (s *Server) settleJobsLocked(c *corp, now time.Time) {
	if c.jobs == nil {
		return
	}
	var due []*batchJob
	for _, j := range c.jobs.jobs {
		if !j.Done && !now.Before(j.Started.Add(JobDuration)) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b *batchJob) int { return a.Started.Compare(b.Started) })
	for _, j := range due {
		switch j.Type {
		case "replace_party":
			j.results = c.replaceParties(j)
		default:
			j.results = c.applyUsers(j, j.Type == "replace_user")
		}
		j.Done = true
		if !slices.Contains(c.jobs.recent, j.ID) {
			delete(c.jobs.jobs, j.ID)
		}
		s.pushJobLocked(c, j, now)
	}
}

// pushJobLocked pushes j's batch_job_result. s.mu must be held.
func (s *Server) pushJobLocked(c *corp, j *batchJob, now time.Time) {
	var b bytes.Buffer
	b.WriteString("<xml>")
	writeCDATA(&b, "ToUserName", c.id)
	writeCDATA(&b, "FromUserName", "sys")
	b.WriteString("<CreateTime>" + strconv.FormatInt(now.Unix(), 10) + "</CreateTime>")
	writeCDATA(&b, "MsgType", "event")
	writeCDATA(&b, "Event", "batch_job_result")
	b.WriteString("<BatchJob>")
	writeCDATA(&b, "JobId", j.ID)
	writeCDATA(&b, "JobType", j.Type)
	b.WriteString("<ErrCode>0</ErrCode>")
	writeCDATA(&b, "ErrMsg", "ok")
	b.WriteString("</BatchJob></xml>")

	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	t := s.push.targets[c.id]
	if j.cb != nil {
		t = s.jobTargetLocked(c.id, t, j.cb)
	}
	if t == nil {
		return
	}
	s.startPushLocked(t, &delivery{corpID: c.id, event: "batch_job_result", xml: b.Bytes()})
}

// jobTargetLocked returns the receiver a job's request names, reached
// through the transport of the corp's receiver (base, when set) or one of
// the Server's own; nil when the Server is closed. s.push.mu must be held.
func (s *Server) jobTargetLocked(corpID string, base *callbackTarget, cb *jobCallback) *callbackTarget {
	u, err := url.Parse(cb.URL)
	crypto, err2 := callback.NewCrypto(cb.Token, cb.EncodingAESKey, corpID)
	if err != nil || err2 != nil || s.push.closed { // checked when the job started
		return nil
	}
	t := &callbackTarget{url: u, crypto: crypto, toUser: corpID, timeout: CallbackTimeout,
		delays: []time.Duration{DefaultCallbackRetry1, DefaultCallbackRetry2}}
	if base != nil {
		t.client, t.timeout, t.delays = base.client, base.timeout, base.delays
		return t
	}
	if s.push.jobClient == nil {
		own := http.DefaultTransport.(*http.Transport).Clone() // closed by Close
		s.push.owned = append(s.push.owned, own)
		s.push.jobClient = &http.Client{Transport: own, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	t.client = s.push.jobClient
	return t
}

// cell returns row's value in column name, trimmed ("" when the file has
// no such column).
func cell(j *batchJob, row []string, name string) (string, bool) {
	i, ok := j.cols[name]
	if !ok || i >= len(row) {
		return "", ok
	}
	return strings.TrimSpace(row[i]), true
}

// applyUsers applies a members' file: each row adds or updates a member;
// replace makes a present column's empty cell clear the field, and deletes
// the members the file does not list. On a sync an empty cell leaves the
// field as it is.
func (c *corp) applyUsers(j *batchJob, replace bool) []jobRowJSON {
	results := make([]jobRowJSON, 0, len(j.rows))
	listed := make(map[string]bool)
	for _, row := range j.rows {
		uid, _ := cell(j, row, "帐号")
		res := jobRowJSON{UserID: uid, ErrMsg: "ok"}
		if e := c.applyUserRow(j, row, uid, replace); e != nil {
			res.ErrCode, res.ErrMsg = e.code, e.msg
		}
		if uid != "" {
			listed[strings.ToLower(uid)] = true
		}
		results = append(results, res)
	}
	if replace {
		for _, m := range c.sortedMembers() {
			if !listed[strings.ToLower(m.UserID)] {
				c.removeMember(m.UserID)
			}
		}
	}
	return results
}

// applyUserRow adds or updates the member of one row.
func (c *corp) applyUserRow(j *batchJob, row []string, uid string, replace bool) *apiError {
	if uid == "" || len(uid) > 64 {
		return errf(catalog.CodeUserIDMissing, "userid invalid")
	}
	m := Member{UserID: uid}
	old := c.member(uid)
	if old != nil {
		m = *old
	}
	for _, f := range []struct {
		col string
		to  *string
	}{{"姓名", &m.Name}, {"手机号", &m.Mobile}, {"邮箱", &m.Email}, {"职位", &m.Position},
		{"别名", &m.Alias}, {"地址", &m.Address}, {"座机", &m.Telephone}} {
		if v, ok := cell(j, row, f.col); v != "" || (ok && replace && f.col != "姓名") {
			*f.to = v
		}
	}
	if v, _ := cell(j, row, "性别"); v != "" {
		g, ok := map[string]string{"男": "1", "女": "2", "1": "1", "2": "2", "0": "0"}[v]
		if !ok {
			return errf(catalog.CodeInvalidParam, "invalid gender")
		}
		m.Gender = g
	}
	switch v, _ := cell(j, row, "禁用"); v {
	case "1":
		m.Status = 2
	case "0":
		m.Status = 1
	}
	if v, _ := cell(j, row, "所在部门"); v != "" {
		var depts []int
		for p := range strings.SplitSeq(v, ";") {
			d, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return errf(catalog.CodeInvalidParam, "invalid department")
			}
			if c.dir().depts[d] == nil {
				return errf(catalog.CodeDepartmentNotFound, "department not found")
			}
			depts = append(depts, d)
		}
		m.Departments = depts
	}
	if m.Name == "" {
		return errf(catalog.CodeInvalidParam, "name missing")
	}
	if m.Mobile != "" {
		if other, _ := c.userIDWhere(func(o *Member) bool { return o.Mobile == m.Mobile && !strings.EqualFold(o.UserID, uid) }); other != nil {
			return errf(catalog.CodeMobileExists, "mobile existed")
		}
	}
	c.putMember(m)
	return nil
}

// partyRow is a row of a departments' file, read.
type partyRow struct {
	name           string
	id, parent, at int // at: the row's index
	order          int
	orderSet       bool
}

// replaceParties applies a departments' file: each row adds or changes a
// department (parents before children, whatever the rows' order); a
// department the file does not list is deleted when it holds no member
// and no department, the root never.
func (c *corp) replaceParties(j *batchJob) []jobRowJSON {
	results := make([]jobRowJSON, len(j.rows))
	listed := map[int]bool{1: true}
	var pending []partyRow
	for i, row := range j.rows {
		name, _ := cell(j, row, "部门名称")
		rawID, _ := cell(j, row, "部门ID")
		rawParent, _ := cell(j, row, "父部门ID")
		rawOrder, _ := cell(j, row, "排序")
		id, err1 := strconv.Atoi(rawID)
		parent, err2 := strconv.Atoi(rawParent)
		order, err3 := strconv.Atoi(cmp.Or(rawOrder, "0"))
		results[i] = jobRowJSON{PartyID: id, ErrMsg: "ok"}
		switch {
		case err1 != nil || id <= 0 || err2 != nil || parent < 0 || err3 != nil || order < 0:
			results[i].PartyID, results[i].ErrCode, results[i].ErrMsg = max(id, 0), catalog.CodeInvalidParam, "invalid department id, parent id or order"
			continue
		case name == "":
			results[i].ErrCode, results[i].ErrMsg = catalog.CodeInvalidParam, "name missing"
			continue
		}
		listed[id] = true
		pending = append(pending, partyRow{name: name, id: id, parent: parent, at: i, order: order, orderSet: order > 0})
	}
	for progress := true; progress && len(pending) > 0; {
		progress = false
		var later []partyRow
		for _, r := range pending {
			if !c.placeParty(r, &results[r.at]) {
				later = append(later, r)
				continue
			}
			progress = true
		}
		pending = later
	}
	for _, r := range pending {
		results[r.at].ErrCode, results[r.at].ErrMsg = catalog.CodeDepartmentParentAbsent, "parent department not found"
	}
	for removed := true; removed; {
		removed = false
		for _, d := range c.sortedDepartments() {
			if !listed[d.ID] && c.emptyDepartment(d.ID) {
				delete(c.directory.depts, d.ID)
				delete(c.parties, d.ID)
				removed = true
			}
		}
	}
	return results
}

// placeParty adds or changes the department of r, if its parent is there;
// it reports whether it did.
func (c *corp) placeParty(r partyRow, res *jobRowJSON) bool {
	root := r.id == 1
	if !root && (c.dir().depts[r.parent] == nil || c.under(r.parent, r.id)) {
		return false
	}
	d := Department{ID: r.id, Name: r.name, ParentID: r.parent, Order: r.order}
	if root {
		d.ParentID = 0
	}
	if old := c.dir().depts[r.id]; old != nil {
		d.NameEn = old.NameEn
		if old.Name != d.Name {
			res.Action |= 2
		}
		if old.ParentID != d.ParentID {
			res.Action |= 4
		}
		if !r.orderSet {
			d.Order = old.Order
		} else if old.Order != d.Order {
			res.Action |= 8
		}
	} else {
		res.Action = 1
	}
	c.putDepartment(d)
	return true
}

// emptyDepartment reports whether department id holds no member and no
// department.
func (c *corp) emptyDepartment(id int) bool {
	for _, d := range c.directory.depts {
		if d.ParentID == id {
			return false
		}
	}
	for _, m := range c.directory.members {
		if slices.Contains(m.Departments, id) {
			return false
		}
	}
	return true
}
