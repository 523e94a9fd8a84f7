package callback_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/callback"
)

// app wraps the fields of an app callback in WeCom's header.
func app(msgType, rest string) string {
	return `<xml><ToUserName><![CDATA[ww0123456789abcdef]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>1403610513</CreateTime><MsgType><![CDATA[` + msgType + `]]></MsgType>` + rest + `<AgentID>1</AgentID></xml>`
}

// event wraps an event's fields.
func event(name, rest string) string {
	return app("event", `<Event><![CDATA[`+name+`]]></Event>`+rest)
}

// suite wraps a suite command callback's fields.
func suite(info, rest string) string {
	return `<xml><SuiteId><![CDATA[wwsuite01]]></SuiteId><AuthCorpId><![CDATA[wwcorp02]]></AuthCorpId><InfoType><![CDATA[` + info + `]]></InfoType><TimeStamp>1403610513</TimeStamp>` + rest + `</xml>`
}

// TestParseEveryKind parses one callback of each kind, shaped as WeCom's
// documents show them, into its type.
func TestParseEveryKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		xml  string
		want callback.Event
	}{
		{"text", app("text", `<Content><![CDATA[this is a test]]></Content><MsgId>1234567890123456</MsgId>`),
			&callback.TextMessage{MsgID: "1234567890123456", Content: "this is a test"}},
		{"image", app("image", `<PicUrl><![CDATA[https://p/1.jpg]]></PicUrl><MediaId><![CDATA[media_id]]></MediaId><MsgId>11</MsgId>`),
			&callback.ImageMessage{MsgID: "11", PicURL: "https://p/1.jpg", MediaID: "media_id"}},
		{"voice", app("voice", `<MediaId><![CDATA[media_id]]></MediaId><Format><![CDATA[amr]]></Format><MsgId>12</MsgId>`),
			&callback.VoiceMessage{MsgID: "12", MediaID: "media_id", Format: "amr"}},
		{"video", app("video", `<MediaId><![CDATA[media_id]]></MediaId><ThumbMediaId><![CDATA[thumb]]></ThumbMediaId><MsgId>13</MsgId>`),
			&callback.VideoMessage{MsgID: "13", MediaID: "media_id", ThumbMediaID: "thumb"}},
		{"location", app("location", `<Location_X>23.134521</Location_X><Location_Y>113.358803</Location_Y><Scale>20</Scale><Label><![CDATA[位置信息]]></Label><MsgId>14</MsgId><AppType><![CDATA[wxwork]]></AppType>`),
			&callback.LocationMessage{MsgID: "14", Latitude: 23.134521, Longitude: 113.358803, Scale: 20, Label: "位置信息", AppType: "wxwork"}},
		{"link", app("link", `<Title><![CDATA[title]]></Title><Description><![CDATA[desc]]></Description><Url><![CDATA[https://u]]></Url><PicUrl><![CDATA[https://p]]></PicUrl><MsgId>15</MsgId>`),
			&callback.LinkMessage{MsgID: "15", Title: "title", Description: "desc", URL: "https://u", PicURL: "https://p"}},
		{"subscribe", event("subscribe", ""), &callback.SubscribeEvent{}},
		{"unsubscribe", event("unsubscribe", ""), &callback.SubscribeEvent{}},
		{"enter_agent", event("enter_agent", `<EventKey><![CDATA[]]></EventKey>`), &callback.EnterAgentEvent{}},
		{"click", event("click", `<EventKey><![CDATA[EVENTKEY]]></EventKey>`), &callback.MenuEvent{EventKey: "EVENTKEY"}},
		{"view", event("view", `<EventKey><![CDATA[https://www.qq.com]]></EventKey>`), &callback.MenuEvent{EventKey: "https://www.qq.com"}},
		{"scancode_push", event("scancode_push", `<EventKey><![CDATA[6]]></EventKey><ScanCodeInfo><ScanType><![CDATA[qrcode]]></ScanType><ScanResult><![CDATA[1]]></ScanResult></ScanCodeInfo>`),
			func() callback.Event {
				e := &callback.ScanCodeEvent{EventKey: "6"}
				e.ScanCodeInfo.ScanType, e.ScanCodeInfo.ScanResult = "qrcode", "1"
				return e
			}()},
		{"scancode_waitmsg", event("scancode_waitmsg", `<EventKey><![CDATA[6]]></EventKey><ScanCodeInfo><ScanType><![CDATA[barcode]]></ScanType><ScanResult><![CDATA[2]]></ScanResult></ScanCodeInfo>`),
			func() callback.Event {
				e := &callback.ScanCodeEvent{EventKey: "6"}
				e.ScanCodeInfo.ScanType, e.ScanCodeInfo.ScanResult = "barcode", "2"
				return e
			}()},
		{"batch_job_result", event("batch_job_result", `<BatchJob><JobId><![CDATA[S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4]]></JobId><JobType><![CDATA[sync_user]]></JobType><ErrCode>0</ErrCode><ErrMsg><![CDATA[ok]]></ErrMsg></BatchJob>`),
			func() callback.Event {
				e := &callback.BatchJobEvent{}
				e.BatchJob.JobID, e.BatchJob.JobType, e.BatchJob.ErrMsg = "S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4", "sync_user", "ok"
				return e
			}()},
		{"upload_media_job_finish", event("upload_media_job_finish", `<JobId><![CDATA[jobid_S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4]]></JobId>`),
			&callback.UploadMediaJobEvent{JobID: "jobid_S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4"}},
		{"create_user", event("change_contact", `<ChangeType>create_user</ChangeType><UserID><![CDATA[zhangsan]]></UserID><Name><![CDATA[张三]]></Name><Department><![CDATA[1,2,3]]></Department><MainDepartment>1</MainDepartment><IsLeaderInDept><![CDATA[1,0,0]]></IsLeaderInDept><Position><![CDATA[产品经理]]></Position><Mobile>13800000000</Mobile><Gender>1</Gender><Email><![CDATA[zhangsan@gzdev.com]]></Email><Status>1</Status><Avatar><![CDATA[http://wx.qlogo.cn/mmopen/0]]></Avatar><Alias><![CDATA[zhangsan]]></Alias><Telephone><![CDATA[020-123456]]></Telephone>`),
			&callback.ContactEvent{ChangeType: callback.ChangeCreateUser, UserID: "zhangsan", Name: "张三", Department: "1,2,3", MainDepartment: "1", IsLeaderInDept: "1,0,0", Position: "产品经理", Mobile: "13800000000", Gender: "1", Email: "zhangsan@gzdev.com", Status: "1", Avatar: "http://wx.qlogo.cn/mmopen/0", Alias: "zhangsan", Telephone: "020-123456"}},
		{"update_user", event("change_contact", `<ChangeType>update_user</ChangeType><UserID><![CDATA[zhangsan]]></UserID><NewUserID><![CDATA[zhangsan001]]></NewUserID>`),
			&callback.ContactEvent{ChangeType: callback.ChangeUpdateUser, UserID: "zhangsan", NewUserID: "zhangsan001"}},
		{"delete_user", event("change_contact", `<ChangeType>delete_user</ChangeType><UserID><![CDATA[zhangsan]]></UserID>`),
			&callback.ContactEvent{ChangeType: callback.ChangeDeleteUser, UserID: "zhangsan"}},
		{"create_party", event("change_contact", `<ChangeType>create_party</ChangeType><Id>2</Id><Name><![CDATA[张三]]></Name><ParentId><![CDATA[1]]></ParentId><Order>1</Order>`),
			&callback.ContactEvent{ChangeType: callback.ChangeCreateParty, ID: 2, Name: "张三", ParentID: "1", Order: 1}},
		{"update_party", event("change_contact", `<ChangeType>update_party</ChangeType><Id>2</Id><Name><![CDATA[李四]]></Name><ParentId><![CDATA[1]]></ParentId>`),
			&callback.ContactEvent{ChangeType: callback.ChangeUpdateParty, ID: 2, Name: "李四", ParentID: "1"}},
		{"delete_party", event("change_contact", `<ChangeType>delete_party</ChangeType><Id>2</Id>`),
			&callback.ContactEvent{ChangeType: callback.ChangeDeleteParty, ID: 2}},
		{"update_tag", event("change_contact", `<ChangeType><![CDATA[update_tag]]></ChangeType><TagId>1</TagId><AddUserItems><![CDATA[zhangsan,lisi]]></AddUserItems><DelUserItems><![CDATA[zhangsan1,lisi1]]></DelUserItems><AddPartyItems><![CDATA[1,2]]></AddPartyItems><DelPartyItems><![CDATA[3,4]]></DelPartyItems>`),
			&callback.ContactEvent{ChangeType: callback.ChangeUpdateTag, TagID: 1, AddUserItems: "zhangsan,lisi", DelUserItems: "zhangsan1,lisi1", AddPartyItems: "1,2", DelPartyItems: "3,4"}},
		{"add_external_contact", event("change_external_contact", `<ChangeType><![CDATA[add_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA]]></ExternalUserID><State><![CDATA[teststate]]></State><WelcomeCode><![CDATA[WELCOMECODE]]></WelcomeCode>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeAddExternalContact, UserID: "zhangsan", ExternalUserID: "woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA", State: "teststate", WelcomeCode: "WELCOMECODE"}},
		{"edit_external_contact", event("change_external_contact", `<ChangeType><![CDATA[edit_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA]]></ExternalUserID>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeEditExternalContact, UserID: "zhangsan", ExternalUserID: "woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA"}},
		{"add_half_external_contact", event("change_external_contact", `<ChangeType><![CDATA[add_half_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wo1]]></ExternalUserID><State><![CDATA[s]]></State><WelcomeCode><![CDATA[W2]]></WelcomeCode>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeAddHalfExternalContact, UserID: "zhangsan", ExternalUserID: "wo1", State: "s", WelcomeCode: "W2"}},
		{"del_external_contact", event("change_external_contact", `<ChangeType><![CDATA[del_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wo1]]></ExternalUserID><Source><![CDATA[DELETE_BY_TRANSFER]]></Source>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeDelExternalContact, UserID: "zhangsan", ExternalUserID: "wo1", Source: "DELETE_BY_TRANSFER"}},
		{"del_follow_user", event("change_external_contact", `<ChangeType><![CDATA[del_follow_user]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wo1]]></ExternalUserID>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeDelFollowUser, UserID: "zhangsan", ExternalUserID: "wo1"}},
		{"transfer_fail", event("change_external_contact", `<ChangeType><![CDATA[transfer_fail]]></ChangeType><FailReason><![CDATA[customer_refused]]></FailReason><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wo1]]></ExternalUserID>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeTransferFail, FailReason: "customer_refused", UserID: "zhangsan", ExternalUserID: "wo1"}},
		{"change_external_chat", event("change_external_chat", `<ChatId><![CDATA[wrxUBwDQAAa44T11Ziaed811rhUr8-3Igmug]]></ChatId><ChangeType><![CDATA[update]]></ChangeType><UpdateDetail><![CDATA[add_member]]></UpdateDetail><JoinScene>3</JoinScene><MemChangeCnt>2</MemChangeCnt><MemChangeList><Item><![CDATA[Jack]]></Item><Item>Rose</Item></MemChangeList><LastMemVer><![CDATA[9c3f]]></LastMemVer><CurMemVer><![CDATA[7121]]></CurMemVer>`),
			&callback.ExternalChatEvent{ChangeType: "update", ChatID: "wrxUBwDQAAa44T11Ziaed811rhUr8-3Igmug", UpdateDetail: "add_member", JoinScene: 3, MemChangeCnt: 2, MemChangeList: []string{"Jack", "Rose"}, LastMemVer: "9c3f", CurMemVer: "7121"}},
		{"change_external_tag", event("change_external_tag", `<Id><![CDATA[etXXXXXXXXXX]]></Id><TagType><![CDATA[tag]]></TagType><ChangeType><![CDATA[create]]></ChangeType><StrategyId>1</StrategyId>`),
			&callback.ExternalTagEvent{ChangeType: "create", ID: "etXXXXXXXXXX", TagType: "tag", StrategyID: 1}},
		{"kf_msg_or_event", event("kf_msg_or_event", `<Token><![CDATA[ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR]]></Token><OpenKfId><![CDATA[wkxxxxxxx]]></OpenKfId>`),
			&callback.KfEvent{Token: "ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR", OpenKfID: "wkxxxxxxx"}},
		{"template_card_event", event("template_card_event", `<EventKey><![CDATA[key111]]></EventKey><TaskId><![CDATA[taskid111]]></TaskId><CardType><![CDATA[vote_interaction]]></CardType><ResponseCode><![CDATA[ResponseCode]]></ResponseCode><SelectedItems><SelectedItem><QuestionKey><![CDATA[QuestionKey1]]></QuestionKey><OptionIds><OptionId><![CDATA[OptionId1]]></OptionId><OptionId><![CDATA[OptionId2]]></OptionId></OptionIds></SelectedItem></SelectedItems>`),
			func() callback.Event {
				e := &callback.TemplateCardEvent{EventKey: "key111", TaskID: "taskid111", CardType: "vote_interaction", ResponseCode: "ResponseCode"}
				e.SelectedItems = make([]struct {
					QuestionKey string   `xml:"QuestionKey"`
					OptionIDs   []string `xml:"OptionIds>OptionId"`
				}, 1)
				e.SelectedItems[0].QuestionKey, e.SelectedItems[0].OptionIDs = "QuestionKey1", []string{"OptionId1", "OptionId2"}
				return e
			}()},
		{"sys_approval_change", event("sys_approval_change", `<ApprovalInfo><SpNo>201909270001</SpNo><SpName><![CDATA[请假]]></SpName><SpStatus>1</SpStatus><TemplateId><![CDATA[3TkaH5KFbrG9heEQWLJjhgpFNDqGkiMHhA]]></TemplateId><ApplyTime>1569584428</ApplyTime><Applyer><UserId><![CDATA[WangXiaoMing]]></UserId><Party><![CDATA[1]]></Party></Applyer><SpRecord><SpStatus>1</SpStatus><ApproverAttr>1</ApproverAttr></SpRecord><StatuChangeEvent>1</StatuChangeEvent></ApprovalInfo>`),
			func() callback.Event {
				e := &callback.ApprovalEvent{}
				a := &e.ApprovalInfo
				a.SpNo, a.SpName, a.SpStatus, a.TemplateID, a.ApplyTime, a.StatuChangeEvent = "201909270001", "请假", 1, "3TkaH5KFbrG9heEQWLJjhgpFNDqGkiMHhA", 1569584428, 1
				a.Applyer.UserID, a.Applyer.Party = "WangXiaoMing", "1"
				return e
			}()},
		{"open_approval_change", event("open_approval_change", `<ApprovalInfo><ThirdNo><![CDATA[201806010001]]></ThirdNo><OpenSpName><![CDATA[付款]]></OpenSpName><OpenTemplateId><![CDATA[1234567890]]></OpenTemplateId><OpenSpStatus>1</OpenSpStatus><ApplyTime>1527837645</ApplyTime><ApplyUserName><![CDATA[xiaoming]]></ApplyUserName><ApplyUserId><![CDATA[1]]></ApplyUserId><ApplyUserParty><![CDATA[产品部]]></ApplyUserParty><approverstep>0</approverstep></ApprovalInfo>`),
			func() callback.Event {
				e := &callback.OpenApprovalEvent{}
				a := &e.ApprovalInfo
				a.ThirdNo, a.OpenSpName, a.OpenTemplateID, a.OpenSpStatus, a.ApplyTime, a.ApplyUserName, a.ApplyUserID, a.ApplyUserParty = "201806010001", "付款", "1234567890", 1, 1527837645, "xiaoming", "1", "产品部"
				return e
			}()},
		{"suite_ticket", suite("suite_ticket", `<SuiteTicket><![CDATA[asdfasfdasdfasdf]]></SuiteTicket>`), &callback.SuiteTicketEvent{SuiteTicket: "asdfasfdasdfasdf"}},
		{"create_auth", suite("create_auth", `<AuthCode><![CDATA[AUTHCODE]]></AuthCode><State><![CDATA[123]]></State>`), &callback.AuthEvent{AuthCode: "AUTHCODE", State: "123"}},
		{"change_auth", suite("change_auth", `<State><![CDATA[abc]]></State>`), &callback.AuthEvent{State: "abc"}},
		{"cancel_auth", suite("cancel_auth", ``), &callback.AuthEvent{}},
		{"suite change_contact", suite("change_contact", `<ChangeType>delete_user</ChangeType><UserID><![CDATA[zhangsan]]></UserID>`),
			&callback.ContactEvent{ChangeType: callback.ChangeDeleteUser, UserID: "zhangsan"}},
		{"suite change_external_contact", suite("change_external_contact", `<ChangeType><![CDATA[add_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wo1]]></ExternalUserID><WelcomeCode><![CDATA[W]]></WelcomeCode>`),
			&callback.ExternalContactEvent{ChangeType: callback.ChangeAddExternalContact, UserID: "zhangsan", ExternalUserID: "wo1", WelcomeCode: "W"}},
	} {
		got, err := callback.Parse([]byte(tc.xml))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if reflect.TypeOf(got) != reflect.TypeOf(tc.want) {
			t.Errorf("%s: parsed as %T, want %T", tc.name, got, tc.want)
			continue
		}
		h := got.Common()
		if string(h.XML) != tc.xml {
			t.Errorf("%s: XML not kept", tc.name)
		}
		if strings.HasPrefix(tc.xml, "<xml><SuiteId>") {
			if h.SuiteID != "wwsuite01" || h.AuthCorpID != "wwcorp02" || h.TimeStamp != 1403610513 || h.InfoType == "" {
				t.Errorf("%s: suite header %+v", tc.name, h)
			}
		} else if h.ToUserName != "ww0123456789abcdef" || h.FromUserName != "sys" || h.CreateTime != 1403610513 || h.AgentID != 1 || h.MsgType == "" {
			t.Errorf("%s: header %+v", tc.name, h)
		}
		// Compare the fields beyond the header.
		*h = callback.Header{}
		*tc.want.Common() = callback.Header{}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestParseRaw: unknown kinds and known kinds whose fields do not parse
// come back raw; XML that does not parse is an error.
func TestParseRaw(t *testing.T) {
	t.Parallel()
	got, err := callback.Parse([]byte(event("change_contact", `<ChangeType>create_party</ChangeType><Id>not-a-number</Id>`)))
	if raw, ok := got.(*callback.RawEvent); err != nil || !ok || raw.Event != "change_contact" || raw.ChangeType != "create_party" {
		t.Fatalf("mistyped field: %#v, %v", got, err)
	}
	got, err = callback.Parse([]byte(`<xml><MsgType>event</MsgType><Event>e</Event><CreateTime>soon</CreateTime></xml>`))
	if raw, ok := got.(*callback.RawEvent); err != nil || !ok || raw.Event != "e" {
		t.Fatalf("mistyped header: %#v, %v", got, err)
	}
	if _, err := callback.Parse([]byte("<xml><unclosed></xml>")); err == nil {
		t.Fatal("bad XML parsed")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(textXML("1", "x")))
	f.Add([]byte(contactXML("u", 1)))
	f.Add([]byte(suite("suite_ticket", "<SuiteTicket>t</SuiteTicket>")))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := callback.Parse(data)
		if err == nil && (ev == nil || ev.Common() == nil) {
			t.Fatal("nil event without error")
		}
	})
}
