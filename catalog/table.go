package catalog

import (
	"net/http"
	"slices"
)

// The endpoints the SDK wraps. Each is declared in Endpoints, and only
// there.
const (
	GetToken       ID = "/cgi-bin/gettoken"
	TagCreate      ID = "/cgi-bin/tag/create"
	TagUpdate      ID = "/cgi-bin/tag/update"
	TagDelete      ID = "/cgi-bin/tag/delete"
	TagGet         ID = "/cgi-bin/tag/get"
	TagAddUsers    ID = "/cgi-bin/tag/addtagusers"
	TagDelUsers    ID = "/cgi-bin/tag/deltagusers"
	TagList        ID = "/cgi-bin/tag/list"
	CorpTagList    ID = "/cgi-bin/externalcontact/get_corp_tag_list"
	CorpTagAdd     ID = "/cgi-bin/externalcontact/add_corp_tag"
	CorpTagEdit    ID = "/cgi-bin/externalcontact/edit_corp_tag"
	CorpTagDel     ID = "/cgi-bin/externalcontact/del_corp_tag"
	MarkTag        ID = "/cgi-bin/externalcontact/mark_tag"
	CustomerRemark ID = "/cgi-bin/externalcontact/remark"
	FollowUserList ID = "/cgi-bin/externalcontact/get_follow_user_list"
	CustomerList   ID = "/cgi-bin/externalcontact/list"
	CustomerGet    ID = "/cgi-bin/externalcontact/get"
	CustomerBatch  ID = "/cgi-bin/externalcontact/batch/get_by_user"
	SendWelcomeMsg ID = "/cgi-bin/externalcontact/send_welcome_msg"
)

// The customer transfer (客户继承) endpoints: on-job (在职继承) and resigned
// (离职继承) members' customers handed over to another member, and the state of
// those handovers.
const (
	TransferCustomer         ID = "/cgi-bin/externalcontact/transfer_customer"
	TransferResult           ID = "/cgi-bin/externalcontact/transfer_result"
	ResignedTransferCustomer ID = "/cgi-bin/externalcontact/resigned/transfer_customer"
	ResignedTransferResult   ID = "/cgi-bin/externalcontact/resigned/transfer_result"
)

// The credential endpoints other than gettoken: the JS-SDK tickets of a
// corp and of an app (the third-party endpoints are in table_provider.go).
const (
	JSAPITicket ID = "/cgi-bin/get_jsapi_ticket"
	AgentTicket ID = "/cgi-bin/ticket/get"
)

// The sign-in (身份验证) endpoints: who the code of an OAuth sign-in inside
// WeCom (网页授权登录) or of the web login (企业微信Web登录) signed in, and the
// sensitive fields a member let the app read with the user_ticket of a
// snsapi_privateinfo sign-in.
const (
	AuthGetUserInfo   ID = "/cgi-bin/auth/getuserinfo"
	AuthGetUserDetail ID = "/cgi-bin/auth/getuserdetail"
)

// GroupJSAPITicket is the group of the JS-SDK ticket APIs, whose fetches
// count together per app.
const GroupJSAPITicket = "jsapi-ticket"

// The media (素材) endpoints: a temporary file uploaded for three days, and
// a file downloaded by its media_id.
const (
	MediaUpload ID = "/cgi-bin/media/upload"
	MediaGet    ID = "/cgi-bin/media/get"
)

// The other media endpoints: an image uploaded for a permanent URL, a file
// of up to 200 MB that WeCom fetches from a URL in a job of its own and the
// job's result, and the voice a JS-SDK page uploaded.
const (
	MediaUploadImage       ID = "/cgi-bin/media/uploadimg"
	MediaUploadByURL       ID = "/cgi-bin/media/upload_by_url"
	MediaUploadByURLResult ID = "/cgi-bin/media/get_upload_by_url_result"
	MediaGetJSSDK          ID = "/cgi-bin/media/get/jssdk"
)

// The customer group chat (客户群) endpoints: the groups the app can see, one
// group's members, and handing the groups of a member who left to another.
const (
	GroupChatList     ID = "/cgi-bin/externalcontact/groupchat/list"
	GroupChatGet      ID = "/cgi-bin/externalcontact/groupchat/get"
	GroupChatTransfer ID = "/cgi-bin/externalcontact/groupchat/transfer"
)

// The sample bodies of the transfer endpoints, on-job and resigned alike.
const (
	transferSample       = `{"handover_userid":"zhangsan","takeover_userid":"lisi","external_userid":["woAJ2GCAAAXtWyujaWJHDDGi0mACH71w"]}`
	transferResultSample = `{"handover_userid":"zhangsan","takeover_userid":"lisi"}`
)

// customerSubject is the resource of the customer-edit APIs.
const customerSubject = "customer (userid, external_userid)"

// The app message (应用消息) endpoints: a message sent, recalled, its
// template card updated, and the apps' sends counted.
const (
	MessageSend       ID = "/cgi-bin/message/send"
	MessageRecall     ID = "/cgi-bin/message/recall"
	MessageUpdateCard ID = "/cgi-bin/message/update_template_card"
	MessageStatistics ID = "/cgi-bin/message/get_statistics"
	// LinkedMessageSend sends an app message to members of linked corps
	// (互联企业) as well as the corp's own.
	LinkedMessageSend ID = "/cgi-bin/linkedcorp/message/send"
)

// The group robot (群机器人) endpoints: a message sent to the group chat of
// a robot's webhook, and a file uploaded for its file and voice messages.
// Their calls carry the robot's key (RobotKey), not an access token.
const (
	WebhookSend   ID = "/cgi-bin/webhook/send"
	WebhookUpload ID = "/cgi-bin/webhook/upload_media"
)

// The app group chat (群聊会话) endpoints: chats an app creates, changes,
// reads and posts to.
const (
	AppChatCreate ID = "/cgi-bin/appchat/create"
	AppChatUpdate ID = "/cgi-bin/appchat/update"
	AppChatGet    ID = "/cgi-bin/appchat/get"
	AppChatSend   ID = "/cgi-bin/appchat/send"
)

// GroupAppChat is the group of the per-member limits of app group chat
// messages, which count per corp and member.
const GroupAppChat = "appchat"

// GroupMessage is the group of the app message APIs, whose per-member
// limits count together per app.
const GroupMessage = "message"

// The names of the catalog's rules, for overrides.
const (
	// RuleInFlight caps the calls in flight per corp and API.
	RuleInFlight = "concurrency"
	// RulePerMinute and RulePerHour are WeCom's base limits per corp and
	// API.
	RulePerMinute = "minute"
	RulePerHour   = "hour"
	// RuleIPPerMinute and RuleIPPerHour are WeCom's base limits per source
	// IP and API.
	RuleIPPerMinute = "ip-minute"
	RuleIPPerHour   = "ip-hour"
	// RuleCustomer lets one call at a time edit a customer, across the APIs
	// of GroupCustomerEdit.
	RuleCustomer = "customer"
	// RuleTicketApp caps an app's JS-SDK ticket fetches.
	RuleTicketApp = "ticket-app"
	// RuleMedia lets one download of a media_id run at a time.
	RuleMedia = "media"
	// RuleMemberMinute and RuleMemberHour are an app's messages to one
	// member: 30 a minute and 1,000 an hour, beyond which WeCom drops them
	// without an error.
	RuleMemberMinute = "member-minute"
	RuleMemberHour   = "member-hour"
	// RuleRecipientDay is an app's daily quota of recipient-messages (see
	// MessageQuota).
	RuleRecipientDay = "recipient-day"
	// RuleRobotMinute is a group robot's 20 messages a minute.
	RuleRobotMinute = "robot-minute"
	// RuleChatMemberMinute and RuleChatMemberDay are the app messages one
	// member receives in app group chats: 200 a minute and 10,000 a CST
	// day, beyond which WeCom drops them without an error.
	RuleChatMemberMinute = "chat-member-minute"
	RuleChatMemberDay    = "chat-member-day"
	// RulePushMinute and RulePushHour are the person-messages app group
	// chats push per corp (a message to a chat of N members counts N):
	// 20,000 a minute and 300,000 an hour.
	RulePushMinute = "push-minute"
	RulePushHour   = "push-hour"
	// RulePerDay caps an API's calls per corp in a CST day (appchat/create:
	// 1,000); wecom.Limits.PerDay sets it.
	RulePerDay = "day"
	// RulePerMonth caps an API's calls per corp in a CST calendar month
	// (media/uploadimg: 3,000); wecom.Limits.PerMonth sets it.
	RulePerMonth = "month"
	// RuleFetch lets one token fetch at a time run per app: the client holds
	// it around looking in the token store, fetching and storing, so that a
	// process that waited finds the token another one fetched.
	RuleFetch = "fetch"
)

// GroupCustomerEdit is the group of the APIs that edit one customer: WeCom
// answers 45033 to two of them at once on one customer.
const GroupCustomerEdit = "customer-edit"

// Where the numbers come from.
const (
	srcFetch  = "official, document/path/91039: do not call gettoken frequently, or be throttled"
	srcBase   = "official, document/path/90312 and 90454 (2023-08-28)"
	srcIP     = "official, document/path/90454; staff: counted across all corps served from the IP"
	srcTags   = "staff answer: mark_tag at most 5 in flight (45033 beyond); the SDK applies it to every tag API"
	srcEdit   = "staff answer: two edits of one customer at once fail with 45033"
	srcMark   = "staff answer: mark_tag at most 5 in flight"
	srcBatch  = "community: 45033 reported on batch/get_by_user with no number given; the SDK assumes 5 in flight, as staff gave for mark_tag and remark"
	srcTicket = "official, document/path/96909 and 90454: jsapi tickets at most 400 an hour per corp and 100 an hour per app"
	srcMedia  = "official help for 45033 (wecom-api.md): fetching the same media_id repeatedly; one at a time is the SDK's assumption"
	srcMember = "official, document/path/90236 and 90454: an app sends one member at most 30 messages a minute and 1,000 an hour; beyond, they are discarded without error"
	srcQuota  = "official, document/path/90236: an app sends at most the corp's account limit x 200 recipient-messages a day; a message to 1,000 members counts 1,000"
	srcRobot  = "official, document/path/91770: each robot sends at most 20 messages a minute (WeCom answers 45009 beyond)"
	srcChat   = "official, document/path/90454: app group chats, at most 1,000 created a day and 1,000 changes an hour per corp"
	srcPush   = "official, document/path/90454: app group chat messages, at most 20,000 person-messages a minute and 300,000 an hour per corp (a message counts each member of its chat)"
	srcChatMb = "official, document/path/90454: a member receives at most 200 app messages a minute and 10,000 a day in groups; beyond, they are dropped without error. Counted per corp and member, across apps, as the page names no app"
	srcLinked = "official, document/path/90454 and 90236: an app sends one member at most 30 messages a minute and 1,000 an hour, dropped without error beyond; document/path/90250 does not say whether linked-corp messages count apart, so the SDK counts them with message/send's (inference), a linked member as corpid/userid"
	srcImage  = "official, document/path/90256 and 90454: uploadimg at most 3,000 images a month and 1,000 a day per corp; the day and the month taken as China Standard Time's, as WeCom's natural days are"
	srcRem    = "staff answer: remark at most 5 in flight (6 threads got 45033), developers.weixin.qq.com/community/enterprisewechat/doc/000ee4c8db8c00de438cfcece51400"
)

// Endpoints returns the catalog: every endpoint the SDK wraps, in a new
// slice the caller may keep or change.
func Endpoints() []Endpoint {
	return slices.Concat(endpoints(), contactEndpoints(), providerEndpoints())
}

// endpoints returns the rows declared in this file.
func endpoints() []Endpoint {
	tag := func(id ID, method string, doc int, repeatable bool, sample string) Endpoint {
		return Endpoint{ID: id, Method: method, Doc: doc, Repeatable: repeatable, Sample: sample,
			Rules: with(inFlight(RuleInFlight, 5, srcTags))}
	}
	return []Endpoint{
		{ID: GetToken, Method: http.MethodGet, Doc: 91039, Repeatable: true, Token: NoToken,
			Sample: "corpid=ww0a1b2c3d4e5f6a7b&corpsecret=SECRET",
			Rules:  with(Rule{Name: RuleFetch, Scope: ScopeApp, InFlight: 1, Source: srcFetch})},
		tag(TagCreate, http.MethodPost, 90210, false, `{"tagname":"UI","tagid":12}`),
		tag(TagUpdate, http.MethodPost, 90211, true, `{"tagid":12,"tagname":"UI design"}`),
		tag(TagDelete, http.MethodGet, 90212, true, "tagid=12"),
		tag(TagGet, http.MethodGet, 90213, true, "tagid=12"),
		tag(TagAddUsers, http.MethodPost, 90214, true, `{"tagid":12,"userlist":["zhangsan"],"partylist":[4]}`),
		tag(TagDelUsers, http.MethodPost, 90215, true, `{"tagid":12,"userlist":["zhangsan"],"partylist":[4]}`),
		tag(TagList, http.MethodGet, 90216, true, ""),
		tag(CorpTagList, http.MethodPost, 92117, true, `{"group_id":["etXXXXXXXXXX"]}`),
		tag(CorpTagAdd, http.MethodPost, 92117, false, `{"group_id":"etXXXXXXXXXX","tag":[{"name":"VIP"}]}`),
		tag(CorpTagEdit, http.MethodPost, 92117, true, `{"id":"etYYYYYYYYYY","name":"VIP"}`),
		tag(CorpTagDel, http.MethodPost, 92117, true, `{"tag_id":["etYYYYYYYYYY"]}`),
		{ID: MarkTag, Method: http.MethodPost, Doc: 92118, Repeatable: true, Resource: customerSubject, Keys: CustomerKeys,
			Sample: `{"userid":"zhangsan","external_userid":"woAJ2GCAAAXtWyujaWJHDDGi0mACH71w","add_tag":["etYYYYYYYYYY"]}`,
			Rules:  with(inFlight(RuleInFlight, 5, srcMark), customerEdit())},
		{ID: CustomerRemark, Method: http.MethodPost, Doc: 96317, Repeatable: true, Resource: customerSubject, Keys: CustomerKeys,
			Sample: `{"userid":"zhangsan","external_userid":"woAJ2GCAAAXtWyujaWJHDDGi0mACH71w","remark":"VIP"}`,
			Rules:  with(inFlight(RuleInFlight, 5, srcRem), customerEdit())},
		{ID: FollowUserList, Method: http.MethodGet, Doc: 92571, Repeatable: true, Rules: base()},
		{ID: CustomerList, Method: http.MethodGet, Doc: 96314, Repeatable: true, Sample: "userid=zhangsan", Rules: base()},
		{ID: CustomerGet, Method: http.MethodGet, Doc: 92114, Repeatable: true, Sample: "external_userid=woAJ2GCAAAXtWyujaWJHDDGi0mACH71w", Rules: base()},
		{ID: CustomerBatch, Method: http.MethodPost, Doc: 96316, Repeatable: true, Sample: `{"userid_list":["zhangsan"],"limit":100}`,
			Rules: with(inFlight(RuleInFlight, 5, srcBatch))},

		// A welcome_code serves once (document/path/92137): a welcome sent
		// again fails, whether the first went through or not. Not
		// repeatable.
		{ID: SendWelcomeMsg, Method: http.MethodPost, Doc: 92137,
			Sample: `{"welcome_code":"CALLBACK_CODE","text":{"content":"hello"}}`, Rules: base()},

		// Transfers are not repeatable: an on-job one sent twice may count
		// twice against WeCom's 2 transfers of a customer per 90 days
		// (document/path/92125; a cap no Rule expresses, answered per
		// customer with 40128), and a repeat of either kind would report
		// customers it had just handed over as pending (40129).
		{ID: TransferCustomer, Method: http.MethodPost, Doc: 92125, Sample: transferSample, Rules: base()},
		{ID: TransferResult, Method: http.MethodPost, Doc: 94088, Repeatable: true, Sample: transferResultSample, Rules: base()},
		{ID: ResignedTransferCustomer, Method: http.MethodPost, Doc: 94081, Sample: transferSample, Rules: base()},
		{ID: ResignedTransferResult, Method: http.MethodPost, Doc: 94082, Repeatable: true, Sample: transferResultSample, Rules: base()},

		{ID: GroupChatList, Method: http.MethodPost, Doc: 93414, Repeatable: true,
			Sample: `{"status_filter":0,"owner_filter":{"userid_list":["zhangsan"]},"limit":10}`, Rules: base()},
		{ID: GroupChatGet, Method: http.MethodPost, Doc: 96338, Repeatable: true,
			Sample: `{"chat_id":"wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA","need_name":1}`, Rules: base()},
		// groupchat/transfer (document/path/92127; 96334 in the
		// service-provider edition) is not repeatable. Sending it twice
		// does not move a group twice, but the second call finds the
		// groups it moved no longer owned by a member who left and lists
		// them as failures (90500): a repeat after a lost answer would
		// report groups that did move as refused. A caller who gets an
		// error of unknown outcome reads the groups with groupchat/get.
		// Its 300 groups a day per former owner is a cap per member and
		// day that no Rule expresses.
		{ID: JSAPITicket, Method: http.MethodGet, Doc: 90506, Repeatable: true, Rules: ticketRules()},
		{ID: AgentTicket, Method: http.MethodGet, Doc: 90506, Repeatable: true, Sample: "type=agent_config", Rules: ticketRules()},
		// A sign-in code serves once and for five minutes (document/path/91023
		// and 96442): a call whose answer was lost, sent again, finds it used
		// (40029), so it is not repeatable. WeCom exempts the calls with a
		// valid code from its frequency limits (official, document/path/90454
		// and 96442): the row has no rule, and the client counts these calls
		// in no window. A limit can still be given, as on any row, with
		// wecom.WithLimits or wecom.WithRule.
		{ID: AuthGetUserInfo, Method: http.MethodGet, Doc: 91023, Sample: "code=CODE"},
		// A user_ticket serves for 1,800 s and is not spent by a read
		// (document/path/95833): safe to repeat.
		{ID: AuthGetUserDetail, Method: http.MethodPost, Doc: 95833, Repeatable: true,
			Sample: `{"user_ticket":"USER_TICKET"}`, Rules: base()},
		// A repeated upload stores a second copy, harmless: media expire
		// after three days.
		{ID: MediaUpload, Method: http.MethodPost, Doc: 90253, Repeatable: true, Body: MultipartBody, Sample: "type=file", Rules: base()},
		{ID: MediaGet, Method: http.MethodGet, Doc: 90254, Repeatable: true, Answer: FileAnswer, Resource: "media (media_id)", Keys: MediaKeys,
			Sample: "media_id=3a8asd892asd8asd", Rules: with(Rule{Name: RuleMedia, Scope: ScopeResource, InFlight: 1, Source: srcMedia})},
		// An image uploaded twice gets a second permanent URL and counts
		// twice against the quotas: repeatable (one stored copy more), and
		// each attempt takes the day's and the month's counts again, as
		// WeCom counts each that arrives.
		{ID: MediaUploadImage, Method: http.MethodPost, Doc: 90256, Repeatable: true, Body: MultipartBody,
			Rules: with(
				Rule{Name: RulePerDay, Scope: ScopeAPI, Limit: 1000, Per: Day, Source: srcImage},
				Rule{Name: RulePerMonth, Scope: ScopeAPI, Limit: 3000, Per: Month, Source: srcImage})},
		// A job started twice fetches the file twice, and the first job's
		// media expires unused after three days: repeatable.
		{ID: MediaUploadByURL, Method: http.MethodPost, Doc: 96219, Repeatable: true,
			Sample: `{"scene":1,"type":"video","filename":"video.mp4","url":"https://xxxx","md5":"MD5"}`, Rules: base()},
		{ID: MediaUploadByURLResult, Method: http.MethodPost, Doc: 96219, Repeatable: true, Sample: `{"jobid":"jobid_S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4"}`, Rules: base()},
		{ID: MediaGetJSSDK, Method: http.MethodGet, Doc: 90255, Repeatable: true, Answer: FileAnswer, Resource: "media (media_id)", Keys: MediaKeys,
			Sample: "media_id=3a8asd892asd8asd", Rules: with(Rule{Name: RuleMedia, Scope: ScopeResource, InFlight: 1, Source: srcMedia})},
		{ID: GroupChatTransfer, Method: http.MethodPost, Doc: 92127,
			Sample: `{"chat_id_list":["wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA"],"new_owner":"lisi"}`, Rules: base()},
		// A message sent twice is delivered twice: not repeatable.
		// Message sending does not count toward the base limits
		// (document/path/90454): its rules are the members' own.
		{ID: MessageSend, Method: http.MethodPost, Doc: 90236, Keys: MessageKeys,
			Sample: `{"touser":"zhangsan|lisi","msgtype":"text","agentid":1000002,"text":{"content":"hello"}}`,
			Rules: []Rule{
				{Name: RuleMemberMinute, Scope: ScopeAppMember, Group: GroupMessage, Limit: 30, Per: Minute, Silent: true, Source: srcMember},
				{Name: RuleMemberHour, Scope: ScopeAppMember, Group: GroupMessage, Limit: 1000, Per: Hour, Silent: true, Source: srcMember},
			}},
		// A recall is not repeatable: one that went through, sent again,
		// finds the message recalled and fails, so that a repeat after a
		// lost answer would report a recall that was done as refused. A
		// caller who gets an error of unknown outcome (ErrMaybeDone) may
		// recall once more and take a refusal as done. No limit of its own
		// is documented (document/path/94867): the base ones.
		{ID: MessageRecall, Method: http.MethodPost, Doc: 94867,
			Sample: `{"msgid":"vcT8gGc-7dFb4bxT35ONjBDz901sLlXPZw1DAMC_Gc26qRpK-AK5sTJkkb0128t"}`, Rules: base()},
		// A card's response_code serves once (and for 72 hours,
		// document/path/94888): an update sent again fails, whether the
		// first went through or not. Not repeatable.
		{ID: MessageUpdateCard, Method: http.MethodPost, Doc: 94888,
			Sample: `{"userids":["userid1","userid2"],"agentid":1,"response_code":"response_code","button":{"replace_name":"replace_name"}}`, Rules: base()},
		// Reading the counts is safe to repeat.
		{ID: MessageStatistics, Method: http.MethodPost, Doc: 92369, Repeatable: true, Sample: `{"time_type":0}`, Rules: base()},
		// A robot's message sent twice shows twice: not repeatable. Its
		// limit is the robot's own; robots belong to no corp the SDK
		// knows, so no rule per corp applies.
		{ID: WebhookSend, Method: http.MethodPost, Doc: 91770, Token: RobotKey, Keys: RobotKeys,
			Sample: `{"msgtype":"text","text":{"content":"hello world"}}`,
			Rules:  []Rule{{Name: RuleRobotMinute, Scope: ScopeRobot, Limit: 20, Per: Minute, Source: srcRobot}}},
		// An upload is not a message: 91770 caps messages only, and says
		// nothing of uploads, so no rule counts them. A repeated upload
		// stores a second copy, harmless: media expire after three days.
		{ID: WebhookUpload, Method: http.MethodPost, Doc: 91770, Repeatable: true, Token: RobotKey, Body: MultipartBody, Sample: "type=file"},
		// Not repeatable, as message/send.
		{ID: LinkedMessageSend, Method: http.MethodPost, Doc: 90250, Keys: LinkedMessageKeys,
			Sample: `{"touser":["userid1","CorpId1/userid1"],"msgtype":"text","agentid":1,"text":{"content":"hello"},"safe":0}`,
			Rules: []Rule{
				{Name: RuleMemberMinute, Scope: ScopeAppMember, Group: GroupMessage, Limit: 30, Per: Minute, Silent: true, Source: srcLinked},
				{Name: RuleMemberHour, Scope: ScopeAppMember, Group: GroupMessage, Limit: 1000, Per: Hour, Silent: true, Source: srcLinked},
			}},
		// A create sent twice makes a second chat (or, with a chatid,
		// fails with 86215 for the chat the first made); an update sent
		// twice fails on the members it already added or removed (86216):
		// neither is repeatable.
		{ID: AppChatCreate, Method: http.MethodPost, Doc: 90245,
			Sample: `{"name":"NAME","owner":"userid1","userlist":["userid1","userid2","userid3"],"chatid":"CHATID"}`,
			Rules:  with(Rule{Name: RulePerDay, Scope: ScopeAPI, Limit: 1000, Per: Day, Source: srcChat})},
		{ID: AppChatUpdate, Method: http.MethodPost, Doc: 90246,
			Sample: `{"chatid":"CHATID","name":"NAME","owner":"userid2","add_user_list":["userid1"],"del_user_list":["userid3"]}`,
			Rules:  appChatUpdateRules()},
		{ID: AppChatGet, Method: http.MethodGet, Doc: 90247, Repeatable: true, Sample: "chatid=CHATID", Rules: base()},
		// A message sent twice is delivered twice: not repeatable. Like
		// every message, it does not count toward the base limits; its
		// rules count the chat's members, which the request does not name
		// (AppChatKeys).
		{ID: AppChatSend, Method: http.MethodPost, Doc: 90248, Keys: AppChatKeys,
			Sample: `{"chatid":"CHATID","msgtype":"text","text":{"content":"hello"},"safe":0}`,
			Rules: []Rule{
				{Name: RuleChatMemberMinute, Scope: ScopeMember, Group: GroupAppChat, Limit: 200, Per: Minute, Silent: true, Source: srcChatMb},
				{Name: RuleChatMemberDay, Scope: ScopeMember, Group: GroupAppChat, Limit: 10000, Per: Day, Silent: true, Source: srcChatMb},
				{Name: RulePushMinute, Scope: ScopeAPI, Limit: 20000, Per: Minute, Weighted: true, Source: srcPush},
				{Name: RulePushHour, Scope: ScopeAPI, Limit: 300000, Per: Hour, Weighted: true, Source: srcPush},
			}},
	}
}

// appChatUpdateRules returns the limits of appchat/update: the base ones,
// with 1,000 an hour per corp.
func appChatUpdateRules() []Rule {
	rs := base()
	for i := range rs {
		if rs[i].Name == RulePerHour {
			rs[i].Limit, rs[i].Source = 1000, srcChat
		}
	}
	return rs
}

// MessageQuota is the rule of an app's daily message quota: recipients
// recipient-messages a natural day (the corp's account limit (人数上限)
// times 200), a message counting once per member it names. WeCom does not
// publish what a send over it gets. The number depends on the corp, so
// the catalog does not declare it: add it to message/send with
// wecom.WithRule(catalog.MessageSend.Path(), catalog.MessageQuota(n)).
// Members reached through parties, tags or @all are not counted.
func MessageQuota(recipients int) Rule {
	return Rule{Name: RuleRecipientDay, Scope: ScopeApp, Group: GroupMessage, Limit: recipients, Per: Day, Weighted: true, Source: srcQuota}
}

// WeCom's limits per source IP and API, counted across every corp served
// from the IP (document/path/90312 and, for third-party apps, 90454; staff
// confirmed the sum across corps): the catalog's rules RuleIPPerMinute and
// RuleIPPerHour of every endpoint hold the first two. A service provider's
// third-party apps get the higher pair (wecom.WithIPLimits).
const (
	IPPerMinute           = 20000
	IPPerHour             = 600000
	ThirdPartyIPPerMinute = 40000
	ThirdPartyIPPerHour   = 1200000
)

// SetIPLimits returns a copy of rules in which RuleIPPerMinute and
// RuleIPPerHour have the limits perMinute and perHour (a zero keeps the
// rule's) and the source source: a service provider's third-party apps
// have ThirdPartyIPPerMinute and ThirdPartyIPPerHour.
func SetIPLimits(rules []Rule, perMinute, perHour int, source string) []Rule {
	rules = slices.Clone(rules)
	for i, r := range rules {
		n := 0
		switch r.Name {
		case RuleIPPerMinute:
			n = perMinute
		case RuleIPPerHour:
			n = perHour
		}
		if n > 0 {
			rules[i].Limit, rules[i].Source = n, source
		}
	}
	return rules
}

// base returns WeCom's limits for every API: per corp and API, 10,000 calls
// a minute and 150,000 an hour; per source IP and API, IPPerMinute and
// IPPerHour.
func base() []Rule {
	return []Rule{
		{Name: RulePerMinute, Scope: ScopeAPI, Limit: 10000, Per: Minute, Source: srcBase},
		{Name: RulePerHour, Scope: ScopeAPI, Limit: 150000, Per: Hour, Source: srcBase},
		{Name: RuleIPPerMinute, Scope: ScopeIP, Limit: IPPerMinute, Per: Minute, Source: srcIP},
		{Name: RuleIPPerHour, Scope: ScopeIP, Limit: IPPerHour, Per: Hour, Source: srcIP},
	}
}

// ticketRules returns the limits of the JS-SDK ticket APIs: 400 fetches an
// hour per corp, and 100 per app across both.
func ticketRules() []Rule {
	rs := base()
	for i := range rs {
		if rs[i].Name == RulePerHour {
			rs[i].Limit, rs[i].Source = 400, srcTicket
		}
	}
	return append(rs, Rule{Name: RuleTicketApp, Scope: ScopeApp, Group: GroupJSAPITicket, Limit: 100, Per: Hour, Source: srcTicket})
}

// with returns the base rules and more.
func with(more ...Rule) []Rule { return append(base(), more...) }

func inFlight(name string, n int, source string) Rule {
	return Rule{Name: name, Scope: ScopeAPI, InFlight: n, Source: source}
}

// customerEdit is the one-edit-at-a-time lock of a customer, shared by the
// APIs that edit one.
func customerEdit() Rule {
	return Rule{Name: RuleCustomer, Scope: ScopeShared, Group: GroupCustomerEdit, InFlight: 1, Source: srcEdit}
}
