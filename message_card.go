package wecom

import (
	"errors"
	"fmt"
)

// Template cards ("template_card", document/path/90236 § 模板卡片消息), as
// WeCom takes them under template_card, in message/send and in
// message/update_template_card. Lengths WeCom only recommends ("建议不超过")
// are not checked: WeCom shows longer texts cut. Those it enforces are.

// CardType is a template card's card_type.
type CardType string

// The five card types.
const (
	// CardTextNotice is a text notice (文本通知型): a title or a subtitle,
	// and the CardAction a tap opens.
	CardTextNotice CardType = "text_notice"
	// CardNewsNotice is a picture notice (图文展示型): a title, a CardImage
	// or an ImageTextArea, and the CardAction a tap opens.
	CardNewsNotice CardType = "news_notice"
	// CardButtonInteraction offers up to 6 buttons (按钮交互型).
	CardButtonInteraction CardType = "button_interaction"
	// CardVoteInteraction asks one question with up to 20 options (投票选择型).
	CardVoteInteraction CardType = "vote_interaction"
	// CardMultipleInteraction asks up to 3 questions, each a drop-down of up
	// to 10 options (多项选择型).
	CardMultipleInteraction CardType = "multiple_interaction"
)

// The kinds of link (the type of card_action, jump_list, quote_area and
// image_text_area; horizontal_content_list adds 2 and 3 of its own).
const (
	// CardLinkNone: the element opens nothing (not for card_action).
	CardLinkNone = 0
	// CardLinkURL opens URL.
	CardLinkURL = 1
	// CardLinkMiniProgram opens the mini program AppID at PagePath.
	CardLinkMiniProgram = 2
	// CardLinkDownload (horizontal content) downloads the file MediaID.
	CardLinkDownload = 2
	// CardLinkMember (horizontal content) shows the member UserID.
	CardLinkMember = 3
)

// TemplateCardMessage is a template card ("template_card"). CardType says
// which of the other fields it needs: see the CardType constants and
// Validate. Interactive cards (and notices with an ActionMenu) need a
// TaskID, unique within the app; the answer's ResponseCode updates the
// card once (Messages.UpdateTemplateCard).
type TemplateCardMessage struct {
	CardType              CardType                `json:"card_type"`
	Source                *CardSource             `json:"source,omitempty"`
	ActionMenu            *CardActionMenu         `json:"action_menu,omitempty"`
	TaskID                string                  `json:"task_id,omitempty"`
	MainTitle             *CardTitle              `json:"main_title,omitempty"`
	QuoteArea             *CardQuoteArea          `json:"quote_area,omitempty"`
	EmphasisContent       *CardTitle              `json:"emphasis_content,omitempty"`
	SubTitleText          string                  `json:"sub_title_text,omitempty"`
	ImageTextArea         *CardImageTextArea      `json:"image_text_area,omitempty"`
	CardImage             *CardImage              `json:"card_image,omitempty"`
	VerticalContentList   []CardTitle             `json:"vertical_content_list,omitempty"`
	HorizontalContentList []CardHorizontalContent `json:"horizontal_content_list,omitempty"`
	JumpList              []CardJump              `json:"jump_list,omitempty"`
	CardAction            *CardAction             `json:"card_action,omitempty"`
	ButtonSelection       *CardSelection          `json:"button_selection,omitempty"`
	ButtonList            []CardButton            `json:"button_list,omitempty"`
	Checkbox              *CardCheckbox           `json:"checkbox,omitempty"`
	SelectList            []CardSelection         `json:"select_list,omitempty"`
	SubmitButton          *CardSubmitButton       `json:"submit_button,omitempty"`
}

// CardSource is the card's source line: an icon and a text whose color is
// 0 grey (the default), 1 black, 2 red or 3 green.
type CardSource struct {
	IconURL   string `json:"icon_url,omitempty"`
	Desc      string `json:"desc,omitempty"`
	DescColor int    `json:"desc_color,omitempty"`
}

// CardActionMenu is the card's "…" menu: 1 to 3 actions, each of whose Key
// (at most 1,024 bytes, distinct) comes back in a callback.
type CardActionMenu struct {
	Desc       string           `json:"desc,omitempty"`
	ActionList []CardMenuAction `json:"action_list"`
}

// CardMenuAction is one action of a CardActionMenu.
type CardMenuAction struct {
	Text string `json:"text"`
	Key  string `json:"key"`
}

// CardTitle is a title and its description: the card's main_title and
// emphasis_content, and each item of its vertical_content_list.
type CardTitle struct {
	Title string `json:"title,omitempty"`
	Desc  string `json:"desc,omitempty"`
}

// CardQuoteArea is a quoted passage, which may open a link.
type CardQuoteArea struct {
	Type      int    `json:"type,omitempty"`
	URL       string `json:"url,omitempty"`
	AppID     string `json:"appid,omitempty"`
	PagePath  string `json:"pagepath,omitempty"`
	Title     string `json:"title,omitempty"`
	QuoteText string `json:"quote_text,omitempty"`
}

// CardHorizontalContent is one "key: value" line (at most 6): plain text,
// or a link (CardLinkURL with URL, CardLinkDownload with MediaID,
// CardLinkMember with UserID).
type CardHorizontalContent struct {
	Type    int    `json:"type,omitempty"`
	KeyName string `json:"keyname"`
	Value   string `json:"value,omitempty"`
	URL     string `json:"url,omitempty"`
	MediaID string `json:"media_id,omitempty"`
	UserID  string `json:"userid,omitempty"`
}

// CardJump is one link under the card (at most 3).
type CardJump struct {
	Type     int    `json:"type,omitempty"`
	Title    string `json:"title"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
}

// CardAction is what a tap on the card opens: CardLinkURL or
// CardLinkMiniProgram.
type CardAction struct {
	Type     int    `json:"type"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
}

// CardImage is a news notice's picture, of aspect ratio 1.3 (the default)
// to 2.25.
type CardImage struct {
	URL         string  `json:"url"`
	AspectRatio float64 `json:"aspect_ratio,omitempty"`
}

// CardImageTextArea is a news notice's picture with text beside it.
type CardImageTextArea struct {
	Type     int    `json:"type,omitempty"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
	Title    string `json:"title,omitempty"`
	Desc     string `json:"desc,omitempty"`
	ImageURL string `json:"image_url"`
}

// CardSelection is a drop-down: the button card's button_selection, or one
// question of a multiple_interaction card. QuestionKey (at most 1,024
// bytes) and the chosen option's ID (at most 128, distinct) come back in a
// callback.
type CardSelection struct {
	QuestionKey string       `json:"question_key"`
	Title       string       `json:"title,omitempty"`
	OptionList  []CardOption `json:"option_list"`
	SelectedID  string       `json:"selected_id,omitempty"`
}

// CardOption is one option of a CardSelection (1 to 10).
type CardOption struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// CardButton is one button of a button_interaction card: its Key (type 0,
// the default: a callback) or its URL (type 1) is required. Style is 1 to
// 4 (0: 1).
type CardButton struct {
	Type  int    `json:"type,omitempty"`
	Text  string `json:"text"`
	Style int    `json:"style,omitempty"`
	Key   string `json:"key,omitempty"`
	URL   string `json:"url,omitempty"`
}

// CardCheckbox is a vote card's question: 1 to 20 options, one to choose
// (Mode 0) or several (Mode 1).
type CardCheckbox struct {
	QuestionKey string            `json:"question_key"`
	OptionList  []CardCheckOption `json:"option_list"`
	Mode        int               `json:"mode,omitempty"`
}

// CardCheckOption is one option of a CardCheckbox.
type CardCheckOption struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	IsChecked bool   `json:"is_checked"`
}

// CardSubmitButton is the submit button of a vote or multiple-choice
// card; its Key comes back in the callback.
type CardSubmitButton struct {
	Text string `json:"text,omitempty"`
	Key  string `json:"key"`
}

// MsgType implements MessageContent.
func (*TemplateCardMessage) MsgType() string { return "template_card" }

// Validate implements MessageContent: it checks what WeCom requires of the
// card's type and the limits it enforces.
func (m *TemplateCardMessage) Validate() error {
	errs := []error{m.validateParts()}
	switch m.CardType {
	case CardTextNotice:
		errs = append(errs, m.titleOrSubtitle(), m.action())
	case CardNewsNotice:
		errs = append(errs, m.action())
		if m.MainTitle == nil || m.MainTitle.Title == "" {
			errs = append(errs, invalid("message template_card main_title", "a news_notice needs a title"))
		}
		if m.CardImage == nil && m.ImageTextArea == nil {
			errs = append(errs, invalid("message template_card card_image", "a news_notice needs a card_image or an image_text_area"))
		}
	case CardButtonInteraction:
		errs = append(errs, m.titleOrSubtitle(), count("template_card button_list", len(m.ButtonList), 6))
	case CardVoteInteraction:
		errs = append(errs, m.submit())
		if m.Checkbox == nil {
			errs = append(errs, invalid("message template_card checkbox", "a vote_interaction needs one"))
		}
	case CardMultipleInteraction:
		errs = append(errs, m.submit(), count("template_card select_list", len(m.SelectList), 3))
	default:
		errs = append(errs, invalid("message template_card card_type", "%q is none of the five card types", m.CardType))
	}
	return errors.Join(errs...)
}

// validateParts checks the parts the card has, whatever its type.
func (m *TemplateCardMessage) validateParts() error {
	var errs []error
	interactive := m.CardType == CardButtonInteraction || m.CardType == CardVoteInteraction || m.CardType == CardMultipleInteraction
	if interactive || m.TaskID != "" || m.ActionMenu != nil { // once: checked in one place
		errs = append(errs, m.task())
	}
	if s := m.Source; s != nil && (s.DescColor < 0 || s.DescColor > 3) {
		errs = append(errs, invalid("message template_card source desc_color", "%d, from 0 to 3", s.DescColor))
	}
	if a := m.ActionMenu; a != nil {
		errs = append(errs, count("template_card action_list", len(a.ActionList), 3))
		keys := make([]string, len(a.ActionList))
		for i, it := range a.ActionList {
			f := fmt.Sprintf("template_card action %d ", i+1)
			errs = append(errs, text(f+"text", it.Text, 0), text(f+"key", it.Key, 1024))
			keys[i] = it.Key
		}
		errs = append(errs, unique("template_card action_list key", keys))
	}
	if q := m.QuoteArea; q != nil {
		errs = append(errs, link("template_card quote_area", q.Type, q.URL, q.AppID, true))
	}
	if a := m.CardAction; a != nil { // type 0 (no link) is for interactive cards only
		notice := m.CardType == CardTextNotice || m.CardType == CardNewsNotice
		errs = append(errs, link("template_card card_action", a.Type, a.URL, a.AppID, !notice))
	}
	if it := m.ImageTextArea; it != nil {
		errs = append(errs, link("template_card image_text_area", it.Type, it.URL, it.AppID, true),
			text("template_card image_text_area image_url", it.ImageURL, 0))
	}
	if im := m.CardImage; im != nil {
		errs = append(errs, text("template_card card_image url", im.URL, 0))
		if r := im.AspectRatio; r != 0 && (r < 1.3 || r > 2.25) {
			errs = append(errs, invalid("message template_card card_image aspect_ratio", "%g, from 1.3 to 2.25", r))
		}
	}
	errs = append(errs, upTo("template_card vertical_content_list", len(m.VerticalContentList), 4),
		upTo("template_card horizontal_content_list", len(m.HorizontalContentList), 6),
		upTo("template_card jump_list", len(m.JumpList), 3))
	if m.CardType != CardButtonInteraction { // which checks its 1 to 6 itself
		errs = append(errs, upTo("template_card button_list", len(m.ButtonList), 6))
	}
	for i, v := range m.VerticalContentList {
		errs = append(errs, text(fmt.Sprintf("template_card vertical_content %d title", i+1), v.Title, 0))
	}
	for i, h := range m.HorizontalContentList {
		errs = append(errs, horizontal(i, h))
	}
	for i, j := range m.JumpList {
		f := fmt.Sprintf("template_card jump %d", i+1)
		errs = append(errs, text(f+" title", j.Title, 0), link(f, j.Type, j.URL, j.AppID, true))
	}
	errs = append(errs, m.buttons())
	if s := m.ButtonSelection; s != nil {
		errs = append(errs, selection("template_card button_selection", *s))
	}
	for i, s := range m.SelectList {
		errs = append(errs, selection(fmt.Sprintf("template_card select %d", i+1), s))
	}
	if c := m.Checkbox; c != nil {
		errs = append(errs, checkbox(*c))
	}
	if b := m.SubmitButton; b != nil {
		errs = append(errs, text("template_card submit_button key", b.Key, 1024))
	}
	return errors.Join(errs...)
}

// titleOrSubtitle: a text notice or a button card needs a main title or a
// subtitle.
func (m *TemplateCardMessage) titleOrSubtitle() error {
	if (m.MainTitle == nil || m.MainTitle.Title == "") && m.SubTitleText == "" {
		return invalid("message template_card main_title", "neither a main_title title nor a sub_title_text")
	}
	return nil
}

// action: a notice needs the card_action a tap opens.
func (m *TemplateCardMessage) action() error {
	if m.CardAction == nil {
		return invalid("message template_card card_action", "a %s needs one", m.CardType)
	}
	return nil
}

// submit: a vote or multiple-choice card needs its submit button.
func (m *TemplateCardMessage) submit() error {
	if m.SubmitButton == nil {
		return invalid("message template_card submit_button", "a %s needs one", m.CardType)
	}
	return nil
}

// task checks task_id: 1 to 128 bytes of letters, digits and "_-@".
func (m *TemplateCardMessage) task() error {
	id := m.TaskID
	if id == "" || len(id) > 128 {
		return invalid("message template_card task_id", "%d bytes, 1 to 128 (an interactive card or an action_menu needs one)", len(id))
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_' || r == '-' || r == '@') {
			return invalid("message template_card task_id", "%q: only letters, digits and _-@", r)
		}
	}
	return nil
}

// buttons checks each button: a text, a key (a callback) or a URL, a style
// from 1 to 4, distinct keys.
func (m *TemplateCardMessage) buttons() error {
	var errs []error
	var keys []string
	for i, b := range m.ButtonList {
		f := fmt.Sprintf("template_card button %d ", i+1)
		errs = append(errs, text(f+"text", b.Text, 0))
		switch b.Type {
		case 0:
			errs = append(errs, text(f+"key", b.Key, 1024))
			keys = append(keys, b.Key)
		case 1:
			errs = append(errs, text(f+"url", b.URL, 0))
		default:
			errs = append(errs, invalid("message "+f+"type", "%d, 0 (a callback) or 1 (a url)", b.Type))
		}
		if b.Style < 0 || b.Style > 4 {
			errs = append(errs, invalid("message "+f+"style", "%d, from 1 to 4", b.Style))
		}
	}
	return errors.Join(append(errs, unique("template_card button_list key", keys))...)
}

// horizontal checks the i-th horizontal content line.
func horizontal(i int, h CardHorizontalContent) error {
	f := fmt.Sprintf("template_card horizontal_content %d ", i+1)
	errs := []error{text(f+"keyname", h.KeyName, 0)}
	switch h.Type {
	case CardLinkNone:
	case CardLinkURL:
		errs = append(errs, text(f+"url", h.URL, 0))
	case CardLinkDownload:
		errs = append(errs, text(f+"media_id", h.MediaID, 0))
	case CardLinkMember:
		errs = append(errs, text(f+"userid", h.UserID, 0))
	default:
		errs = append(errs, invalid("message "+f+"type", "%d, from 0 to 3", h.Type))
	}
	return errors.Join(errs...)
}

// selection checks a drop-down: its key and 1 to 10 options of distinct
// ids.
func selection(f string, s CardSelection) error {
	errs := []error{text(f+" question_key", s.QuestionKey, 1024), count(f+" option_list", len(s.OptionList), 10)}
	ids := make([]string, len(s.OptionList))
	for i, o := range s.OptionList {
		errs = append(errs, text(fmt.Sprintf("%s option %d id", f, i+1), o.ID, 128), text(fmt.Sprintf("%s option %d text", f, i+1), o.Text, 0))
		ids[i] = o.ID
	}
	return errors.Join(append(errs, unique(f+" option id", ids))...)
}

// checkbox checks a vote: its key, its mode and 1 to 20 options of
// distinct ids.
func checkbox(c CardCheckbox) error {
	errs := []error{text("template_card checkbox question_key", c.QuestionKey, 1024), count("template_card checkbox option_list", len(c.OptionList), 20)}
	if c.Mode != 0 && c.Mode != 1 {
		errs = append(errs, invalid("message template_card checkbox mode", "%d, 0 (one choice) or 1 (several)", c.Mode))
	}
	ids := make([]string, len(c.OptionList))
	for i, o := range c.OptionList {
		errs = append(errs, text(fmt.Sprintf("template_card checkbox option %d id", i+1), o.ID, 128), text(fmt.Sprintf("template_card checkbox option %d text", i+1), o.Text, 0))
		ids[i] = o.ID
	}
	return errors.Join(append(errs, unique("template_card checkbox option id", ids))...)
}

// link checks a link's type and the field it needs: a URL or a mini
// program's appid (none for CardLinkNone, where none is allowed).
func link(f string, typ int, url, appID string, none bool) error {
	switch {
	case typ == CardLinkNone && none:
		return nil
	case typ == CardLinkURL:
		return text(f+" url", url, 0)
	case typ == CardLinkMiniProgram:
		return text(f+" appid", appID, 0)
	}
	return invalid("message "+f+" type", "%d, not a link type here", typ)
}

// upTo fails when n is over limit (zero is allowed).
func upTo(field string, n, limit int) error {
	if n > limit {
		return invalid("message "+field, "%d, at most %d", n, limit)
	}
	return nil
}

// unique fails when a non-empty key appears twice.
func unique(field string, keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k != "" && seen[k] {
			return invalid("message "+field, "%q twice", k)
		}
		seen[k] = true
	}
	return nil
}

// robotMessage: a robot sends text and news notice cards (Robot.Send).
func (*TemplateCardMessage) robotMessage() {}
