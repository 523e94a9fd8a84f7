package mock

import (
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// Page sizes of the customer read APIs (document/path/92114, 96316).
const (
	followersPerPage = catalog.CustomerGetFollowers // externalcontact/get's follow_user
	batchMaxUsers    = catalog.BatchUserIDs         // batch/get_by_user's userid_list
	batchMaxLimit    = catalog.BatchLimit           // batch/get_by_user's limit: more is clamped
	batchLimit       = catalog.BatchDefaultLimit    // its default
)

// contactJSON is a customer as the customer read APIs answer it.
type contactJSON struct {
	ExternalUserID string `json:"external_userid"`
	Name           string `json:"name"`
	Avatar         string `json:"avatar"`
	Type           int    `json:"type"`
	Gender         int    `json:"gender"`
	UnionID        string `json:"unionid,omitempty"`
	CorpName       string `json:"corp_name,omitempty"`
}

func (cu *Customer) json() contactJSON {
	return contactJSON{ExternalUserID: cu.ExternalUserID, Name: cu.Name, Avatar: "https://wework.qpic.cn/avatar/" + cu.ExternalUserID,
		Type: cu.Type, Gender: cu.Gender, UnionID: cu.UnionID, CorpName: cu.CorpName}
}

// followJSON is what both APIs say of a member's relation to a customer;
// get adds tags as objects, batch/get_by_user tag ids.
type followJSON struct {
	UserID         string    `json:"userid"`
	Remark         string    `json:"remark"`
	Description    string    `json:"description"`
	CreateTime     int64     `json:"createtime"`
	Tags           []tagJSON `json:"tags,omitempty"`
	TagIDs         *[]string `json:"tag_id,omitempty"` // batch only, [] when none
	RemarkCorpName string    `json:"remark_corp_name,omitempty"`
	RemarkMobiles  []string  `json:"remark_mobiles,omitempty"`
	OperUserID     string    `json:"oper_userid"`
	AddWay         int       `json:"add_way"`
	State          string    `json:"state,omitempty"`
}

type tagJSON struct {
	GroupName string `json:"group_name"`
	TagName   string `json:"tag_name"`
	TagID     string `json:"tag_id"`
	Type      int    `json:"type"` // 1: a corp tag
}

// followOf describes user's relation to ext; byID: tags as ids (batch)
// rather than objects (get).
func (c *corp) followOf(user, ext string, byID bool) followJSON {
	f := c.customers[user][ext]
	key := markKey{user, ext}
	r := c.remarks[key]
	out := followJSON{UserID: user, Remark: r.Remark, Description: r.Description, CreateTime: f.created,
		RemarkCorpName: r.RemarkCompany, RemarkMobiles: r.RemarkMobiles, OperUserID: f.operUserID, AddWay: f.addWay, State: f.state}
	ids := []string{}
	for _, id := range sortedKeys(c.marks[key]) {
		if t := c.corpTags[id]; t != nil {
			ids = append(ids, id)
			out.Tags = append(out.Tags, tagJSON{GroupName: t.group.name, TagName: t.name, TagID: id, Type: 1})
		}
	}
	if byID {
		out.TagIDs, out.Tags = &ids, nil
	}
	return out
}

type customerGetAnswer struct {
	status
	ExternalContact contactJSON  `json:"external_contact"`
	FollowUser      []followJSON `json:"follow_user"`
	NextCursor      string       `json:"next_cursor,omitempty"`
}

// CustomerGet registers the customer details, one and in batches.
func (handlerSets) CustomerGet() handlers {
	return handlers{
		catalog.CustomerGet:   (*corp).customerGet,
		catalog.CustomerBatch: (*corp).customerBatch,
	}
}

// customerGet answers one customer and a page of 500 of its followers.
func (c *corp) customerGet(in *input) (any, *apiError) {
	ext := in.query.Get("external_userid")
	if ext == "" {
		return nil, errf(catalog.CodeInvalidExternalUserID, "invalid external userid")
	}
	cu := c.people[ext]
	followers := c.followers(ext)
	if cu == nil || len(followers) == 0 {
		return nil, errf(catalog.CodeNoCustomers, "not external contact")
	}
	scope := "get|" + ext
	off, ok := readCursor(scope, in.query.Get("cursor"))
	if !ok || off > len(followers) {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	end := min(off+followersPerPage, len(followers))
	out := customerGetAnswer{status: okStatus("ok"), ExternalContact: cu.json(), FollowUser: []followJSON{}}
	for _, u := range followers[off:end] {
		out.FollowUser = append(out.FollowUser, c.followOf(u, ext, false))
	}
	if end < len(followers) {
		out.NextCursor = makeCursor(scope, end)
	}
	return out, nil
}

type batchRequest struct {
	UserIDList []string `json:"userid_list"`
	Cursor     string   `json:"cursor"`
	Limit      int      `json:"limit"`
}

type batchItem struct {
	ExternalContact contactJSON `json:"external_contact"`
	FollowInfo      followJSON  `json:"follow_info"`
}

type batchAnswer struct {
	status
	ExternalContactList []batchItem `json:"external_contact_list"`
	NextCursor          string      `json:"next_cursor"`
}

// customerBatch answers a page of the (member, customer) pairs of up to
// 100 members: each member in the order given, their customers by id. limit
// defaults to 50 and is clamped to 100; a cursor only goes with the member
// list it was made for.
func (c *corp) customerBatch(in *input) (any, *apiError) {
	var req batchRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	switch {
	case len(req.UserIDList) == 0:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, userid_list is empty")
	case len(req.UserIDList) > batchMaxUsers:
		return nil, errf(catalog.CodeInvalidParam, "field userid_list exceed max length %d", batchMaxUsers)
	case req.Limit < 0:
		return nil, errf(catalog.CodeInvalidParam, "invalid limit")
	case slices.Contains(req.UserIDList, ""):
		return nil, errf(catalog.CodeUserIDMissing, "missing userid")
	}
	limit := req.Limit
	if limit == 0 {
		limit = batchLimit
	}
	limit = min(limit, batchMaxLimit)
	scope := "batch|" + strings.Join(req.UserIDList, "\x00")
	off, ok := readCursor(scope, req.Cursor)
	if !ok {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	out := batchAnswer{status: okStatus("ok"), ExternalContactList: []batchItem{}}
	i, seen := 0, make(map[string]bool)
	for _, u := range req.UserIDList {
		if seen[u] {
			continue
		}
		seen[u] = true
		for _, ext := range sortedKeys(c.followed(u)) {
			if i >= off && len(out.ExternalContactList) < limit {
				out.ExternalContactList = append(out.ExternalContactList, batchItem{ExternalContact: c.people[ext].json(), FollowInfo: c.followOf(u, ext, true)})
			} else if i >= off {
				out.NextCursor = makeCursor(scope, i)
				return out, nil
			}
			i++
		}
	}
	if off > i {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	return out, nil
}
