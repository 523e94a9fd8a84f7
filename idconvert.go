package wecom

import (
	"context"
	"errors"

	"github.com/wecomkit/wecom/catalog"
)

// The id translations (ID转换接口) of a corp's access
// token, which a third-party app or a provider's custom app needs since
// 2022: WeCom hands a third party ids of its own (open_userid, a new
// external_userid), and these give them for the corp's.

// MaxIDsPerConversion is the most ids userid_to_openuserid and
// get_new_external_userid take in one call.
const MaxIDsPerConversion = 1000

// OpenUserIDs is the answer of Users.ToOpenUserIDs.
type OpenUserIDs struct {
	// ByUserID maps each userid translated to its open_userid.
	ByUserID map[string]string
	// Invalid are the userids WeCom did not translate.
	Invalid []string
}

// ToOpenUserIDs translates members' userids into the open_userids the
// provider sees them by (batch/userid_to_openuserid, document/path/97062),
// at most MaxIDsPerConversion a call.
func (s *UserService) ToOpenUserIDs(ctx context.Context, userIDs []string) (*OpenUserIDs, error) {
	if err := conversionSize("userid_list", len(userIDs)); err != nil {
		return nil, err
	}
	out, err := answerOf[struct {
		List []struct {
			UserID     string `json:"userid"`
			OpenUserID string `json:"open_userid"`
		} `json:"open_userid_list"`
		Invalid []string `json:"invalid_userid_list"`
	}](ctx, s.p, catalog.UserIDToOpenUserID, map[string][]string{"userid_list": userIDs})
	if err != nil {
		return nil, err
	}
	r := &OpenUserIDs{ByUserID: make(map[string]string, len(out.List)), Invalid: out.Invalid}
	for _, u := range out.List {
		r.ByUserID[u.UserID] = u.OpenUserID
	}
	return r, nil
}

// conversionSize checks the number of ids of a translation.
func conversionSize(field string, n int) error {
	if n == 0 || n > MaxIDsPerConversion {
		return invalid(field, "%d ids, not in 1 to %d", n, MaxIDsPerConversion)
	}
	return nil
}

// NewExternalUserIDs translates customers' external_userids, as the corp
// knew them, into those the app sees them by since the 2022 upgrade
// (externalcontact/get_new_external_userid, document/path/97107), at most
// MaxIDsPerConversion a call: a map from each old id translated to its new
// one.
func (s *CustomerService) NewExternalUserIDs(ctx context.Context, externalUserIDs []string) (map[string]string, error) {
	if err := conversionSize("external_userid_list", len(externalUserIDs)); err != nil {
		return nil, err
	}
	out, err := answerOf[struct {
		Items []struct {
			ExternalUserID    string `json:"external_userid"`
			NewExternalUserID string `json:"new_external_userid"`
		} `json:"items"`
	}](ctx, s.p, catalog.NewExternalUserID, map[string][]string{"external_userid_list": externalUserIDs})
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(out.Items))
	for _, it := range out.Items {
		m[it.ExternalUserID] = it.NewExternalUserID
	}
	return m, nil
}

// UnionIDRequest names a WeChat user by its unionid and openid.
type UnionIDRequest struct {
	UnionID string `json:"unionid"`
	OpenID  string `json:"openid"`
	// SubjectType is the subject the unionid belongs to: 0 the corp's,
	// 1 the provider's.
	SubjectType int `json:"subject_type"`
}

// UnionIDCustomer is a WeChat user as the corp's customers know it.
type UnionIDCustomer struct {
	// ExternalUserID is the customer's id, when the user is one.
	ExternalUserID string `json:"external_userid"`
	// PendingID names the user until it becomes a customer, when it is
	// not one yet.
	PendingID string `json:"pending_id"`
}

func (c *UnionIDCustomer) validate() error {
	if c.ExternalUserID == "" && c.PendingID == "" {
		return errors.New("neither external_userid nor pending_id")
	}
	return nil
}

// FromUnionID finds the customer a WeChat user is
// (externalcontact/unionid_to_external_userid, document/path/93274).
func (s *CustomerService) FromUnionID(ctx context.Context, r UnionIDRequest) (*UnionIDCustomer, error) {
	if r.UnionID == "" || r.OpenID == "" {
		return nil, invalid("unionid and openid", "both required")
	}
	return answerOf[UnionIDCustomer](ctx, s.p, catalog.UnionIDToExternalUserID, r)
}
