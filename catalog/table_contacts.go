package catalog

import "net/http"

// The directory (通讯录) endpoints: its members and departments, read and
// written, and the ids that name a member elsewhere.
const (
	UserGet              ID = "/cgi-bin/user/get"
	UserListID           ID = "/cgi-bin/user/list_id"
	UserList             ID = "/cgi-bin/user/list"
	UserSimpleList       ID = "/cgi-bin/user/simplelist"
	UserIDByMobile       ID = "/cgi-bin/user/getuserid"
	UserIDByEmail        ID = "/cgi-bin/user/get_userid_by_email"
	UserToOpenID         ID = "/cgi-bin/user/convert_to_openid"
	OpenIDToUser         ID = "/cgi-bin/user/convert_to_userid"
	UserCreate           ID = "/cgi-bin/user/create"
	UserUpdate           ID = "/cgi-bin/user/update"
	UserDelete           ID = "/cgi-bin/user/delete"
	UserBatchDelete      ID = "/cgi-bin/user/batchdelete"
	BatchInvite          ID = "/cgi-bin/batch/invite"
	DepartmentSimpleList ID = "/cgi-bin/department/simplelist"
	DepartmentGet        ID = "/cgi-bin/department/get"
	DepartmentCreate     ID = "/cgi-bin/department/create"
	DepartmentUpdate     ID = "/cgi-bin/department/update"
	DepartmentDelete     ID = "/cgi-bin/department/delete"

	// The asynchronous batch jobs (异步批量接口, document/path/90979): a CSV
	// uploaded through media/upload (type file), then a job started with
	// its media_id, whose result batch/getresult answers.
	BatchSyncUser     ID = "/cgi-bin/batch/syncuser"
	BatchReplaceUser  ID = "/cgi-bin/batch/replaceuser"
	BatchReplaceParty ID = "/cgi-bin/batch/replaceparty"
	BatchGetResult    ID = "/cgi-bin/batch/getresult"
)

// contactEndpoints returns the directory's rows. WeCom documents no limit
// of the directory's own (document/path/90454 lists none): the base ones
// hold. A read or an update sent twice does what it did once, so they are
// safe to repeat; a create, a delete or an invitation sent again after a
// lost answer fails on what the first did (60102, 60111) or invites twice,
// so those are not.
func contactEndpoints() []Endpoint {
	row := func(id ID, method string, doc int, repeatable bool, sample string) Endpoint {
		return Endpoint{ID: id, Method: method, Doc: doc, Repeatable: repeatable, Sample: sample, Rules: base()}
	}
	return []Endpoint{
		row(UserGet, http.MethodGet, 90196, true, "userid=zhangsan"),
		row(UserListID, http.MethodPost, 96067, true, `{"cursor":"","limit":10000}`),
		// Closed to contact-sync secrets called from IPs added after
		// 2022-08-15 (48009, document/path/90344): user/list_id is the way.
		row(UserList, http.MethodGet, 90201, true, "department_id=1"),
		row(UserSimpleList, http.MethodGet, 90200, true, "department_id=1"),
		row(UserIDByMobile, http.MethodPost, 95402, true, `{"mobile":"13430388888"}`),
		row(UserIDByEmail, http.MethodPost, 95895, true, `{"email":"zhangsan@gzdev.com","email_type":1}`),
		row(UserToOpenID, http.MethodPost, 90202, true, `{"userid":"zhangsan"}`),
		row(OpenIDToUser, http.MethodPost, 90202, true, `{"openid":"oDjGHs-1yCnGrRovBj2yHij5JAAA"}`),
		row(UserCreate, http.MethodPost, 90195, false, `{"userid":"zhangsan","name":"张三","department":[1],"mobile":"+86 13800000000"}`),
		row(UserUpdate, http.MethodPost, 90197, true, `{"userid":"zhangsan","name":"李四"}`),
		row(UserDelete, http.MethodGet, 90198, false, "userid=zhangsan"),
		row(UserBatchDelete, http.MethodPost, 90199, false, `{"useridlist":["zhangsan","lisi"]}`),
		row(BatchInvite, http.MethodPost, 90975, false, `{"user":["UserID1","UserID2"],"party":[1],"tag":[1]}`),
		row(DepartmentSimpleList, http.MethodGet, 95350, true, "id=1"),
		row(DepartmentGet, http.MethodGet, 95351, true, "id=1"),
		row(DepartmentCreate, http.MethodPost, 90205, false, `{"name":"广州研发中心","parentid":1,"order":1}`),
		row(DepartmentUpdate, http.MethodPost, 90206, true, `{"id":2,"name":"广州研发中心"}`),
		row(DepartmentDelete, http.MethodGet, 90207, false, "id=2"),
		// Starting a job twice runs it twice: a second syncuser or
		// replaceuser applies the file again (and invites again), a second
		// replace job races the first, and each takes one of the five
		// results WeCom keeps, pushing out an older job's. Not repeatable.
		row(BatchSyncUser, http.MethodPost, 90980, false,
			`{"media_id":"xxxxxx","to_invite":true,"callback":{"url":"xxx","token":"xxx","encodingaeskey":"xxx"}}`),
		row(BatchReplaceUser, http.MethodPost, 90981, false,
			`{"media_id":"xxxxxx","to_invite":true,"callback":{"url":"xxx","token":"xxx","encodingaeskey":"xxx"}}`),
		row(BatchReplaceParty, http.MethodPost, 90982, false,
			`{"media_id":"xxxxxx","callback":{"url":"xxx","token":"xxx","encodingaeskey":"xxx"}}`),
		// Reading a job's result changes nothing: repeatable.
		row(BatchGetResult, http.MethodGet, 90983, true, "jobid=JOBID"),
	}
}
