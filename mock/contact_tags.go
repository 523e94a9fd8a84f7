package mock

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// Limits of the contact-tag APIs.
const (
	maxTagNameRunes   = 32
	maxTagsPerCorp    = 3000
	maxUsersPerCall   = 1000
	maxPartiesPerCall = 100
)

// contacts is a corp's contact directory (members, departments) and its
// contact tags.
type contacts struct {
	users     map[string]bool
	parties   map[int]bool
	tags      map[int]*contactTag
	nextTagID int
}

func newContacts() contacts {
	return contacts{users: make(map[string]bool), parties: make(map[int]bool), tags: make(map[int]*contactTag), nextTagID: 1}
}

// contactTag is a contact tag (通讯录标签).
type contactTag struct {
	id      int
	name    string
	users   map[string]bool
	parties map[int]bool
}

func (c *corp) sortedTags() []*contactTag {
	return slices.SortedFunc(maps.Values(c.tags), func(a, b *contactTag) int { return cmp.Compare(a.id, b.id) })
}

func (c *corp) tagNamed(name string) *contactTag {
	for _, t := range c.tags {
		if t.name == name {
			return t
		}
	}
	return nil
}

func sortedKeys[K cmp.Ordered](m map[K]bool) []K {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

func checkTagName(name string) *apiError {
	if n := utf8.RuneCountInString(name); n < 1 || n > maxTagNameRunes {
		return errf(catalog.CodeTagNameLength, "invalid tagname length, must be 1 to %d characters", maxTagNameRunes)
	}
	return nil
}

type tagRequest struct {
	TagID   int    `json:"tagid"`
	TagName string `json:"tagname"`
}

type tagMembersRequest struct {
	TagID     int      `json:"tagid"`
	UserList  []string `json:"userlist"`
	PartyList []int    `json:"partylist"`
}

type tagCreateAnswer struct {
	status
	TagID int `json:"tagid"`
}

type tagUser struct {
	UserID string `json:"userid"`
	Name   string `json:"name"`
}

type tagGetAnswer struct {
	status
	TagName   string    `json:"tagname"`
	UserList  []tagUser `json:"userlist"`
	PartyList []int     `json:"partylist"`
}

type tagMembersAnswer struct {
	status
	InvalidList  string `json:"invalidlist,omitempty"`
	InvalidParty []int  `json:"invalidparty,omitempty"`
}

type tagListItem struct {
	TagID   int    `json:"tagid"`
	TagName string `json:"tagname"`
}

type tagListAnswer struct {
	status
	TagList []tagListItem `json:"taglist"`
}

// tagByID finds the tag of a request: 41017 when id is 0, 40068 when there
// is no such tag.
func (c *corp) tagByID(id int) (*contactTag, *apiError) {
	if id == 0 {
		return nil, errf(catalog.CodeTagIDMissing, "missing tagid")
	}
	t := c.tags[id]
	if t == nil {
		return nil, errf(catalog.CodeInvalidTagID, "invalid tagid")
	}
	return t, nil
}

// tagByQuery finds the tag named by the tagid query parameter.
func (c *corp) tagByQuery(in *input) (*contactTag, *apiError) {
	raw := in.query.Get("tagid")
	if raw == "" {
		return nil, errf(catalog.CodeTagIDMissing, "missing tagid")
	}
	id, err := strconv.Atoi(raw)
	if err != nil || id <= 0 {
		return nil, errf(catalog.CodeInvalidTagID, "invalid tagid")
	}
	return c.tagByID(id)
}

// ContactTags registers the contact tag (标签) APIs.
func (handlerSets) ContactTags() handlers {
	return handlers{
		catalog.TagCreate:   (*corp).tagCreate,
		catalog.TagUpdate:   (*corp).tagUpdate,
		catalog.TagDelete:   (*corp).tagDelete,
		catalog.TagGet:      (*corp).tagGet,
		catalog.TagAddUsers: (*corp).tagAddUsers,
		catalog.TagDelUsers: (*corp).tagDelUsers,
		catalog.TagList:     (*corp).tagList,
	}
}

func (c *corp) tagCreate(in *input) (any, *apiError) {
	var req tagRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	if e := checkTagName(req.TagName); e != nil {
		return nil, e
	}
	if c.tagNamed(req.TagName) != nil {
		return nil, errf(catalog.CodeTagNameExists, "invalid tagname, tagname already exists")
	}
	switch {
	case req.TagID < 0:
		return nil, errf(catalog.CodeInvalidTagID, "invalid tagid")
	case req.TagID > 0 && c.tags[req.TagID] != nil:
		return nil, errf(catalog.CodeTagNameExists, "invalid tagid, tagid already exists")
	case len(c.tags) >= maxTagsPerCorp:
		return nil, errf(catalog.CodeCountLimited, "tag count out of limit %d", maxTagsPerCorp)
	}
	id := req.TagID
	if id == 0 {
		for c.tags[c.nextTagID] != nil {
			c.nextTagID++
		}
		id = c.nextTagID
		c.nextTagID++
	}
	c.tags[id] = &contactTag{id: id, name: req.TagName, users: make(map[string]bool), parties: make(map[int]bool)}
	return tagCreateAnswer{status: okStatus("created"), TagID: id}, nil
}

func (c *corp) tagUpdate(in *input) (any, *apiError) {
	var req tagRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	t, e := c.tagByID(req.TagID)
	if e != nil {
		return nil, e
	}
	if e := checkTagName(req.TagName); e != nil {
		return nil, e
	}
	if other := c.tagNamed(req.TagName); other != nil && other != t {
		return nil, errf(catalog.CodeTagNameExists, "invalid tagname, tagname already exists")
	}
	t.name = req.TagName
	return okStatus("updated"), nil
}

func (c *corp) tagDelete(in *input) (any, *apiError) {
	t, e := c.tagByQuery(in)
	if e != nil {
		return nil, e
	}
	delete(c.tags, t.id)
	return okStatus("deleted"), nil
}

func (c *corp) tagGet(in *input) (any, *apiError) {
	t, e := c.tagByQuery(in)
	if e != nil {
		return nil, e
	}
	answer := tagGetAnswer{status: okStatus("ok"), TagName: t.name, UserList: []tagUser{}, PartyList: []int{}}
	for _, u := range sortedKeys(t.users) {
		answer.UserList = append(answer.UserList, tagUser{UserID: u, Name: u})
	}
	answer.PartyList = append(answer.PartyList, sortedKeys(t.parties)...)
	return answer, nil
}

func (c *corp) tagList(*input) (any, *apiError) {
	answer := tagListAnswer{status: okStatus("ok"), TagList: []tagListItem{}}
	for _, t := range c.sortedTags() {
		answer.TagList = append(answer.TagList, tagListItem{TagID: t.id, TagName: t.name})
	}
	return answer, nil
}

// memberChange is a tag member request split into valid and invalid ids,
// each once, in request order.
type memberChange struct {
	users, badUsers     []string
	parties, badParties []int
}

// splitMembers validates a tag member request and splits its lists with the
// two validity tests.
func (c *corp) splitMembers(in *input, userOK func(*contactTag, string) bool,
	partyOK func(*contactTag, int) bool) (*contactTag, *memberChange, *apiError) {
	var req tagMembersRequest
	if e := in.decode(&req); e != nil {
		return nil, nil, e
	}
	t, e := c.tagByID(req.TagID)
	if e != nil {
		return nil, nil, e
	}
	if len(req.UserList) > maxUsersPerCall || len(req.PartyList) > maxPartiesPerCall {
		return nil, nil, errf(catalog.CodeTooManyTagUsers, "too many users or parties in one call, at most %d users and %d parties",
			maxUsersPerCall, maxPartiesPerCall)
	}
	var mc memberChange
	seenUser := make(map[string]bool)
	for _, u := range req.UserList {
		if seenUser[u] {
			continue
		}
		seenUser[u] = true
		if userOK(t, u) {
			mc.users = append(mc.users, u)
		} else {
			mc.badUsers = append(mc.badUsers, u)
		}
	}
	seenParty := make(map[int]bool)
	for _, p := range req.PartyList {
		if seenParty[p] {
			continue
		}
		seenParty[p] = true
		if partyOK(t, p) {
			mc.parties = append(mc.parties, p)
		} else {
			mc.badParties = append(mc.badParties, p)
		}
	}
	return t, &mc, nil
}

func (mc *memberChange) answer(msg string) tagMembersAnswer {
	return tagMembersAnswer{
		status:       okStatus(msg),
		InvalidList:  strings.Join(mc.badUsers, "|"),
		InvalidParty: mc.badParties,
	}
}

func (c *corp) tagAddUsers(in *input) (any, *apiError) {
	t, mc, e := c.splitMembers(in,
		func(_ *contactTag, u string) bool { return c.users[u] },
		func(_ *contactTag, p int) bool { return c.parties[p] })
	if e != nil {
		return nil, e
	}
	if len(mc.users) == 0 && len(mc.parties) == 0 {
		return nil, errf(catalog.CodeAllTagUsersInvalid, "all userlist and partylist invalid")
	}
	var users []string
	var parties []int
	for _, u := range mc.users {
		if !t.users[u] {
			t.users[u] = true
			users = append(users, u)
		}
	}
	for _, p := range mc.parties {
		if !t.parties[p] {
			t.parties[p] = true
			parties = append(parties, p)
		}
	}
	tagChanged(in, t, "Add", users, parties)
	return mc.answer("ok"), nil
}

func (c *corp) tagDelUsers(in *input) (any, *apiError) {
	t, mc, e := c.splitMembers(in,
		func(t *contactTag, u string) bool { return t.users[u] },
		func(t *contactTag, p int) bool { return t.parties[p] })
	if e != nil {
		return nil, e
	}
	if len(mc.users) == 0 && len(mc.parties) == 0 {
		return nil, errf(catalog.CodeAllDelTagUsersInvalid, "invalid userlist and partylist")
	}
	for _, u := range mc.users {
		delete(t.users, u)
	}
	for _, p := range mc.parties {
		delete(t.parties, p)
	}
	tagChanged(in, t, "Del", mc.users, mc.parties)
	return mc.answer("deleted"), nil
}

// tagChanged emits change_contact update_tag for the members added to
// (verb "Add") or removed from ("Del") a tag, as WeCom's contact
// change notice has it: TagId and the ids in AddUserItems, AddPartyItems
// or DelUserItems, DelPartyItems. Nothing that changed, no event.
func tagChanged(in *input, t *contactTag, verb string, users []string, parties []int) {
	if len(users) == 0 && len(parties) == 0 {
		return
	}
	fields := []xmlField{number("TagId", t.id)}
	if len(users) > 0 {
		fields = append(fields, text(verb+"UserItems", strings.Join(users, ",")))
	}
	if len(parties) > 0 {
		fields = append(fields, text(verb+"PartyItems", joinInts(parties)))
	}
	in.emit("change_contact", "update_tag", fields...)
}
