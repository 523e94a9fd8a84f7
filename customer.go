package wecom

import (
	"context"
	"errors"
	"net/url"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// CustomerService calls the customer contact (客户联系) APIs about customers
// themselves. Edits of one customer (Remark here, CustomerTags.Mark) are
// serialised across those APIs and every client sharing the limiter: WeCom
// refuses two at once (see catalog.RuleCustomer).
type CustomerService service

// RemarkRequest sets what a member notes about one of their customers. A
// field left empty is left unchanged; at least one must be set.
type RemarkRequest struct {
	// UserID is the member, ExternalUserID the customer.
	UserID         string `json:"userid"`
	ExternalUserID string `json:"external_userid"`
	// Remark is the customer's name as the member notes it, at most 20
	// characters.
	Remark string `json:"remark,omitempty"`
	// Description is at most 150 characters.
	Description string `json:"description,omitempty"`
	// RemarkCompany is the customer's company, at most 20 characters; only
	// for customers who are WeChat users.
	RemarkCompany string `json:"remark_company,omitempty"`
	// RemarkMobiles replaces the noted phone numbers; []string{""} clears
	// them.
	RemarkMobiles []string `json:"remark_mobiles,omitempty"`
	// RemarkPicMediaID is a business card picture uploaded with media/upload.
	RemarkPicMediaID string `json:"remark_pic_mediaid,omitempty"`
}

// The lengths WeCom allows in a RemarkRequest, in characters
// (document/path/96317).
const (
	MaxRemarkLen        = catalog.RemarkLen
	MaxDescriptionLen   = catalog.RemarkDescriptionLen
	MaxRemarkCompanyLen = catalog.RemarkCompanyLen
)

// Remark sets a member's notes on a customer (document/path/96317). At
// most 5 remark calls run at once per corp, and never one at the same time
// as another edit of the same customer.
func (s *CustomerService) Remark(ctx context.Context, req RemarkRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	return s.p.perform(ctx, &call{id: catalog.CustomerRemark, body: req})
}

func (r RemarkRequest) validate() error {
	switch {
	case r.UserID == "" || r.ExternalUserID == "":
		return invalid("customer", "userid and external_userid are required")
	case r.Remark == "" && r.Description == "" && r.RemarkCompany == "" && len(r.RemarkMobiles) == 0 && r.RemarkPicMediaID == "":
		return invalid("remark", "nothing to set")
	case utf8.RuneCountInString(r.Remark) > MaxRemarkLen:
		return invalid("remark", "%d characters, at most %d", utf8.RuneCountInString(r.Remark), MaxRemarkLen)
	case utf8.RuneCountInString(r.Description) > MaxDescriptionLen:
		return invalid("description", "%d characters, at most %d", utf8.RuneCountInString(r.Description), MaxDescriptionLen)
	case utf8.RuneCountInString(r.RemarkCompany) > MaxRemarkCompanyLen:
		return invalid("remark_company", "%d characters, at most %d", utf8.RuneCountInString(r.RemarkCompany), MaxRemarkCompanyLen)
	}
	return nil
}

// FollowUsers returns the members who have customers, as far as the app can
// see them (externalcontact/get_follow_user_list, document/path/92571).
func (s *CustomerService) FollowUsers(ctx context.Context) ([]string, error) {
	var out followUsersAnswer
	if err := s.p.perform(ctx, &call{id: catalog.FollowUserList, out: &out}); err != nil {
		return nil, err
	}
	return out.FollowUser, nil
}

type followUsersAnswer struct {
	FollowUser []string `json:"follow_user"`
}

// List returns the external_userid of every customer of member userID
// (externalcontact/list, document/path/96314; WeCom does not page it). A
// member with no customers gets an empty list: WeCom answers 84061
// (CodeNoCustomers) there, which is no failure.
func (s *CustomerService) List(ctx context.Context, userID string) ([]string, error) {
	if userID == "" {
		return nil, invalid("userid", "required")
	}
	var out customerListAnswer
	err := s.p.perform(ctx, &call{id: catalog.CustomerList, query: url.Values{"userid": {userID}}, out: &out})
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Code == CodeNoCustomers:
		return []string{}, nil
	case err != nil:
		return nil, err
	}
	if out.ExternalUserID == nil {
		return []string{}, nil
	}
	return out.ExternalUserID, nil
}

type customerListAnswer struct {
	ExternalUserID []string `json:"external_userid"`
}
