package mock

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// Directory registers the directory's member and department APIs.
func (handlerSets) Directory() handlers {
	return handlers{
		catalog.UserGet:              (*corp).userGet,
		catalog.UserListID:           (*corp).userListID,
		catalog.UserList:             (*corp).userList,
		catalog.UserSimpleList:       (*corp).userList,
		catalog.UserIDByMobile:       (*corp).userIDByMobile,
		catalog.UserIDByEmail:        (*corp).userIDByEmail,
		catalog.UserToOpenID:         (*corp).userToOpenID,
		catalog.OpenIDToUser:         (*corp).openIDToUser,
		catalog.UserCreate:           (*corp).userCreate,
		catalog.UserUpdate:           (*corp).userUpdate,
		catalog.UserDelete:           (*corp).userDelete,
		catalog.UserBatchDelete:      (*corp).userBatchDelete,
		catalog.BatchInvite:          (*corp).batchInvite,
		catalog.DepartmentSimpleList: (*corp).departmentSimpleList,
		catalog.DepartmentGet:        (*corp).departmentGet,
		catalog.DepartmentCreate:     (*corp).departmentCreate,
		catalog.DepartmentUpdate:     (*corp).departmentUpdate,
		catalog.DepartmentDelete:     (*corp).departmentDelete,
	}
}

// memberJSON is a member as user/get answers it; the fields WeCom may
// withhold are pointers, left out when withheld.
type memberJSON struct {
	UserID         string  `json:"userid"`
	Name           string  `json:"name"`
	Department     []int   `json:"department"`
	Order          []int   `json:"order"`
	Position       string  `json:"position"`
	Mobile         *string `json:"mobile,omitempty"`
	Gender         *string `json:"gender,omitempty"`
	Email          *string `json:"email,omitempty"`
	BizMail        *string `json:"biz_mail,omitempty"`
	IsLeaderInDept []int   `json:"is_leader_in_dept"`
	Avatar         *string `json:"avatar,omitempty"`
	ThumbAvatar    *string `json:"thumb_avatar,omitempty"`
	Telephone      string  `json:"telephone"`
	Alias          string  `json:"alias"`
	Address        *string `json:"address,omitempty"`
	MainDepartment int     `json:"main_department"`
	Status         int     `json:"status"`
}

func (d *directory) json(m *Member) memberJSON {
	j := memberJSON{UserID: m.UserID, Name: m.Name, Department: m.Departments, Order: make([]int, len(m.Departments)),
		Position: m.Position, IsLeaderInDept: make([]int, len(m.Departments)), Telephone: m.Telephone, Alias: m.Alias,
		MainDepartment: m.Departments[0], Status: m.Status}
	if !d.withheld {
		j.Mobile, j.Gender, j.Email, j.BizMail = &m.Mobile, &m.Gender, &m.Email, &m.BizMail
		j.Avatar, j.ThumbAvatar, j.Address = &m.Avatar, &m.Avatar, &m.Address
	}
	return j
}

func (c *corp) userGet(in *input) (any, *apiError) {
	m := c.member(in.query.Get("userid"))
	if m == nil {
		return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
	}
	return struct {
		status
		memberJSON
	}{okStatus("ok"), c.directory.json(m)}, nil
}

type deptUserJSON struct {
	UserID     string `json:"userid"`
	Department int    `json:"department"`
}

// userListID answers a page of the (member, department) rows, a member's
// rows adjacent, so that a page may end between two rows of one member.
func (c *corp) userListID(in *input) (any, *apiError) {
	var req struct {
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.Limit < 0 || req.Limit > 10000 {
		return nil, errf(catalog.CodeInvalidParam, "invalid limit")
	}
	limit := cmp.Or(req.Limit, 10000)
	var rows []deptUserJSON
	for _, m := range c.sortedMembers() {
		for _, d := range m.Departments {
			rows = append(rows, deptUserJSON{UserID: m.UserID, Department: d})
		}
	}
	off, ok := readCursor("list_id", req.Cursor)
	if !ok || off > len(rows) {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	end := min(off+limit, len(rows))
	out := struct {
		status
		NextCursor string         `json:"next_cursor"`
		DeptUser   []deptUserJSON `json:"dept_user"`
	}{status: okStatus("ok"), DeptUser: append([]deptUserJSON{}, rows[off:end]...)}
	if end < len(rows) {
		out.NextCursor = makeCursor("list_id", end)
	}
	return out, nil
}

// userList answers the members of a department (user/list and
// user/simplelist: the details come with both here), or 48009 once
// CloseContactLists closed them.
func (c *corp) userList(in *input) (any, *apiError) {
	if c.dir().listsClosed {
		return nil, errf(catalog.CodeContactAPIClosed, "api forbidden for the contact sync secret from this ip, hint: use user/list_id")
	}
	id, err := strconv.Atoi(in.query.Get("department_id"))
	if err != nil || c.directory.depts[id] == nil {
		return nil, errf(catalog.CodeDepartmentNotFound, "department not found")
	}
	list := []memberJSON{}
	for _, m := range c.sortedMembers() {
		if slices.Contains(m.Departments, id) {
			list = append(list, c.directory.json(m))
		}
	}
	return struct {
		status
		UserList []memberJSON `json:"userlist"`
	}{okStatus("ok"), list}, nil
}

type userIDAnswer struct {
	status
	UserID string `json:"userid"`
}

func (c *corp) userIDByMobile(in *input) (any, *apiError) {
	var req struct {
		Mobile string `json:"mobile"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	return c.userIDWhere(func(m *Member) bool { return req.Mobile != "" && m.Mobile == req.Mobile })
}

func (c *corp) userIDByEmail(in *input) (any, *apiError) {
	var req struct {
		Email     string `json:"email"`
		EmailType int    `json:"email_type"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	return c.userIDWhere(func(m *Member) bool {
		addr := m.BizMail
		if req.EmailType == 2 {
			addr = m.Email
		}
		return req.Email != "" && strings.EqualFold(addr, req.Email)
	})
}

// userIDWhere answers the userid of the first member match finds, or 46004.
func (c *corp) userIDWhere(match func(*Member) bool) (any, *apiError) {
	if m := c.findMember(match); m != nil {
		return userIDAnswer{status: okStatus("ok"), UserID: m.UserID}, nil
	}
	return nil, errf(catalog.CodeUserNotFound, "user no exist")
}

// findMember returns the first member, by userid, that match finds, or nil.
func (c *corp) findMember(match func(*Member) bool) *Member {
	for _, m := range c.sortedMembers() {
		if match(m) {
			return m
		}
	}
	return nil
}

func (c *corp) userToOpenID(in *input) (any, *apiError) {
	var req struct {
		UserID string `json:"userid"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	m := c.member(req.UserID)
	if m == nil {
		return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
	}
	return struct {
		status
		OpenID string `json:"openid"`
	}{okStatus("ok"), openIDOf(c.id, m.UserID)}, nil
}

func (c *corp) openIDToUser(in *input) (any, *apiError) {
	var req struct {
		OpenID string `json:"openid"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	return c.userIDWhere(func(m *Member) bool { return openIDOf(c.id, m.UserID) == req.OpenID })
}

// userRequest is user/create's and user/update's body: on an update, a
// field left out (nil) is left as it is.
type userRequest struct {
	UserID     string  `json:"userid"`
	Name       *string `json:"name"`
	Mobile     *string `json:"mobile"`
	Department []int   `json:"department"`
	Position   *string `json:"position"`
	Gender     *string `json:"gender"`
	Email      *string `json:"email"`
	BizMail    *string `json:"biz_mail"`
	Alias      *string `json:"alias"`
	Telephone  *string `json:"telephone"`
	Address    *string `json:"address"`
	Enable     *int    `json:"enable"`
}

// apply writes r's fields into m, or says which is refused.
func (c *corp) apply(r userRequest, m *Member) *apiError {
	for _, d := range r.Department {
		if c.dir().depts[d] == nil {
			return errf(catalog.CodeDepartmentNotFound, "department not found")
		}
	}
	if r.Mobile != nil && *r.Mobile != "" {
		if c.findMember(func(o *Member) bool { return o.Mobile == *r.Mobile && !strings.EqualFold(o.UserID, m.UserID) }) != nil {
			return errf(catalog.CodeMobileExists, "mobile existed")
		}
	}
	for _, f := range []struct {
		to   *string
		from *string
	}{{&m.Name, r.Name}, {&m.Mobile, r.Mobile}, {&m.Position, r.Position}, {&m.Gender, r.Gender}, {&m.Email, r.Email},
		{&m.BizMail, r.BizMail}, {&m.Alias, r.Alias}, {&m.Telephone, r.Telephone}, {&m.Address, r.Address}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if len(r.Department) > 0 {
		m.Departments = slices.Clone(r.Department)
	}
	switch {
	case r.Enable != nil && *r.Enable == 1:
		m.Status = 1
	case r.Enable != nil:
		m.Status = 2 // disabled
	}
	return nil
}

func (c *corp) userCreate(in *input) (any, *apiError) {
	var req userRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.UserID == "" || len(req.UserID) > 64:
		return nil, errf(catalog.CodeUserIDMissing, "userid invalid")
	case req.Name == nil || *req.Name == "":
		return nil, errf(catalog.CodeInvalidParam, "name missing")
	case c.member(req.UserID) != nil:
		return nil, errf(catalog.CodeUserIDExists, "userid existed")
	}
	m := Member{UserID: req.UserID}
	if err := c.apply(req, &m); err != nil {
		return nil, err
	}
	c.putMember(m)
	return okStatus("created"), nil
}

func (c *corp) userUpdate(in *input) (any, *apiError) {
	var req userRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	old := c.member(req.UserID)
	if old == nil {
		return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
	}
	m := *old
	if err := c.apply(req, &m); err != nil {
		return nil, err
	}
	c.putMember(m)
	return okStatus("updated"), nil
}

func (c *corp) userDelete(in *input) (any, *apiError) {
	if !c.removeMember(in.query.Get("userid")) {
		return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
	}
	return okStatus("deleted"), nil
}

// userBatchDelete deletes the members it names, all or none: one unknown
// fails the call with 60111.
func (c *corp) userBatchDelete(in *input) (any, *apiError) {
	var req struct {
		UserIDList []string `json:"useridlist"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if len(req.UserIDList) == 0 || len(req.UserIDList) > 200 {
		return nil, errf(catalog.CodeInvalidParam, "useridlist: 1 to 200 userids")
	}
	for _, u := range req.UserIDList {
		if c.member(u) == nil {
			return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
		}
	}
	for _, u := range req.UserIDList {
		c.removeMember(u)
	}
	return okStatus("deleted"), nil
}

// batchInvite invites the members, departments and tags it names, and
// lists those that are not the corp's.
func (c *corp) batchInvite(in *input) (any, *apiError) {
	var req struct {
		User  []string `json:"user"`
		Party []int    `json:"party"`
		Tag   []int    `json:"tag"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	out := struct {
		status
		InvalidUser  []string `json:"invaliduser"`
		InvalidParty []int    `json:"invalidparty"`
		InvalidTag   []int    `json:"invalidtag"`
	}{status: okStatus("ok"), InvalidUser: []string{}, InvalidParty: []int{}, InvalidTag: []int{}}
	for _, u := range req.User {
		if c.member(u) == nil {
			out.InvalidUser = append(out.InvalidUser, u)
		}
	}
	for _, p := range req.Party {
		if c.dir().depts[p] == nil {
			out.InvalidParty = append(out.InvalidParty, p)
		}
	}
	for _, t := range req.Tag {
		if c.tags[t] == nil {
			out.InvalidTag = append(out.InvalidTag, t)
		}
	}
	return out, nil
}

type departmentJSON struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	NameEn   string `json:"name_en,omitempty"`
	ParentID int    `json:"parentid"`
	Order    int    `json:"order"`
}

// departmentSimpleList answers department id and those below it, or all.
func (c *corp) departmentSimpleList(in *input) (any, *apiError) {
	root := 0
	if raw := in.query.Get("id"); raw != "" {
		id, err := strconv.Atoi(raw)
		if err != nil || c.dir().depts[id] == nil {
			return nil, errf(catalog.CodeDepartmentNotFound, "department not found")
		}
		root = id
	}
	type node struct {
		ID       int `json:"id"`
		ParentID int `json:"parentid"`
		Order    int `json:"order"`
	}
	list := []node{}
	for _, d := range c.sortedDepartments() {
		if root == 0 || c.under(d.ID, root) {
			list = append(list, node{d.ID, d.ParentID, d.Order})
		}
	}
	return struct {
		status
		DepartmentID []node `json:"department_id"`
	}{okStatus("ok"), list}, nil
}

func (c *corp) sortedDepartments() []*Department {
	ds := make([]*Department, 0, len(c.dir().depts))
	for _, d := range c.directory.depts {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *Department) int { return a.ID - b.ID })
	return ds
}

// under reports whether department id is root or below it.
func (c *corp) under(id, root int) bool {
	for seen := 0; id != 0 && seen <= len(c.directory.depts); seen++ {
		if id == root {
			return true
		}
		d := c.directory.depts[id]
		if d == nil {
			return false
		}
		id = d.ParentID
	}
	return false
}

func (c *corp) departmentGet(in *input) (any, *apiError) {
	id, err := strconv.Atoi(in.query.Get("id"))
	d := c.dir().depts[id]
	if err != nil || d == nil {
		return nil, errf(catalog.CodeDepartmentNotFound, "department not found")
	}
	return struct {
		status
		Department departmentJSON `json:"department"`
	}{okStatus("ok"), departmentJSON{d.ID, d.Name, d.NameEn, d.ParentID, d.Order}}, nil
}

type departmentRequest struct {
	ID       int     `json:"id"`
	Name     *string `json:"name"`
	NameEn   *string `json:"name_en"`
	ParentID int     `json:"parentid"`
	Order    *int    `json:"order"`
}

func (c *corp) departmentCreate(in *input) (any, *apiError) {
	var req departmentRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.Name == nil || *req.Name == "":
		return nil, errf(catalog.CodeInvalidParam, "name missing")
	case c.dir().depts[req.ParentID] == nil:
		return nil, errf(catalog.CodeDepartmentParentAbsent, "parent department not found")
	case req.ID != 0 && c.directory.depts[req.ID] != nil:
		return nil, errf(catalog.CodeInvalidParam, "department id existed")
	case c.nameTaken(*req.Name, req.ParentID, 0):
		return nil, errf(catalog.CodeDepartmentNameExists, "department existed")
	}
	d := Department{ID: req.ID, Name: *req.Name, ParentID: req.ParentID}
	if d.ID == 0 {
		d.ID = 2
		for c.directory.depts[d.ID] != nil {
			d.ID++
		}
	}
	if req.NameEn != nil {
		d.NameEn = *req.NameEn
	}
	if req.Order != nil {
		d.Order = *req.Order
	}
	c.putDepartment(d)
	return struct {
		status
		ID int `json:"id"`
	}{okStatus("created"), d.ID}, nil
}

// nameTaken reports whether another department than except under parent
// has that name.
func (c *corp) nameTaken(name string, parent, except int) bool {
	for _, d := range c.directory.depts {
		if d.ParentID == parent && d.Name == name && d.ID != except {
			return true
		}
	}
	return false
}

func (c *corp) departmentUpdate(in *input) (any, *apiError) {
	var req departmentRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	old := c.dir().depts[req.ID]
	if old == nil {
		return nil, errf(catalog.CodeDepartmentNotFound, "department not found")
	}
	d := *old
	if req.ParentID != 0 {
		if c.directory.depts[req.ParentID] == nil || c.under(req.ParentID, d.ID) {
			return nil, errf(catalog.CodeDepartmentParentAbsent, "invalid parent department")
		}
		d.ParentID = req.ParentID
	}
	if req.Name != nil {
		if c.nameTaken(*req.Name, d.ParentID, d.ID) {
			return nil, errf(catalog.CodeDepartmentNameExists, "department existed")
		}
		d.Name = *req.Name
	}
	if req.NameEn != nil {
		d.NameEn = *req.NameEn
	}
	if req.Order != nil {
		d.Order = *req.Order
	}
	c.putDepartment(d)
	return okStatus("updated"), nil
}

func (c *corp) departmentDelete(in *input) (any, *apiError) {
	id, err := strconv.Atoi(in.query.Get("id"))
	if err != nil || c.dir().depts[id] == nil {
		return nil, errf(catalog.CodeDepartmentNotFound, "department not found")
	}
	for _, d := range c.directory.depts {
		if d.ParentID == id {
			return nil, errf(catalog.CodeDepartmentNotEmpty, "department contains sub-department")
		}
	}
	for _, m := range c.directory.members {
		if slices.Contains(m.Departments, id) {
			return nil, errf(catalog.CodeDepartmentHasMembers, "department contains user")
		}
	}
	delete(c.directory.depts, id)
	delete(c.parties, id)
	return okStatus("deleted"), nil
}
