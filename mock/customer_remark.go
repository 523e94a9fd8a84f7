package mock

import (
	"slices"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// Remark is what a member noted about a customer (externalcontact/remark),
// as held by a Server.
type Remark struct {
	Remark        string
	Description   string
	RemarkCompany string
	RemarkMobiles []string // nil when none
	PicMediaID    string
}

// remarkRequest is externalcontact/remark's body. Absent fields (nil) are
// left unchanged.
type remarkRequest struct {
	UserID         string    `json:"userid"`
	ExternalUserID string    `json:"external_userid"`
	Remark         *string   `json:"remark"`
	Description    *string   `json:"description"`
	RemarkCompany  *string   `json:"remark_company"`
	RemarkMobiles  *[]string `json:"remark_mobiles"`
	PicMediaID     *string   `json:"remark_pic_mediaid"`
}

// The lengths externalcontact/remark allows, in characters
// (document/path/96317).
const (
	maxRemark        = catalog.RemarkLen
	maxDescription   = catalog.RemarkDescriptionLen
	maxRemarkCompany = catalog.RemarkCompanyLen
)

// CustomerRemark registers a customer's remark.
func (handlerSets) CustomerRemark() handlers {
	return handlers{
		catalog.CustomerRemark: (*corp).remark,
	}
}

// remark sets a member's notes on a customer. remark_mobiles replaces the
// list, and [""] clears it.
func (c *corp) remark(in *input) (any, *apiError) {
	var req remarkRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	long := func(p *string, n int) bool { return p != nil && utf8.RuneCountInString(*p) > n }
	switch {
	case req.UserID == "":
		return nil, errf(catalog.CodeUserIDMissing, "missing userid")
	case req.ExternalUserID == "":
		return nil, errf(catalog.CodeInvalidExternalUserID, "invalid external userid")
	case req.Remark == nil && req.Description == nil && req.RemarkCompany == nil && req.RemarkMobiles == nil && req.PicMediaID == nil:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, nothing to remark")
	case long(req.Remark, maxRemark), long(req.Description, maxDescription), long(req.RemarkCompany, maxRemarkCompany):
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, remark too long")
	}
	key := markKey{req.UserID, req.ExternalUserID}
	r := c.remarks[key]
	set := func(to *string, from *string) {
		if from != nil {
			*to = *from
		}
	}
	set(&r.Remark, req.Remark)
	set(&r.Description, req.Description)
	set(&r.RemarkCompany, req.RemarkCompany)
	set(&r.PicMediaID, req.PicMediaID)
	if req.RemarkMobiles != nil {
		r.RemarkMobiles = slices.DeleteFunc(slices.Clone(*req.RemarkMobiles), func(m string) bool { return m == "" })
		if len(r.RemarkMobiles) == 0 {
			r.RemarkMobiles = nil
		}
	}
	c.remarks[key] = r
	// WeCom tells the customer-contact receiver of a member's edit of a
	// customer's remark (document/path/92130, edit_external_contact).
	in.emit("change_external_contact", "edit_external_contact", text("UserID", req.UserID), text("ExternalUserID", req.ExternalUserID))
	return okStatus("ok"), nil
}

// Remark returns what member userID noted about customer externalUserID in
// corp corpID, and whether anything was.
func (s *Server) Remark(corpID, userID, externalUserID string) (Remark, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return Remark{}, false
	}
	r, ok := c.remarks[markKey{userID, externalUserID}]
	r.RemarkMobiles = slices.Clone(r.RemarkMobiles)
	return r, ok
}
