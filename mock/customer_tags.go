package mock

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// customerTags is a corp's customer-contact tags (企业客户标签) and the
// marks of its members' customers.
type customerTags struct {
	groups   map[string]*tagGroup
	corpTags map[string]*corpTag
	seq      int // source of tag and group ids
	marks    map[markKey]map[string]bool
}

// markKey is a member's customer.
type markKey struct{ user, external string }

func newCustomerTags() customerTags {
	return customerTags{groups: make(map[string]*tagGroup), corpTags: make(map[string]*corpTag), marks: make(map[markKey]map[string]bool)}
}

// Limits of the customer-contact tag APIs.
const (
	maxCorpTagNameRunes = 30
	maxCorpTagsPerCorp  = 3000
)

// tagGroup is a customer-contact tag group.
type tagGroup struct {
	id      string
	name    string
	order   uint32
	created int64
	seq     int
	tags    map[string]*corpTag
}

// corpTag is a customer-contact tag.
type corpTag struct {
	id      string
	name    string
	order   uint32
	created int64
	seq     int
	group   *tagGroup
}

// byOrder sorts larger order first, then oldest first, as WeCom lists tags.
func byOrder(order1 uint32, seq1 int, order2 uint32, seq2 int) int {
	if c := cmp.Compare(order2, order1); c != 0 {
		return c
	}
	return cmp.Compare(seq1, seq2)
}

func (c *corp) sortedGroups() []*tagGroup {
	return slices.SortedFunc(maps.Values(c.groups), func(a, b *tagGroup) int {
		return byOrder(a.order, a.seq, b.order, b.seq)
	})
}

func (g *tagGroup) sortedTags() []*corpTag {
	return slices.SortedFunc(maps.Values(g.tags), func(a, b *corpTag) int {
		return byOrder(a.order, a.seq, b.order, b.seq)
	})
}

func (g *tagGroup) tagNamed(name string) *corpTag {
	for _, t := range g.tags {
		if t.name == name {
			return t
		}
	}
	return nil
}

func (c *corp) groupNamed(name string) *tagGroup {
	for _, g := range c.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

// newID returns a new id in WeCom's "et…" shape.
func (c *corp) newID() (string, int) {
	c.seq++
	return fmt.Sprintf("et%016X", c.seq), c.seq
}

func checkCorpTagName(what, name string) *apiError {
	if n := utf8.RuneCountInString(name); n < 1 || n > maxCorpTagNameRunes {
		return errf(catalog.CodeTagNameLength, "invalid %s name length, must be 1 to %d characters", what, maxCorpTagNameRunes)
	}
	return nil
}

// removeCorpTag deletes a tag, its marks, and its group when it was the
// group's last tag.
func (c *corp) removeCorpTag(t *corpTag) {
	delete(c.corpTags, t.id)
	delete(t.group.tags, t.id)
	if len(t.group.tags) == 0 {
		delete(c.groups, t.group.id)
	}
	for k, marked := range c.marks {
		delete(marked, t.id)
		if len(marked) == 0 {
			delete(c.marks, k)
		}
	}
}

type corpTagJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CreateTime int64  `json:"create_time"`
	Order      uint32 `json:"order"`
	Deleted    bool   `json:"deleted"`
}

type tagGroupJSON struct {
	GroupID    string        `json:"group_id"`
	GroupName  string        `json:"group_name"`
	CreateTime int64         `json:"create_time"`
	Order      uint32        `json:"order"`
	Deleted    bool          `json:"deleted"`
	Tag        []corpTagJSON `json:"tag"`
}

func groupJSON(g *tagGroup, tags []*corpTag) tagGroupJSON {
	out := tagGroupJSON{GroupID: g.id, GroupName: g.name, CreateTime: g.created, Order: g.order, Tag: []corpTagJSON{}}
	for _, t := range tags {
		out.Tag = append(out.Tag, corpTagJSON{ID: t.id, Name: t.name, CreateTime: t.created, Order: t.order})
	}
	return out
}

type corpTagListRequest struct {
	TagID   []string `json:"tag_id"`
	GroupID []string `json:"group_id"`
}

type corpTagListAnswer struct {
	status
	TagGroup []tagGroupJSON `json:"tag_group"`
}

type corpTagAddRequest struct {
	GroupID   string `json:"group_id"`
	GroupName string `json:"group_name"`
	Order     uint32 `json:"order"`
	Tag       []struct {
		Name  string `json:"name"`
		Order uint32 `json:"order"`
	} `json:"tag"`
}

type corpTagAddAnswer struct {
	status
	TagGroup tagGroupJSON `json:"tag_group"`
}

type corpTagEditRequest struct {
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Order *uint32 `json:"order"`
}

type markTagRequest struct {
	UserID         string   `json:"userid"`
	ExternalUserID string   `json:"external_userid"`
	AddTag         []string `json:"add_tag"`
	RemoveTag      []string `json:"remove_tag"`
}

// CustomerTags registers the customer tag (客户标签) APIs.
func (handlerSets) CustomerTags() handlers {
	return handlers{
		catalog.CorpTagList: (*corp).corpTagList,
		catalog.CorpTagAdd:  (*corp).corpTagAdd,
		catalog.CorpTagEdit: (*corp).corpTagEdit,
		catalog.CorpTagDel:  (*corp).corpTagDel,
		catalog.MarkTag:     (*corp).markTag,
	}
}

func (c *corp) corpTagList(in *input) (any, *apiError) {
	var req corpTagListRequest
	if len(bytes.TrimSpace(in.body)) > 0 || in.bodyErr {
		if e := in.decode(&req); e != nil {
			return nil, e
		}
	}
	answer := corpTagListAnswer{status: okStatus("ok"), TagGroup: []tagGroupJSON{}}
	switch {
	case len(req.GroupID) > 0:
		want := make(map[string]bool)
		for _, id := range req.GroupID {
			want[id] = true
		}
		for _, g := range c.sortedGroups() {
			if want[g.id] {
				answer.TagGroup = append(answer.TagGroup, groupJSON(g, g.sortedTags()))
			}
		}
	case len(req.TagID) > 0:
		want := make(map[string]bool)
		for _, id := range req.TagID {
			want[id] = true
		}
		for _, g := range c.sortedGroups() {
			var tags []*corpTag
			for _, t := range g.sortedTags() {
				if want[t.id] {
					tags = append(tags, t)
				}
			}
			if len(tags) > 0 {
				answer.TagGroup = append(answer.TagGroup, groupJSON(g, tags))
			}
		}
	default:
		for _, g := range c.sortedGroups() {
			answer.TagGroup = append(answer.TagGroup, groupJSON(g, g.sortedTags()))
		}
	}
	return answer, nil
}

func (c *corp) corpTagAdd(in *input) (any, *apiError) {
	var req corpTagAddRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	var g *tagGroup
	switch {
	case req.GroupID != "":
		if g = c.groups[req.GroupID]; g == nil {
			return nil, errf(catalog.CodeInvalidTagID, "invalid tag group id")
		}
	case req.GroupName != "":
		if e := checkCorpTagName("group", req.GroupName); e != nil {
			return nil, e
		}
		g = c.groupNamed(req.GroupName)
	default:
		return nil, errf(catalog.CodeInvalidTagID, "invalid tag group id, group_id or group_name required")
	}
	if len(req.Tag) == 0 {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, tag list is empty")
	}
	names := make(map[string]bool)
	for _, t := range req.Tag {
		if e := checkCorpTagName("tag", t.Name); e != nil {
			return nil, e
		}
		if names[t.Name] || (g != nil && g.tagNamed(t.Name) != nil) {
			return nil, errf(catalog.CodeTagNameExists, "invalid tag name, tag name already exists in the group")
		}
		names[t.Name] = true
	}
	if len(c.corpTags)+len(req.Tag) > maxCorpTagsPerCorp {
		return nil, errf(catalog.CodeTooManyCorpTags, "corp tag count out of limit %d", maxCorpTagsPerCorp)
	}
	now := in.now.Unix()
	newGroup := g == nil
	if newGroup {
		id, seq := c.newID()
		g = &tagGroup{id: id, name: req.GroupName, order: req.Order, created: now, seq: seq, tags: make(map[string]*corpTag)}
		c.groups[id] = g
		externalTagChanged(in, "create", "tag_group", id)
	}
	added := make([]*corpTag, 0, len(req.Tag))
	for _, rt := range req.Tag {
		id, seq := c.newID()
		t := &corpTag{id: id, name: rt.Name, order: rt.Order, created: now, seq: seq, group: g}
		g.tags[id] = t
		c.corpTags[id] = t
		added = append(added, t)
		if !newGroup {
			externalTagChanged(in, "create", "tag", id)
		}
	}
	return corpTagAddAnswer{status: okStatus("ok"), TagGroup: groupJSON(g, added)}, nil
}

func (c *corp) corpTagEdit(in *input) (any, *apiError) {
	var req corpTagEditRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	if t := c.corpTags[req.ID]; t != nil {
		if req.Name != "" {
			if e := checkCorpTagName("tag", req.Name); e != nil {
				return nil, e
			}
			if other := t.group.tagNamed(req.Name); other != nil && other != t {
				return nil, errf(catalog.CodeTagNameExists, "invalid tag name, tag name already exists in the group")
			}
			t.name = req.Name
		}
		if req.Order != nil {
			t.order = *req.Order
		}
		externalTagChanged(in, "update", "tag", t.id)
		return okStatus("ok"), nil
	}
	if g := c.groups[req.ID]; g != nil {
		if req.Name != "" {
			if e := checkCorpTagName("group", req.Name); e != nil {
				return nil, e
			}
			if other := c.groupNamed(req.Name); other != nil && other != g {
				return nil, errf(catalog.CodeTagNameExists, "invalid group name, group name already exists")
			}
			g.name = req.Name
		}
		if req.Order != nil {
			g.order = *req.Order
		}
		externalTagChanged(in, "update", "tag_group", g.id)
		return okStatus("ok"), nil
	}
	return nil, errf(catalog.CodeInvalidTagID, "invalid tag id or tag group id")
}

func (c *corp) corpTagDel(in *input) (any, *apiError) {
	var req corpTagListRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	if len(req.TagID) == 0 && len(req.GroupID) == 0 {
		return nil, errf(catalog.CodeInvalidTagID, "invalid tag id, tag_id and group_id are both empty")
	}
	// Check every id before changing anything.
	for _, id := range req.GroupID {
		if c.groups[id] == nil {
			return nil, errf(catalog.CodeInvalidTagID, "invalid tag group id")
		}
	}
	for _, id := range req.TagID {
		if c.corpTags[id] == nil {
			return nil, errf(catalog.CodeInvalidTagID, "invalid tag id")
		}
	}
	for _, id := range req.GroupID {
		if g := c.groups[id]; g != nil {
			for _, t := range g.tags {
				c.removeCorpTag(t)
			}
			externalTagChanged(in, "delete", "tag_group", id)
		}
	}
	for _, id := range req.TagID {
		if t := c.corpTags[id]; t != nil {
			c.removeCorpTag(t)
			externalTagChanged(in, "delete", "tag", id)
			if c.groups[t.group.id] == nil {
				externalTagChanged(in, "delete", "tag_group", t.group.id)
			}
		}
	}
	return okStatus("ok"), nil
}

// externalTagChanged emits change_external_tag (document/path/92130):
// ChangeType create, update or delete, the Id, and TagType tag or
// tag_group. A group created or deleted is one event, not one more per tag
// in it (the mock's reading of WeCom's page, which says so of deletes); a
// group left empty by deleting its last tag is deleted, and says so.
func externalTagChanged(in *input, change, tagType, id string) {
	in.emit("change_external_tag", change, text("Id", id), text("TagType", tagType))
}

// markTag adds the add_tag tags, then removes the remove_tag ones.
func (c *corp) markTag(in *input) (any, *apiError) {
	var req markTagRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	switch {
	case req.UserID == "":
		return nil, errf(catalog.CodeUserIDMissing, "missing userid")
	case req.ExternalUserID == "":
		return nil, errf(catalog.CodeInvalidExternalUserID, "invalid external userid")
	case len(req.AddTag) == 0 && len(req.RemoveTag) == 0:
		return nil, errf(catalog.CodeInvalidTagID, "invalid tag id, add_tag and remove_tag are both empty")
	}
	for _, id := range slices.Concat(req.AddTag, req.RemoveTag) {
		if c.corpTags[id] == nil {
			return nil, errf(catalog.CodeInvalidTagID, "invalid tag id")
		}
	}
	key := markKey{req.UserID, req.ExternalUserID}
	marked := c.marks[key]
	if marked == nil {
		marked = make(map[string]bool)
	}
	for _, id := range req.AddTag {
		marked[id] = true
	}
	for _, id := range req.RemoveTag {
		delete(marked, id)
	}
	if len(marked) == 0 {
		delete(c.marks, key)
	} else {
		c.marks[key] = marked
	}
	return okStatus("ok"), nil
}
