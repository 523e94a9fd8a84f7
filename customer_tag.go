package wecom

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// CustomerTagService calls the customer-contact corp tag (客户联系企业标签)
// APIs. Tags and groups have string ids. Every call takes the customer tag APIs'
// limits, and Mark also holds a one-at-a-time lease per customer (see
// DefaultLimits).
type CustomerTagService service

// CorpTagGroup is a customer tag group and its tags.
type CorpTagGroup struct {
	GroupID    string    `json:"group_id"`
	GroupName  string    `json:"group_name"`
	CreateTime int64     `json:"create_time"`
	Order      uint32    `json:"order"`
	Deleted    bool      `json:"deleted"`
	Tags       []CorpTag `json:"tag"`
}

// CorpTag is a customer tag.
type CorpTag struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CreateTime int64  `json:"create_time"`
	Order      uint32 `json:"order"`
	Deleted    bool   `json:"deleted"`
}

// CorpTagListRequest selects tags by id or groups by id; GroupIDs wins when
// both are given, and neither means every tag.
type CorpTagListRequest struct {
	TagIDs   []string `json:"tag_id,omitempty"`
	GroupIDs []string `json:"group_id,omitempty"`
}

// CorpTagAddRequest adds tags to the group GroupID, or to the group named
// GroupName, which WeCom creates if it does not exist. AgentID defaults to the
// client's (WithAgentID).
type CorpTagAddRequest struct {
	GroupID   string        `json:"group_id,omitempty"`
	GroupName string        `json:"group_name,omitempty"`
	Order     uint32        `json:"order,omitempty"`
	Tags      []CorpTagSpec `json:"tag"`
	AgentID   int           `json:"agentid,omitempty"`
}

// CorpTagSpec is a tag to add. Larger Order sorts first.
type CorpTagSpec struct {
	Name  string `json:"name"`
	Order uint32 `json:"order,omitempty"`
}

// CorpTagEditRequest renames or reorders a tag or a group (ID is either).
// Nil Order leaves the order alone; empty Name leaves the name alone.
type CorpTagEditRequest struct {
	ID      string  `json:"id"`
	Name    string  `json:"name,omitempty"`
	Order   *uint32 `json:"order,omitempty"`
	AgentID int     `json:"agentid,omitempty"`
}

// CorpTagDeleteRequest deletes tags and whole groups. A group whose last tag is
// deleted disappears.
type CorpTagDeleteRequest struct {
	TagIDs   []string `json:"tag_id,omitempty"`
	GroupIDs []string `json:"group_id,omitempty"`
	AgentID  int      `json:"agentid,omitempty"`
}

// MarkTagRequest adds tags to, and removes tags from, one customer (an external
// contact of the member UserID).
type MarkTagRequest struct {
	UserID         string   `json:"userid"`
	ExternalUserID string   `json:"external_userid"`
	AddTags        []string `json:"add_tag,omitempty"`
	RemoveTags     []string `json:"remove_tag,omitempty"`
}

func validCorpTagName(field, name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > 30 || !utf8.ValidString(name) {
		return invalid(field, "%q must be 1 to 30 characters", name)
	}
	return nil
}

func (s *CustomerTagService) agent(id int) int {
	if id == 0 {
		return s.p.cfg.agentID
	}
	return id
}

// List returns tag groups with their tags.
func (s *CustomerTagService) List(ctx context.Context, req CorpTagListRequest) ([]CorpTagGroup, error) {
	var out struct {
		Groups []CorpTagGroup `json:"tag_group"`
	}
	err := s.p.perform(ctx, &call{id: catalog.CorpTagList, body: req, out: &out})
	return out.Groups, err
}

// Add adds tags and returns their group with only the new tags.
func (s *CustomerTagService) Add(ctx context.Context, req CorpTagAddRequest) (*CorpTagGroup, error) {
	if req.GroupID == "" {
		if err := validCorpTagName("group name", req.GroupName); err != nil {
			return nil, err
		}
	}
	if len(req.Tags) == 0 {
		return nil, invalid("tags", "none given")
	}
	for _, t := range req.Tags {
		if err := validCorpTagName("tag name", t.Name); err != nil {
			return nil, err
		}
	}
	req.AgentID = s.agent(req.AgentID)
	var out corpTagAddAnswer
	if err := s.p.perform(ctx, &call{id: catalog.CorpTagAdd, body: req, out: &out}); err != nil {
		return nil, err
	}
	return &out.Group, nil
}

type corpTagAddAnswer struct {
	Group CorpTagGroup `json:"tag_group"`
}

func (a *corpTagAddAnswer) validate() error {
	if a.Group.GroupID == "" || len(a.Group.Tags) == 0 {
		return errors.New("add_corp_tag answered no tag_group with tags")
	}
	for _, t := range a.Group.Tags {
		if t.ID == "" {
			return errors.New("add_corp_tag answered a tag without id")
		}
	}
	return nil
}

// Edit renames or reorders a tag or a group.
func (s *CustomerTagService) Edit(ctx context.Context, req CorpTagEditRequest) error {
	if req.ID == "" {
		return invalid("id", "empty")
	}
	if req.Name == "" && req.Order == nil {
		return invalid("edit", "neither a name nor an order given")
	}
	if req.Name != "" {
		if err := validCorpTagName("name", req.Name); err != nil {
			return err
		}
	}
	req.AgentID = s.agent(req.AgentID)
	return s.p.perform(ctx, &call{id: catalog.CorpTagEdit, body: req})
}

// Delete deletes tags and groups.
func (s *CustomerTagService) Delete(ctx context.Context, req CorpTagDeleteRequest) error {
	if len(req.TagIDs) == 0 && len(req.GroupIDs) == 0 {
		return invalid("delete", "no tag ids and no group ids")
	}
	req.AgentID = s.agent(req.AgentID)
	return s.p.perform(ctx, &call{id: catalog.CorpTagDel, body: req})
}

// Mark adds and removes tags on one customer. Calls for the same customer are
// serialised (WeCom refuses two at once), across every client sharing the
// limiter.
func (s *CustomerTagService) Mark(ctx context.Context, req MarkTagRequest) error {
	switch {
	case req.UserID == "" || req.ExternalUserID == "":
		return invalid("customer", "userid and external_userid are required")
	case len(req.AddTags) == 0 && len(req.RemoveTags) == 0:
		return invalid("tags", "nothing to add or remove")
	}
	return s.p.perform(ctx, &call{id: catalog.MarkTag, body: req})
}
