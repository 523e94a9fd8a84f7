package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// ExternalContact is a customer (外部联系人) as the customer contact APIs
// describe them.
type ExternalContact struct {
	ExternalUserID string `json:"external_userid"`
	Name           string `json:"name"`
	Position       string `json:"position,omitempty"`
	Avatar         string `json:"avatar"`
	CorpName       string `json:"corp_name,omitempty"`
	CorpFullName   string `json:"corp_full_name,omitempty"`
	// Type is CustomerWeChat or CustomerWeCom.
	Type int `json:"type"`
	// Gender is 0 unknown, 1 male, 2 female. It is a number here, although
	// user/get answers a string.
	Gender int `json:"gender"`
	// UnionID is the customer's WeChat unionid, for a WeChat user of an app
	// bound to a WeChat Open Platform account.
	UnionID string `json:"unionid,omitempty"`
	// ExternalProfile is the customer's public profile, as WeCom sends it
	// (an object whose shape varies).
	ExternalProfile json.RawMessage `json:"external_profile,omitempty"`
}

// The kinds of customer (ExternalContact.Type).
const (
	CustomerWeChat = 1 // a WeChat user
	CustomerWeCom  = 2 // a member of another WeCom corp
)

// Follow is what a member has with a customer: when and how they were
// added, the member's notes, and the corp tags the member marked.
type Follow struct {
	UserID      string `json:"userid"`
	Remark      string `json:"remark"`
	Description string `json:"description"`
	// CreateTime is when the member added the customer, in unix seconds.
	CreateTime     int64    `json:"createtime"`
	RemarkCorpName string   `json:"remark_corp_name,omitempty"`
	RemarkMobiles  []string `json:"remark_mobiles,omitempty"`
	OperUserID     string   `json:"oper_userid"`
	// AddWay says how the customer was added (1 QR code, 2 phone number,
	// ...; see document/path/92114).
	AddWay int `json:"add_way"`
	// State is the state parameter of the contact way ("联系我") used.
	State string `json:"state,omitempty"`
	// WeChatChannels is the WeChat Channels (视频号) account the customer
	// came through, if any.
	WeChatChannels *WeChatChannels `json:"wechat_channels,omitempty"`
	// TagIDs are the ids of the corp tags marked on the customer.
	// Customers.Get fills it from Tags; Customers.ByMembers has only ids.
	TagIDs []string `json:"tag_id,omitempty"`
	// Tags are the tags marked on the customer, corp tags and others, as
	// Customers.Get answers them; nil from Customers.ByMembers.
	Tags []FollowTag `json:"tags,omitempty"`
}

// WeChatChannels is a WeChat Channels (视频号) account, as Follow names it.
type WeChatChannels struct {
	Nickname string `json:"nickname"`
	// Source is 0 unknown, 1 the account's shop, 2 the account itself (a
	// number, although some SDKs typed it as a string).
	Source int `json:"source"`
}

// FollowTag is a tag marked on a customer, as externalcontact/get answers
// it.
type FollowTag struct {
	GroupName string `json:"group_name"`
	TagName   string `json:"tag_name"`
	TagID     string `json:"tag_id,omitempty"`
	// Type is 1 for a corp tag, 2 for a member's own tag, 3 for a rule
	// group's tag.
	Type int `json:"type"`
}

// CustomerDetail is a customer and every member who has them.
type CustomerDetail struct {
	ExternalContact
	// FollowUsers are the members who have the customer, as far as the app
	// can see them: all of them, however many pages WeCom answered.
	FollowUsers []Follow
}

type customerGetAnswer struct {
	ExternalContact ExternalContact `json:"external_contact"`
	FollowUser      []Follow        `json:"follow_user"`
	NextCursor      string          `json:"next_cursor"`
}

// Get returns a customer and every member who has them
// (externalcontact/get, document/path/92114). WeCom answers the followers
// 500 at a time; Get reads every page.
func (s *CustomerService) Get(ctx context.Context, externalUserID string) (*CustomerDetail, error) {
	if externalUserID == "" {
		return nil, invalid("external_userid", "required")
	}
	var d *CustomerDetail
	for f, err := range walk(ctx, func(ctx context.Context, cursor string) (page[Follow], error) {
		q := url.Values{"external_userid": {externalUserID}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var out customerGetAnswer
		if err := s.p.perform(ctx, &call{id: catalog.CustomerGet, query: q, out: &out}); err != nil {
			return page[Follow]{}, err
		}
		if d == nil {
			d = &CustomerDetail{ExternalContact: out.ExternalContact, FollowUsers: []Follow{}}
		}
		return page[Follow]{items: out.FollowUser, next: out.NextCursor}, nil
	}) {
		if err != nil {
			return nil, err
		}
		for _, t := range f.Tags {
			if t.Type == 1 && t.TagID != "" && !slices.Contains(f.TagIDs, t.TagID) {
				f.TagIDs = append(f.TagIDs, t.TagID)
			}
		}
		d.FollowUsers = append(d.FollowUsers, f)
	}
	return d, nil
}

// The limits of externalcontact/batch/get_by_user (document/path/96316).
const (
	// MaxBatchUsers is the most members one call names; ByMembers splits
	// longer lists.
	MaxBatchUsers = catalog.BatchUserIDs
	// MaxBatchLimit is the most pairs one call answers.
	MaxBatchLimit = catalog.BatchLimit
)

// MemberCustomer is one customer of one member, as
// externalcontact/batch/get_by_user answers them: Follow.UserID is the
// member, Follow.TagIDs their tags' ids (Follow.Tags is nil).
type MemberCustomer struct {
	Contact ExternalContact `json:"external_contact"`
	Follow  Follow          `json:"follow_info"`
}

type batchRequest struct {
	UserIDs []string `json:"userid_list"`
	Cursor  string   `json:"cursor,omitempty"`
	Limit   int      `json:"limit"`
}

type batchAnswer struct {
	List       []MemberCustomer `json:"external_contact_list"`
	NextCursor string           `json:"next_cursor"`
	FailInfo   struct {
		Unlicensed []string `json:"unlicensed_userid_list"`
	} `json:"fail_info"`
}

// ErrUnlicensedMembers matches the *UnlicensedError that ends a walk which
// could not read some members' customers.
var ErrUnlicensedMembers = errors.New("wecom: members without a license")

// UnlicensedError says which members' customers WeCom would not list, as
// they hold no license (fail_info.unlicensed_userid_list).
type UnlicensedError struct {
	UserIDs []string
}

// Error names the members.
func (e *UnlicensedError) Error() string {
	return fmt.Sprintf("wecom: the customers of %d members without a license were not listed: %s",
		len(e.UserIDs), strings.Join(e.UserIDs, ", "))
}

// Is reports whether target is ErrUnlicensedMembers.
func (e *UnlicensedError) Is(target error) bool { return target == ErrUnlicensedMembers }

// ByMembers walks every customer of every member of userIDs, as (member,
// customer) pairs, through externalcontact/batch/get_by_user
// (document/path/96316): the members in calls of MaxBatchUsers, each call's
// pages MaxBatchLimit pairs at a time, fetched as the loop asks for them.
//
// Every pair is yielded once, in WeCom's order; a customer of two members
// comes once for each. A member named twice (userids compare without case)
// is walked once. The walk stops when the loop breaks, at the first
// error (yielded once, with the zero pair), and when ctx ends between pages.
// When WeCom could not list some members for want of a license, the last
// thing yielded is an *UnlicensedError naming them.
func (s *CustomerService) ByMembers(ctx context.Context, userIDs []string) iter.Seq2[MemberCustomer, error] {
	return func(yield func(MemberCustomer, error) bool) {
		if i := slices.Index(userIDs, ""); i >= 0 {
			yield(MemberCustomer{}, invalid("userid_list", "userid %d is empty", i))
			return
		}
		userIDs := distinctUserIDs(userIDs)
		var unlicensed []string
		seen := make(map[string]bool)
		for i := range (len(userIDs) + MaxBatchUsers - 1) / MaxBatchUsers {
			members := chunk(userIDs, i, MaxBatchUsers)
			fetch := func(ctx context.Context, cursor string) (page[MemberCustomer], error) {
				var out batchAnswer
				err := s.p.perform(ctx, &call{id: catalog.CustomerBatch, out: &out,
					body: batchRequest{UserIDs: members, Cursor: cursor, Limit: MaxBatchLimit}})
				if err != nil {
					return page[MemberCustomer]{}, err
				}
				for _, u := range out.FailInfo.Unlicensed {
					if !seen[u] {
						seen[u] = true
						unlicensed = append(unlicensed, u)
					}
				}
				return page[MemberCustomer]{items: out.List, next: out.NextCursor}, nil
			}
			for mc, err := range walk(ctx, fetch) {
				if !yield(mc, err) || err != nil {
					return
				}
			}
		}
		if len(unlicensed) > 0 {
			yield(MemberCustomer{}, &UnlicensedError{UserIDs: unlicensed})
		}
	}
}
