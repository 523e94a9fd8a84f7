package wecom

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// TagService calls the contact tag (通讯录标签) APIs. Tags have integer ids.
// Every call takes the tag APIs' limits (see DefaultLimits).
type TagService service

// Batch sizes WeCom accepts in one addtagusers or deltagusers call.
const (
	MaxTagUsersPerCall   = 1000
	MaxTagPartiesPerCall = 100
)

// Tag is a contact tag.
type Tag struct {
	ID   int    `json:"tagid"`
	Name string `json:"tagname"`
}

// TagCreateRequest creates a tag. ID is optional: zero lets WeCom choose.
type TagCreateRequest struct {
	Name string `json:"tagname"`
	ID   int    `json:"tagid,omitempty"`
}

// TagUpdateRequest renames a tag.
type TagUpdateRequest struct {
	ID   int    `json:"tagid"`
	Name string `json:"tagname"`
}

// TagMembers are the members of a tag.
type TagMembers struct {
	Name    string    `json:"tagname"`
	Users   []TagUser `json:"userlist"`
	Parties []int     `json:"partylist"`
}

// TagUser is a member of a tag.
type TagUser struct {
	UserID string `json:"userid"`
	Name   string `json:"name"`
}

// TagMembersRequest adds users and departments to a tag, or removes them.
// Any number may be given: the SDK splits them into calls of at most
// MaxTagUsersPerCall users and MaxTagPartiesPerCall departments.
type TagMembersRequest struct {
	TagID   int      `json:"tagid"`
	Users   []string `json:"userlist,omitempty"`
	Parties []int    `json:"partylist,omitempty"`
}

// TagMembersResult lists the users and departments WeCom found invalid (the
// others were added or removed), merged over every call made.
type TagMembersResult struct {
	InvalidUsers   []string
	InvalidParties []int
}

// tagMembersAnswer is the wire form: invalidlist is "a|b".
type tagMembersAnswer struct {
	InvalidList  string `json:"invalidlist"`
	InvalidParty []int  `json:"invalidparty"`
}

// splitInvalidList parses WeCom's "a|b" list of invalid user ids.
func splitInvalidList(s string) []string {
	var out []string
	for _, u := range strings.Split(s, "|") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func validTagName(name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > 32 || !utf8.ValidString(name) {
		return invalid("tag name", "%q must be 1 to 32 characters", name)
	}
	return nil
}

func validTagID(id int) error {
	if id <= 0 {
		return invalid("tag id", "%d is not positive", id)
	}
	return nil
}

// Create creates a tag and returns its id.
func (s *TagService) Create(ctx context.Context, req TagCreateRequest) (int, error) {
	if err := validTagName(req.Name); err != nil {
		return 0, err
	}
	if req.ID < 0 {
		return 0, invalid("tag id", "%d is negative", req.ID)
	}
	var out tagCreateAnswer
	err := s.p.perform(ctx, &call{id: catalog.TagCreate, body: req, out: &out})
	return out.ID, err
}

type tagCreateAnswer struct {
	ID int `json:"tagid"`
}

func (a *tagCreateAnswer) validate() error {
	if a.ID <= 0 {
		return errors.New("tag/create answered no tagid")
	}
	return nil
}

// Update renames a tag.
func (s *TagService) Update(ctx context.Context, req TagUpdateRequest) error {
	if err := errors.Join(validTagID(req.ID), validTagName(req.Name)); err != nil {
		return err
	}
	return s.p.perform(ctx, &call{id: catalog.TagUpdate, body: req})
}

// Delete deletes a tag.
func (s *TagService) Delete(ctx context.Context, id int) error {
	if err := validTagID(id); err != nil {
		return err
	}
	q := url.Values{"tagid": {strconv.Itoa(id)}}
	return s.p.perform(ctx, &call{id: catalog.TagDelete, query: q})
}

// Members returns a tag's name, users and departments.
func (s *TagService) Members(ctx context.Context, id int) (*TagMembers, error) {
	if err := validTagID(id); err != nil {
		return nil, err
	}
	q := url.Values{"tagid": {strconv.Itoa(id)}}
	out := new(TagMembers)
	if err := s.p.perform(ctx, &call{id: catalog.TagGet, query: q, out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// List returns every tag the app can see.
func (s *TagService) List(ctx context.Context) ([]Tag, error) {
	var out struct {
		Tags []Tag `json:"taglist"`
	}
	err := s.p.perform(ctx, &call{id: catalog.TagList, out: &out})
	return out.Tags, err
}

// AddMembers adds users and departments to a tag. Those WeCom finds invalid
// come back in the result; the others are added. When more are given than one
// call takes, several calls are made in order; if one fails, the error says
// which batch, and the result holds what the earlier batches reported.
func (s *TagService) AddMembers(ctx context.Context, req TagMembersRequest) (*TagMembersResult, error) {
	return s.members(ctx, catalog.TagAddUsers, CodeAllTagUsersInvalid, req)
}

// RemoveMembers removes users and departments from a tag, as AddMembers adds
// them.
func (s *TagService) RemoveMembers(ctx context.Context, req TagMembersRequest) (*TagMembersResult, error) {
	return s.members(ctx, catalog.TagDelUsers, CodeAllDelTagUsersInvalid, req)
}

// members runs addtagusers or deltagusers in compliant batches. allInvalid is
// the errcode of a batch whose every member is invalid: with several batches,
// that batch's members are reported invalid and the others go on.
func (s *TagService) members(ctx context.Context, id catalog.ID, allInvalid int, req TagMembersRequest) (*TagMembersResult, error) {
	if err := validTagID(req.TagID); err != nil {
		return nil, err
	}
	if len(req.Users) == 0 && len(req.Parties) == 0 {
		return nil, invalid("members", "no users and no departments")
	}
	batches := max((len(req.Users)+MaxTagUsersPerCall-1)/MaxTagUsersPerCall, (len(req.Parties)+MaxTagPartiesPerCall-1)/MaxTagPartiesPerCall)
	res := &TagMembersResult{}
	var lastAllInvalid error
	everyBatchInvalid := true
	for i := range batches {
		b := TagMembersRequest{TagID: req.TagID, Users: chunk(req.Users, i, MaxTagUsersPerCall), Parties: chunk(req.Parties, i, MaxTagPartiesPerCall)}
		var out tagMembersAnswer
		err := s.p.perform(ctx, &call{id: id, body: b, out: &out})
		var ae *APIError
		switch {
		case err == nil:
			everyBatchInvalid = false
			res.InvalidUsers = append(res.InvalidUsers, splitInvalidList(out.InvalidList)...)
			res.InvalidParties = append(res.InvalidParties, out.InvalidParty...)
		case batches > 1 && errors.As(err, &ae) && ae.Code == allInvalid:
			res.InvalidUsers = append(res.InvalidUsers, b.Users...)
			res.InvalidParties = append(res.InvalidParties, b.Parties...)
			lastAllInvalid = err
		case batches == 1:
			return res, err
		default:
			return res, fmt.Errorf("wecom: tag %d members: batch %d of %d (users from %d, departments from %d): %w",
				req.TagID, i+1, batches, min(i*MaxTagUsersPerCall, len(req.Users)), min(i*MaxTagPartiesPerCall, len(req.Parties)), err)
		}
	}
	if everyBatchInvalid {
		return res, lastAllInvalid // every batch found every member invalid
	}
	return res, nil
}
