package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wecomkit/wecom"
)

// The documented examples of document/path/90236 § 模板卡片消息, one per card
// type, as WeCom shows them under "template_card".
const (
	docSource     = `{"icon_url":"图片的url","desc":"企业微信","desc_color":1}`
	docActionMenu = `{"desc":"卡片副交互辅助文本说明","action_list":[{"text":"接受推送","key":"A"},{"text":"不再推送","key":"B"}]}`
	docMainTitle  = `{"title":"欢迎使用企业微信","desc":"您的好友正在邀请您加入企业微信"}`
	docQuote      = `{"type":1,"url":"https://work.weixin.qq.com","title":"企业微信的引用样式","quote_text":"企业微信真好用呀真好用"}`
	docHorizontal = `[{"keyname":"邀请人","value":"张三"},{"type":1,"keyname":"企业微信官网","value":"点击访问","url":"https://work.weixin.qq.com"},` +
		`{"type":2,"keyname":"企业微信下载","value":"企业微信.apk","media_id":"文件的media_id"},{"type":3,"keyname":"员工信息","value":"点击查看","userid":"zhangsan"}]`
	docJumps  = `[{"type":1,"title":"企业微信官网","url":"https://work.weixin.qq.com"},{"type":2,"title":"跳转小程序","appid":"小程序的appid","pagepath":"/index.html"}]`
	docAction = `{"type":2,"url":"https://work.weixin.qq.com","appid":"小程序的appid","pagepath":"/index.html"}`

	docTextNotice = `{"card_type":"text_notice","task_id":"task_id","source":` + docSource + `,"action_menu":` + docActionMenu +
		`,"main_title":` + docMainTitle + `,"quote_area":` + docQuote + `,"emphasis_content":{"title":"100","desc":"核心数据"},` +
		`"sub_title_text":"下载企业微信还能抢红包！","horizontal_content_list":` + docHorizontal + `,"jump_list":` + docJumps + `,"card_action":` + docAction + `}`
	docNewsNotice = `{"card_type":"news_notice","task_id":"task_id","source":` + docSource + `,"action_menu":` + docActionMenu +
		`,"main_title":` + docMainTitle + `,"quote_area":` + docQuote + `,"image_text_area":{"type":1,"url":"https://work.weixin.qq.com",` +
		`"title":"企业微信的左图右文样式","desc":"企业微信真好用呀真好用","image_url":"https://img.iplaysoft.com/wp-content/uploads/2019/free-images/free_stock_photo_2x.jpg"},` +
		`"card_image":{"url":"图片的url","aspect_ratio":1.3},"vertical_content_list":[{"title":"惊喜红包等你来拿","desc":"下载企业微信还能抢红包！"}],` +
		`"horizontal_content_list":` + docHorizontal + `,"jump_list":` + docJumps + `,"card_action":` + docAction + `}`
	docButtonInteraction = `{"card_type":"button_interaction","task_id":"task_id","source":` + docSource + `,"action_menu":` + docActionMenu +
		`,"main_title":` + docMainTitle + `,"quote_area":` + docQuote + `,"sub_title_text":"下载企业微信还能抢红包！","horizontal_content_list":` + docHorizontal +
		`,"card_action":` + docAction + `,"button_selection":{"question_key":"btn_question_key1","title":"企业微信评分",` +
		`"option_list":[{"id":"btn_selection_id1","text":"100分"},{"id":"btn_selection_id2","text":"101分"}],"selected_id":"btn_selection_id1"},` +
		`"button_list":[{"text":"按钮1","style":1,"key":"button_key_1"},{"text":"按钮2","style":2,"key":"button_key_2"}]}`
	docVoteInteraction = `{"card_type":"vote_interaction","task_id":"task_id","source":{"icon_url":"图片的url","desc":"企业微信"},"main_title":` + docMainTitle +
		`,"checkbox":{"question_key":"question_key1","option_list":[{"id":"option_id1","text":"选择题选项1","is_checked":true},` +
		`{"id":"option_id2","text":"选择题选项2","is_checked":false}],"mode":1},"submit_button":{"text":"提交","key":"key"}}`
	docMultipleInteraction = `{"card_type":"multiple_interaction","task_id":"task_id","source":{"icon_url":"图片的url","desc":"企业微信"},"main_title":` + docMainTitle +
		`,"select_list":[{"question_key":"question_key1","title":"选择器标签1","option_list":[{"id":"selection_id1","text":"选择器选项1"},` +
		`{"id":"selection_id2","text":"选择器选项2"}],"selected_id":"selection_id1"},{"question_key":"question_key2","title":"选择器标签2",` +
		`"option_list":[{"id":"selection_id3","text":"选择器选项3"},{"id":"selection_id4","text":"选择器选项4"}],"selected_id":"selection_id3"}],` +
		`"submit_button":{"text":"提交","key":"key"}}`
)

// The parts of the documented cards, as the SDK's types.
var (
	cardSource     = &wecom.CardSource{IconURL: "图片的url", Desc: "企业微信", DescColor: 1}
	cardActionMenu = &wecom.CardActionMenu{Desc: "卡片副交互辅助文本说明", ActionList: []wecom.CardMenuAction{{Text: "接受推送", Key: "A"}, {Text: "不再推送", Key: "B"}}}
	cardMainTitle  = &wecom.CardTitle{Title: "欢迎使用企业微信", Desc: "您的好友正在邀请您加入企业微信"}
	cardQuote      = &wecom.CardQuoteArea{Type: wecom.CardLinkURL, URL: "https://work.weixin.qq.com", Title: "企业微信的引用样式", QuoteText: "企业微信真好用呀真好用"}
	cardHorizontal = []wecom.CardHorizontalContent{{KeyName: "邀请人", Value: "张三"},
		{Type: wecom.CardLinkURL, KeyName: "企业微信官网", Value: "点击访问", URL: "https://work.weixin.qq.com"},
		{Type: wecom.CardLinkDownload, KeyName: "企业微信下载", Value: "企业微信.apk", MediaID: "文件的media_id"},
		{Type: wecom.CardLinkMember, KeyName: "员工信息", Value: "点击查看", UserID: "zhangsan"}}
	cardJumps = []wecom.CardJump{{Type: wecom.CardLinkURL, Title: "企业微信官网", URL: "https://work.weixin.qq.com"},
		{Type: wecom.CardLinkMiniProgram, Title: "跳转小程序", AppID: "小程序的appid", PagePath: "/index.html"}}
	cardAction = &wecom.CardAction{Type: wecom.CardLinkMiniProgram, URL: "https://work.weixin.qq.com", AppID: "小程序的appid", PagePath: "/index.html"}
)

// docCards returns the documented cards as the SDK's types, by card type,
// each with its documented JSON.
func docCards() []struct {
	card *wecom.TemplateCardMessage
	want string
} {
	return []struct {
		card *wecom.TemplateCardMessage
		want string
	}{
		{&wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, TaskID: "task_id", Source: cardSource, ActionMenu: cardActionMenu, MainTitle: cardMainTitle,
			QuoteArea: cardQuote, EmphasisContent: &wecom.CardTitle{Title: "100", Desc: "核心数据"}, SubTitleText: "下载企业微信还能抢红包！",
			HorizontalContentList: cardHorizontal, JumpList: cardJumps, CardAction: cardAction}, docTextNotice},
		{&wecom.TemplateCardMessage{CardType: wecom.CardNewsNotice, TaskID: "task_id", Source: cardSource, ActionMenu: cardActionMenu, MainTitle: cardMainTitle,
			QuoteArea: cardQuote, ImageTextArea: &wecom.CardImageTextArea{Type: wecom.CardLinkURL, URL: "https://work.weixin.qq.com", Title: "企业微信的左图右文样式",
				Desc: "企业微信真好用呀真好用", ImageURL: "https://img.iplaysoft.com/wp-content/uploads/2019/free-images/free_stock_photo_2x.jpg"},
			CardImage: &wecom.CardImage{URL: "图片的url", AspectRatio: 1.3}, VerticalContentList: []wecom.CardTitle{{Title: "惊喜红包等你来拿", Desc: "下载企业微信还能抢红包！"}},
			HorizontalContentList: cardHorizontal, JumpList: cardJumps, CardAction: cardAction}, docNewsNotice},
		{&wecom.TemplateCardMessage{CardType: wecom.CardButtonInteraction, TaskID: "task_id", Source: cardSource, ActionMenu: cardActionMenu, MainTitle: cardMainTitle,
			QuoteArea: cardQuote, SubTitleText: "下载企业微信还能抢红包！", HorizontalContentList: cardHorizontal, CardAction: cardAction,
			ButtonSelection: &wecom.CardSelection{QuestionKey: "btn_question_key1", Title: "企业微信评分",
				OptionList: []wecom.CardOption{{ID: "btn_selection_id1", Text: "100分"}, {ID: "btn_selection_id2", Text: "101分"}}, SelectedID: "btn_selection_id1"},
			ButtonList: []wecom.CardButton{{Text: "按钮1", Style: 1, Key: "button_key_1"}, {Text: "按钮2", Style: 2, Key: "button_key_2"}}}, docButtonInteraction},
		{&wecom.TemplateCardMessage{CardType: wecom.CardVoteInteraction, TaskID: "task_id", Source: &wecom.CardSource{IconURL: "图片的url", Desc: "企业微信"}, MainTitle: cardMainTitle,
			Checkbox: &wecom.CardCheckbox{QuestionKey: "question_key1", Mode: 1, OptionList: []wecom.CardCheckOption{{ID: "option_id1", Text: "选择题选项1", IsChecked: true},
				{ID: "option_id2", Text: "选择题选项2"}}}, SubmitButton: &wecom.CardSubmitButton{Text: "提交", Key: "key"}}, docVoteInteraction},
		{&wecom.TemplateCardMessage{CardType: wecom.CardMultipleInteraction, TaskID: "task_id", Source: &wecom.CardSource{IconURL: "图片的url", Desc: "企业微信"}, MainTitle: cardMainTitle,
			SelectList: []wecom.CardSelection{
				{QuestionKey: "question_key1", Title: "选择器标签1", OptionList: []wecom.CardOption{{ID: "selection_id1", Text: "选择器选项1"}, {ID: "selection_id2", Text: "选择器选项2"}}, SelectedID: "selection_id1"},
				{QuestionKey: "question_key2", Title: "选择器标签2", OptionList: []wecom.CardOption{{ID: "selection_id3", Text: "选择器选项3"}, {ID: "selection_id4", Text: "选择器选项4"}}, SelectedID: "selection_id3"}},
			SubmitButton: &wecom.CardSubmitButton{Text: "提交", Key: "key"}}, docMultipleInteraction},
	}
}

// TestTemplateCardWire: each of the five card types goes out as the
// example of document/path/90236, and the answer's response_code comes
// back.
func TestTemplateCardWire(t *testing.T) {
	t.Parallel()
	for _, tc := range docCards() {
		t.Run(string(tc.card.CardType), func(t *testing.T) {
			t.Parallel()
			mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok","invaliduser":"userid1|userid2","msgid":"xxxx","response_code":"xyzxyz"}`)
			c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
			res, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"UserID1", "UserID2", "UserID3"}, AgentID: 1, Content: tc.card})
			if err != nil {
				t.Fatal(err)
			}
			if res.ResponseCode != "xyzxyz" || res.MsgID != "xxxx" || !slices.Equal(res.InvalidUsers, []string{"userid1", "userid2"}) {
				t.Errorf("result %+v", res)
			}
			got := bodies()
			want := `{"touser":"UserID1|UserID2|UserID3","msgtype":"template_card","agentid":1,"template_card":` + tc.want + `}`
			if len(got) != 1 || !sameJSON(t, got[0], want) {
				t.Errorf("sent %s\nwant %s", got, want)
			}
		})
	}
}

// TestTemplateCardInvalid: what WeCom requires of each card type, and the
// limits it enforces, are checked before anything is sent.
func TestTemplateCardInvalid(t *testing.T) {
	t.Parallel()
	cards := docCards()
	text, news, button, vote, multiple := cards[0].card, cards[1].card, cards[2].card, cards[3].card, cards[4].card
	with := func(base *wecom.TemplateCardMessage, change func(*wecom.TemplateCardMessage)) *wecom.TemplateCardMessage {
		cp := *base
		change(&cp)
		return &cp
	}
	for name, card := range map[string]*wecom.TemplateCardMessage{
		"no card type":                 {MainTitle: cardMainTitle, CardAction: cardAction},
		"an unknown card type":         with(text, func(m *wecom.TemplateCardMessage) { m.CardType = "notice" }),
		"a text notice without title":  with(text, func(m *wecom.TemplateCardMessage) { m.MainTitle, m.SubTitleText = nil, "" }),
		"a text notice without action": with(text, func(m *wecom.TemplateCardMessage) { m.CardAction = nil }),
		"a card action of type 0":      with(text, func(m *wecom.TemplateCardMessage) { m.CardAction = &wecom.CardAction{URL: "u"} }),
		"a url action without url":     with(text, func(m *wecom.TemplateCardMessage) { m.CardAction = &wecom.CardAction{Type: wecom.CardLinkURL} }),
		"an action menu, no task":      with(text, func(m *wecom.TemplateCardMessage) { m.TaskID = "" }),
		"four menu actions": with(text, func(m *wecom.TemplateCardMessage) {
			m.ActionMenu = &wecom.CardActionMenu{ActionList: slices.Repeat(cardActionMenu.ActionList, 2)}
		}),
		"seven horizontal lines": with(text, func(m *wecom.TemplateCardMessage) { m.HorizontalContentList = slices.Repeat(cardHorizontal, 2) }),
		"a download without media_id": with(text, func(m *wecom.TemplateCardMessage) {
			m.HorizontalContentList = []wecom.CardHorizontalContent{{Type: wecom.CardLinkDownload, KeyName: "k"}}
		}),
		"four jumps":                 with(text, func(m *wecom.TemplateCardMessage) { m.JumpList = slices.Repeat(cardJumps, 2) }),
		"a source color of 4":        with(text, func(m *wecom.TemplateCardMessage) { m.Source = &wecom.CardSource{DescColor: 4} }),
		"a news notice, no image":    with(news, func(m *wecom.TemplateCardMessage) { m.CardImage, m.ImageTextArea = nil, nil }),
		"a news notice, no title":    with(news, func(m *wecom.TemplateCardMessage) { m.MainTitle = nil }),
		"an aspect ratio of 3":       with(news, func(m *wecom.TemplateCardMessage) { m.CardImage = &wecom.CardImage{URL: "u", AspectRatio: 3} }),
		"five vertical lines":        with(news, func(m *wecom.TemplateCardMessage) { m.VerticalContentList = make([]wecom.CardTitle, 5) }),
		"a button card without task": with(button, func(m *wecom.TemplateCardMessage) { m.TaskID, m.ActionMenu = "", nil }),
		"a task_id of 129 bytes":     with(button, func(m *wecom.TemplateCardMessage) { m.TaskID = strings.Repeat("t", 129) }),
		"a task_id with a space":     with(button, func(m *wecom.TemplateCardMessage) { m.TaskID = "task 1" }),
		"no buttons":                 with(button, func(m *wecom.TemplateCardMessage) { m.ButtonList = nil }),
		"seven buttons": with(button, func(m *wecom.TemplateCardMessage) {
			m.ButtonList = slices.Repeat([]wecom.CardButton{{Text: "b", Type: 1, URL: "u"}}, 7)
		}),
		"a callback button, no key": with(button, func(m *wecom.TemplateCardMessage) { m.ButtonList = []wecom.CardButton{{Text: "b"}} }),
		"two buttons of one key": with(button, func(m *wecom.TemplateCardMessage) {
			m.ButtonList = []wecom.CardButton{{Text: "a", Key: "k"}, {Text: "b", Key: "k"}}
		}),
		"a button style of 5": with(button, func(m *wecom.TemplateCardMessage) { m.ButtonList = []wecom.CardButton{{Text: "a", Key: "k", Style: 5}} }),
		"eleven drop-down options": with(button, func(m *wecom.TemplateCardMessage) {
			m.ButtonSelection = &wecom.CardSelection{QuestionKey: "q", OptionList: slices.Repeat([]wecom.CardOption{{ID: "o", Text: "o"}}, 11)}
		}),
		"a vote without checkbox": with(vote, func(m *wecom.TemplateCardMessage) { m.Checkbox = nil }),
		"a vote without submit":   with(vote, func(m *wecom.TemplateCardMessage) { m.SubmitButton = nil }),
		"a vote without task":     with(vote, func(m *wecom.TemplateCardMessage) { m.TaskID = "" }),
		"a vote of no options":    with(vote, func(m *wecom.TemplateCardMessage) { m.Checkbox = &wecom.CardCheckbox{QuestionKey: "q"} }),
		"a vote of mode 2": with(vote, func(m *wecom.TemplateCardMessage) {
			m.Checkbox = &wecom.CardCheckbox{QuestionKey: "q", Mode: 2, OptionList: []wecom.CardCheckOption{{ID: "a", Text: "a"}}}
		}),
		"a vote of 21 options": with(vote, func(m *wecom.TemplateCardMessage) {
			m.Checkbox = &wecom.CardCheckbox{QuestionKey: "q", OptionList: make([]wecom.CardCheckOption, 21)}
		}),
		"two options of one id": with(vote, func(m *wecom.TemplateCardMessage) {
			m.Checkbox = &wecom.CardCheckbox{QuestionKey: "q", OptionList: []wecom.CardCheckOption{{ID: "a", Text: "a"}, {ID: "a", Text: "b"}}}
		}),
		"an option id of 129": with(vote, func(m *wecom.TemplateCardMessage) {
			m.Checkbox = &wecom.CardCheckbox{QuestionKey: "q", OptionList: []wecom.CardCheckOption{{ID: strings.Repeat("i", 129), Text: "a"}}}
		}),
		"a choice without selects": with(multiple, func(m *wecom.TemplateCardMessage) { m.SelectList = nil }),
		"a choice of four selects": with(multiple, func(m *wecom.TemplateCardMessage) { m.SelectList = slices.Repeat(m.SelectList, 2) }),
		"a select without key": with(multiple, func(m *wecom.TemplateCardMessage) {
			m.SelectList = []wecom.CardSelection{{OptionList: []wecom.CardOption{{ID: "a", Text: "a"}}}}
		}),
		"a submit without key": with(multiple, func(m *wecom.TemplateCardMessage) { m.SubmitButton = &wecom.CardSubmitButton{Text: "提交"} }),
	} {
		if err := card.Validate(); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: Validate = %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok"}`)
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
	if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"u"}, Content: with(vote, func(m *wecom.TemplateCardMessage) { m.Checkbox = nil })}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("Send = %v, want wecom.ErrInvalidRequest", err)
	}
	if n := len(bodies()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
	for _, tc := range cards {
		if err := tc.card.Validate(); err != nil {
			t.Errorf("documented %s: %v", tc.card.CardType, err)
		}
	}
}

// TestCardActionWithoutLink: card_action type 0 (no link) is taken by an
// interactive card and refused for the notices, which WeCom limits to 1
// and 2.
func TestCardActionWithoutLink(t *testing.T) {
	t.Parallel()
	none := &wecom.CardAction{Type: 0}
	buttons := &wecom.TemplateCardMessage{CardType: wecom.CardButtonInteraction, TaskID: "t1", MainTitle: &wecom.CardTitle{Title: "t"},
		ButtonList: []wecom.CardButton{{Text: "ok", Key: "ok"}}, CardAction: none}
	if err := buttons.Validate(); err != nil {
		t.Errorf("button_interaction with card_action type 0: %v", err)
	}
	notice := &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: &wecom.CardTitle{Title: "t"}, CardAction: none}
	if err := notice.Validate(); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("text_notice with card_action type 0: %v, want ErrInvalidRequest", err)
	}
}

// TestCardErrorsOnce: a fault of an interactive card is reported once, not
// by each check that covers it.
func TestCardErrorsOnce(t *testing.T) {
	t.Parallel()
	card := &wecom.TemplateCardMessage{CardType: wecom.CardButtonInteraction, TaskID: "bad id!", MainTitle: &wecom.CardTitle{Title: "t"},
		ButtonList: make([]wecom.CardButton, 7)}
	err := card.Validate()
	for _, field := range []string{"task_id", "button_list"} {
		if n := strings.Count(fmt.Sprint(err), "template_card "+field); n != 1 {
			t.Errorf("%q named %d times in %v, want once", field, n, err)
		}
	}
}
