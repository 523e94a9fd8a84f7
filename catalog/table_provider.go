package catalog

import "net/http"

// The third-party endpoints (第三方应用, 服务商): a suite's token and what it
// calls (an authorizing corp's installation, permanent code, details,
// admins and access token), a service provider's token and what it calls
// (web logins, the corp id a provider sees), and the id translations an
// authorized corp's access token calls since 2022, when WeCom began handing
// third parties ids of their own (open_userid, the new external_userid).
const (
	GetSuiteToken  ID = "/cgi-bin/service/get_suite_token"
	GetPreAuthCode ID = "/cgi-bin/service/get_pre_auth_code"
	SetSessionInfo ID = "/cgi-bin/service/set_session_info"
	// get_permanent_code answers the corp's access token and its agents;
	// v2 answers neither (get_corp_token and v2/get_auth_info do).
	GetPermanentCode   ID = "/cgi-bin/service/get_permanent_code"
	GetPermanentCodeV2 ID = "/cgi-bin/service/v2/get_permanent_code"
	GetAuthInfo        ID = "/cgi-bin/service/get_auth_info"
	GetAuthInfoV2      ID = "/cgi-bin/service/v2/get_auth_info"
	GetCorpToken       ID = "/cgi-bin/service/get_corp_token"
	GetAdminList       ID = "/cgi-bin/service/get_admin_list"

	GetProviderToken   ID = "/cgi-bin/service/get_provider_token"
	GetLoginInfo       ID = "/cgi-bin/service/get_login_info"
	CorpIDToOpenCorpID ID = "/cgi-bin/service/corpid_to_opencorpid"

	UserIDToOpenUserID      ID = "/cgi-bin/batch/userid_to_openuserid"
	NewExternalUserID       ID = "/cgi-bin/externalcontact/get_new_external_userid"
	UnionIDToExternalUserID ID = "/cgi-bin/externalcontact/unionid_to_external_userid"
)

// providerEndpoints returns the third-party rows. WeCom documents no limit
// of their own (document/path/90454 lists none): the base ones hold, per
// suite or provider for the rows carrying their tokens (the client counts a
// suite's and a provider's calls under its id, as a corp's under the
// corp's). get_suite_token, get_provider_token and get_corp_token leave
// errcode out of a success (document/path/97162, 90605). A code (auth_code,
// pre_auth_code) serves once: the rows that spend one are not repeatable.
func providerEndpoints() []Endpoint {
	row := func(id ID, doc int, token Token, repeatable bool, sample string) Endpoint {
		return Endpoint{ID: id, Method: http.MethodPost, Doc: doc, Token: token, Repeatable: repeatable, Sample: sample, Rules: base()}
	}
	suiteToken := row(GetSuiteToken, 90600, NoToken, true, `{"suite_id":"wwddddccc7775555aaa","suite_secret":"SECRET","suite_ticket":"TICKET"}`)
	suiteToken.OmitsErrcode = true
	providerToken := row(GetProviderToken, 91200, NoToken, true, `{"corpid":"wwxxxxxxxxxxxxxxxx","provider_secret":"SECRET"}`)
	providerToken.OmitsErrcode = true
	corpToken := row(GetCorpToken, 90605, SuiteToken, true, `{"auth_corpid":"auth_corpid_value","permanent_code":"code_value"}`)
	corpToken.OmitsErrcode = true
	return []Endpoint{
		suiteToken,
		{ID: GetPreAuthCode, Method: http.MethodGet, Doc: 90601, Repeatable: true, Token: SuiteToken, Rules: base()},
		// Setting a pre-auth code's session again sets it the same way.
		row(SetSessionInfo, 90602, SuiteToken, true, `{"pre_auth_code":"xxxxx","session_info":{"appid":[1],"auth_type":1}}`),
		row(GetPermanentCode, 90603, SuiteToken, false, `{"auth_code":"auth_code_value"}`),
		row(GetPermanentCodeV2, 100776, SuiteToken, false, `{"auth_code":"auth_code_value"}`),
		row(GetAuthInfo, 90604, SuiteToken, true, `{"auth_corpid":"auth_corpid_value","permanent_code":"code_value"}`),
		row(GetAuthInfoV2, 100795, SuiteToken, true, `{"auth_corpid":"auth_corpid_value","permanent_code":"code_value"}`),
		corpToken,
		row(GetAdminList, 90606, SuiteToken, true, `{"auth_corpid":"auth_corpid_value","agentid":1000046}`),
		providerToken,
		// A login's auth_code serves once.
		row(GetLoginInfo, 91125, ProviderToken, false, `{"auth_code":"xxxxx"}`),
		row(CorpIDToOpenCorpID, 95604, ProviderToken, true, `{"corpid":"wwxxxxxxxxxxxxxxxx"}`),
		row(UserIDToOpenUserID, 97062, CorpToken, true, `{"userid_list":["zhangsan","lisi"]}`),
		row(NewExternalUserID, 97107, CorpToken, true, `{"external_userid_list":["wmAAAAAAA","wmBBBBBB"]}`),
		row(UnionIDToExternalUserID, 93274, CorpToken, true, `{"unionid":"oAAAAAAA","openid":"oBBBBB","subject_type":1}`),
	}
}
