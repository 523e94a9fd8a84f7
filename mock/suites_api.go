package mock

import (
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// The handlers of a suite's endpoints (their corp is the suite's,
// suite:<id>) and of the id translations (a provider's corp for
// corpid_to_opencorpid, an authorizing corp's for the others).

// installedAgentID is the agentid of the suite's app in every corp that
// installs it.
const installedAgentID = 1000001

// setSessionInfo answers set_session_info: a pre_auth_code and a session.
func (c *corp) setSessionInfo(in *input) (any, *apiError) {
	var req struct {
		PreAuthCode string `json:"pre_auth_code"`
		Session     *struct {
			AuthType int `json:"auth_type"`
		} `json:"session_info"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.PreAuthCode == "" || req.Session == nil || req.Session.AuthType < 0 || req.Session.AuthType > 1 {
		return nil, errf(catalog.CodeInvalidParam, "invalid pre_auth_code or session_info")
	}
	return okStatus("ok"), nil
}

type authCorpInfo struct {
	CorpID   string `json:"corpid"`
	CorpName string `json:"corp_name"`
	CorpType string `json:"corp_type,omitempty"`
	UserMax  int    `json:"corp_user_max,omitempty"`
	WxQRCode string `json:"corp_wxqrcode,omitempty"`
}

type authUserInfo struct {
	UserID     string `json:"userid"`
	OpenUserID string `json:"open_userid"`
	Name       string `json:"name"`
}

type authAgent struct {
	AgentID   int    `json:"agentid"`
	Name      string `json:"name"`
	Privilege struct {
		Level      int   `json:"level"`
		AllowParty []int `json:"allow_party"`
	} `json:"privilege"`
}

type authAgents struct {
	Agent []authAgent `json:"agent"`
}

// permanentV2 is v2/get_permanent_code's answer; v1 adds the corp's token
// and its apps.
type permanentV2 struct {
	status
	PermanentCode string       `json:"permanent_code"`
	Corp          authCorpInfo `json:"auth_corp_info"`
	User          authUserInfo `json:"auth_user_info"`
}

type permanentV1 struct {
	permanentV2
	AccessToken string     `json:"access_token"`
	ExpiresIn   int        `json:"expires_in"`
	AuthInfo    authAgents `json:"auth_info"`
}

// install spends the auth code of in's body: the corp installed and its
// permanent code. s.mu is held (as by every handler).
func (c *corp) install(in *input) (string, string, *apiError) {
	var req struct {
		AuthCode string `json:"auth_code"`
	}
	if err := in.decode(&req); err != nil {
		return "", "", err
	}
	b := c.suite
	if b == nil {
		return "", "", errf(catalog.CodeInvalidAuthCode, "invalid auth_code")
	}
	ac, ok := b.authCodes[req.AuthCode]
	if !ok || !in.now.Before(ac.expires) {
		return "", "", errf(catalog.CodeInvalidAuthCode, "invalid auth_code")
	}
	delete(b.authCodes, req.AuthCode)
	code := b.permanent[ac.corp]
	if code == "" {
		code = "pc" + newTokenValue()[:40]
		b.permanent[ac.corp] = code
	}
	return ac.corp, code, nil
}

func (c *corp) permanentAnswer(corpID, code string) permanentV2 {
	return permanentV2{status: okStatus("ok"), PermanentCode: code, Corp: authCorpInfo{CorpID: corpID, CorpName: "corp " + corpID},
		User: authUserInfo{UserID: "admin", OpenUserID: opaque("wo", c.id, corpID+"\x00admin"), Name: "admin"}}
}

// permanentCodeV2 answers v2/get_permanent_code: no token, no apps.
func (c *corp) permanentCodeV2(in *input) (any, *apiError) {
	corpID, code, err := c.install(in)
	if err != nil {
		return nil, err
	}
	return c.permanentAnswer(corpID, code), nil
}

// permanentCodeV1 answers get_permanent_code: the corp's token and apps
// too.
func (c *corp) permanentCodeV1(in *input) (any, *apiError) {
	corpID, code, err := c.install(in)
	if err != nil {
		return nil, err
	}
	a := permanentV1{permanentV2: c.permanentAnswer(corpID, code), AuthInfo: c.agents()}
	a.Corp = c.fullCorp(corpID, false)
	tok := c.suite.corpToken(corpID, in.now)
	a.AccessToken, a.ExpiresIn = tok.value, int(tok.expires.Sub(in.now)/time.Second)
	return a, nil
}

func (c *corp) fullCorp(corpID string, qr bool) authCorpInfo {
	info := authCorpInfo{CorpID: corpID, CorpName: "corp " + corpID, CorpType: "verified", UserMax: 200}
	if qr {
		info.WxQRCode = "https://open.work.weixin.qq.com/qr/" + corpID
	}
	return info
}

func (c *corp) agents() authAgents {
	a := authAgent{AgentID: installedAgentID, Name: "app of " + c.id}
	a.Privilege.Level, a.Privilege.AllowParty = 1, []int{1}
	return authAgents{Agent: []authAgent{a}}
}

// installRef names an installation in a body: the corp, and its
// permanent code or the app.
type installRef struct {
	CorpID string `json:"auth_corpid"`
	Code   string `json:"permanent_code"`
	Agent  int    `json:"agentid"`
}

// installed decodes the installation in's body names, of a corp that
// installed the suite.
func (c *corp) installed(in *input) (installRef, *apiError) {
	var r installRef
	if err := in.decode(&r); err != nil {
		return r, err
	}
	if c.suite == nil || r.CorpID == "" || c.suite.permanent[r.CorpID] == "" {
		return r, errf(catalog.CodeInvalidCorpID, "invalid auth_corpid")
	}
	return r, nil
}

// withCode checks the permanent code of the installation in's body names.
func (c *corp) withCode(in *input) (string, *apiError) {
	r, err := c.installed(in)
	if err == nil && c.suite.permanent[r.CorpID] != r.Code {
		err = errf(catalog.CodeInvalidPermanentCode, "invalid permanent_code")
	}
	return r.CorpID, err
}

type authInfoAnswer struct {
	status
	Corp     authCorpInfo `json:"auth_corp_info"`
	AuthInfo authAgents   `json:"auth_info"`
}

func (c *corp) authInfo(in *input, qr bool) (any, *apiError) {
	corpID, err := c.withCode(in)
	if err != nil {
		return nil, err
	}
	return authInfoAnswer{status: okStatus("ok"), Corp: c.fullCorp(corpID, qr), AuthInfo: c.agents()}, nil
}

// authInfoV1 answers get_auth_info, with the corp's plugin QR code.
func (c *corp) authInfoV1(in *input) (any, *apiError) { return c.authInfo(in, true) }

// authInfoV2 answers v2/get_auth_info, without it.
func (c *corp) authInfoV2(in *input) (any, *apiError) { return c.authInfo(in, false) }

// corpToken answers get_corp_token, without errcode as WeCom does.
func (c *corp) corpToken(in *input) (any, *apiError) {
	corpID, err := c.withCode(in)
	if err != nil {
		return nil, err
	}
	tok := c.suite.corpToken(corpID, in.now)
	return map[string]any{"access_token": tok.value, "expires_in": int(tok.expires.Sub(in.now) / time.Second)}, nil
}

// adminList answers get_admin_list: the installer, a manager.
func (c *corp) adminList(in *input) (any, *apiError) {
	r, err := c.installed(in)
	if err == nil && r.Agent != installedAgentID {
		err = errf(catalog.CodeInvalidParam, "invalid agentid")
	}
	if err != nil {
		return nil, err
	}
	type admin struct {
		UserID     string `json:"userid"`
		OpenUserID string `json:"open_userid"`
		AuthType   int    `json:"auth_type"`
	}
	return struct {
		status
		Admin []admin `json:"admin"`
	}{okStatus("ok"), []admin{{"admin", opaque("wo", c.id, r.CorpID+"\x00admin"), 1}}}, nil
}

// openCorpID answers corpid_to_opencorpid for a provider.
func (c *corp) openCorpID(in *input) (any, *apiError) {
	var req struct {
		CorpID string `json:"corpid"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.CorpID == "" {
		return nil, errf(catalog.CodeInvalidCorpID, "invalid corpid")
	}
	return struct {
		status
		OpenCorpID string `json:"open_corpid"`
	}{okStatus("ok"), opaque("wp", c.id, req.CorpID)}, nil
}

// idList decodes the list of ids field of in's body: 1 to 1000.
func idList(in *input, field string) ([]string, *apiError) {
	var req map[string][]string
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	ids := req[field]
	if len(ids) == 0 || len(ids) > 1000 {
		return nil, errf(catalog.CodeInvalidParam, "invalid %s", field)
	}
	return ids, nil
}

// openUserIDs answers batch/userid_to_openuserid: the corp's members get
// an open_userid of the app's provider; the others are invalid.
func (c *corp) openUserIDs(in *input) (any, *apiError) {
	ids, err := idList(in, "userid_list")
	if err != nil {
		return nil, err
	}
	type pair struct {
		UserID     string `json:"userid"`
		OpenUserID string `json:"open_userid"`
	}
	var out struct {
		status
		List    []pair   `json:"open_userid_list"`
		Invalid []string `json:"invalid_userid_list,omitempty"`
	}
	out.status = okStatus("ok")
	for _, id := range ids {
		if !c.users[id] && c.member(id) == nil {
			out.Invalid = append(out.Invalid, id)
			continue
		}
		out.List = append(out.List, pair{id, opaque("wo", in.app, c.id+"\x00"+id)})
	}
	return out, nil
}

// newExternalUserIDs answers get_new_external_userid.
func (c *corp) newExternalUserIDs(in *input) (any, *apiError) {
	ids, err := idList(in, "external_userid_list")
	if err != nil {
		return nil, err
	}
	type item struct {
		Old string `json:"external_userid"`
		New string `json:"new_external_userid"`
	}
	items := make([]item, len(ids))
	for i, id := range ids {
		items[i] = item{id, opaque("wm", in.app, c.id+"\x00"+id)}
	}
	return struct {
		status
		Items []item `json:"items"`
	}{okStatus("ok"), items}, nil
}

// unionIDToExternalUserID answers unionid_to_external_userid: the same
// external_userid for the same unionid every time.
func (c *corp) unionIDToExternalUserID(in *input) (any, *apiError) {
	var req struct {
		UnionID     string `json:"unionid"`
		OpenID      string `json:"openid"`
		SubjectType int    `json:"subject_type"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.UnionID == "" || req.OpenID == "" || req.SubjectType < 0 || req.SubjectType > 1 {
		return nil, errf(catalog.CodeInvalidParam, "invalid unionid, openid or subject_type")
	}
	return struct {
		status
		ExternalUserID string `json:"external_userid"`
	}{okStatus("ok"), opaque("wm", in.app, c.id+"\x00union\x00"+req.UnionID)}, nil
}
