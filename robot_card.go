package wecom

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The template cards (模版卡片) a group robot sends (document/path/91770):
// a text notice and a news notice, both "template_card" on the wire,
// told apart by card_type.

// The kinds of a card's links (card_action, jump_list, quote_area,
// image_text_area types).
const (
	// RobotCardLinkURL opens URL.
	RobotCardLinkURL = 1
	// RobotCardLinkMiniProgram opens the mini program AppID at PagePath.
	RobotCardLinkMiniProgram = 2
)

// The kinds of a card's fields (horizontal_content_list types); 0 is
// plain text.
const (
	// RobotCardFieldURL opens URL.
	RobotCardFieldURL = 1
	// RobotCardFieldFile downloads the file MediaID (from Robot.Upload);
	// Value is its name, with its extension.
	RobotCardFieldFile = 2
	// RobotCardFieldMember opens the profile of the member UserID.
	RobotCardFieldMember = 3
)

// RobotTextNotice is a text notice card (text_notice): a main title or a
// subtitle (one is required), an emphasized figure or a quote, fields,
// links, and what a tap on the card opens (required).
type RobotTextNotice struct {
	Source    *RobotCardSource `json:"source,omitempty"`
	MainTitle RobotCardText    `json:"main_title"`
	// Emphasis is a key figure (title) and what it means (desc).
	Emphasis *RobotCardText  `json:"emphasis_content,omitempty"`
	Quote    *RobotCardQuote `json:"quote_area,omitempty"`
	SubTitle string          `json:"sub_title_text,omitempty"`
	// Fields are at most 6 lines of a key and a value.
	Fields []RobotCardField `json:"horizontal_content_list,omitempty"`
	// Jumps are at most 3 links.
	Jumps  []RobotCardJump `json:"jump_list,omitempty"`
	Action RobotCardAction `json:"card_action"`
}

// RobotNewsNotice is a news notice card (news_notice): a main title
// (required), an image (required) or an image beside a text, a quote,
// lines of text, fields, links, and what a tap on the card opens
// (required).
type RobotNewsNotice struct {
	Source    *RobotCardSource    `json:"source,omitempty"`
	MainTitle RobotCardText       `json:"main_title"`
	Image     *RobotCardImage     `json:"card_image,omitempty"`
	ImageText *RobotCardImageText `json:"image_text_area,omitempty"`
	Quote     *RobotCardQuote     `json:"quote_area,omitempty"`
	// Lines are at most 4 titles, each with its text.
	Lines []RobotCardText `json:"vertical_content_list,omitempty"`
	// Fields are at most 6 lines of a key and a value.
	Fields []RobotCardField `json:"horizontal_content_list,omitempty"`
	// Jumps are at most 3 links.
	Jumps  []RobotCardJump `json:"jump_list,omitempty"`
	Action RobotCardAction `json:"card_action"`
}

// RobotCardSource is where a card says it comes from: an icon and a text
// of at most 13 characters, gray (0), black (1), red (2) or green (3).
type RobotCardSource struct {
	IconURL   string `json:"icon_url,omitempty"`
	Desc      string `json:"desc,omitempty"`
	DescColor int    `json:"desc_color,omitempty"`
}

// RobotCardText is a title and its text (a main title, an emphasized
// figure, a line of a news notice).
type RobotCardText struct {
	Title string `json:"title,omitempty"`
	Desc  string `json:"desc,omitempty"`
}

// RobotCardQuote is a quoted text; a tap opens its link when Type says one
// (RobotCardLinkURL, RobotCardLinkMiniProgram; 0: none).
type RobotCardQuote struct {
	Type      int    `json:"type,omitempty"`
	URL       string `json:"url,omitempty"`
	AppID     string `json:"appid,omitempty"`
	PagePath  string `json:"pagepath,omitempty"`
	Title     string `json:"title,omitempty"`
	QuoteText string `json:"quote_text,omitempty"`
}

// RobotCardField is a key (required) and a value; Type (RobotCardFieldURL,
// RobotCardFieldFile, RobotCardFieldMember; 0: text) says what a tap
// opens, and which of URL, MediaID and UserID it needs.
type RobotCardField struct {
	Type    int    `json:"type,omitempty"`
	KeyName string `json:"keyname"`
	Value   string `json:"value,omitempty"`
	URL     string `json:"url,omitempty"`
	MediaID string `json:"media_id,omitempty"`
	UserID  string `json:"userid,omitempty"`
}

// RobotCardJump is a link of a card: its text (required) and, by Type
// (RobotCardLinkURL, RobotCardLinkMiniProgram; 0: no link), its URL or
// mini program.
type RobotCardJump struct {
	Type     int    `json:"type,omitempty"`
	Title    string `json:"title"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
}

// RobotCardAction is what a tap on a card opens: URL (Type
// RobotCardLinkURL) or the mini program AppID at PagePath (Type
// RobotCardLinkMiniProgram).
type RobotCardAction struct {
	Type     int    `json:"type"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
}

// RobotCardImage is a news notice's image; AspectRatio (width over
// height) is over 1.3 and under 2.25, 0 for WeCom's 1.3.
type RobotCardImage struct {
	URL         string  `json:"url"`
	AspectRatio float64 `json:"aspect_ratio,omitempty"`
}

// RobotCardImageText is a news notice's image (required) beside a title
// and a text; a tap opens its link when Type says one.
type RobotCardImageText struct {
	Type     int    `json:"type,omitempty"`
	URL      string `json:"url,omitempty"`
	AppID    string `json:"appid,omitempty"`
	PagePath string `json:"pagepath,omitempty"`
	Title    string `json:"title,omitempty"`
	Desc     string `json:"desc,omitempty"`
	ImageURL string `json:"image_url"`
}

// MsgType implements RobotMessage.
func (*RobotTextNotice) MsgType() string { return "template_card" }

// MsgType implements RobotMessage.
func (*RobotNewsNotice) MsgType() string { return "template_card" }

func (*RobotTextNotice) robotMessage() {}
func (*RobotNewsNotice) robotMessage() {}

// MarshalJSON writes the card with its card_type, text_notice.
func (m *RobotTextNotice) MarshalJSON() ([]byte, error) {
	type plain RobotTextNotice
	return json.Marshal(struct {
		CardType string `json:"card_type"`
		*plain
	}{"text_notice", (*plain)(m)})
}

// MarshalJSON writes the card with its card_type, news_notice.
func (m *RobotNewsNotice) MarshalJSON() ([]byte, error) {
	type plain RobotNewsNotice
	return json.Marshal(struct {
		CardType string `json:"card_type"`
		*plain
	}{"news_notice", (*plain)(m)})
}

// Validate implements RobotMessage.
func (m *RobotTextNotice) Validate() error {
	errs := []error{m.Source.validate(), m.Quote.validate(), link("text_notice card_action", m.Action.Type, m.Action.URL, m.Action.AppID, false),
		cardLists("text_notice", m.Fields, m.Jumps)}
	if m.MainTitle.Title == "" && m.SubTitle == "" {
		errs = append(errs, invalid("message text_notice main_title", "neither a main title nor a sub_title_text"))
	}
	return errors.Join(errs...)
}

// Validate implements RobotMessage.
func (m *RobotNewsNotice) Validate() error {
	errs := []error{m.Source.validate(), m.Quote.validate(), link("news_notice card_action", m.Action.Type, m.Action.URL, m.Action.AppID, false),
		cardLists("news_notice", m.Fields, m.Jumps), text("news_notice main_title title", m.MainTitle.Title, 0)}
	switch {
	case m.Image == nil || m.Image.URL == "":
		errs = append(errs, invalid("message news_notice card_image", "no url"))
	case m.Image.AspectRatio != 0 && (m.Image.AspectRatio <= 1.3 || m.Image.AspectRatio >= 2.25):
		errs = append(errs, invalid("message news_notice card_image aspect_ratio", "%g: over 1.3 and under 2.25", m.Image.AspectRatio))
	}
	if a := m.ImageText; a != nil {
		errs = append(errs, text("news_notice image_text_area image_url", a.ImageURL, 0), link("news_notice image_text_area", a.Type, a.URL, a.AppID, true))
	}
	if len(m.Lines) > 4 {
		errs = append(errs, invalid("message news_notice vertical_content_list", "%d lines, at most 4", len(m.Lines)))
	}
	for i, l := range m.Lines {
		errs = append(errs, text(fmt.Sprintf("news_notice vertical_content_list %d title", i+1), l.Title, 0))
	}
	return errors.Join(errs...)
}

func (s *RobotCardSource) validate() error {
	if s != nil && (s.DescColor < 0 || s.DescColor > 3) {
		return invalid("message template_card source desc_color", "%d, from 0 to 3", s.DescColor)
	}
	return nil
}

func (q *RobotCardQuote) validate() error {
	if q == nil {
		return nil
	}
	return link("template_card quote_area", q.Type, q.URL, q.AppID, true)
}

// link checks a link of kind typ: its URL or its mini program's appid.
// optional: type 0 (no link) is allowed.
func link(field string, typ int, url, appID string, optional bool) error {
	switch {
	case typ == 0 && optional:
		return nil
	case typ == RobotCardLinkURL:
		return text(field+" url", url, 0)
	case typ == RobotCardLinkMiniProgram:
		return text(field+" appid", appID, 0)
	}
	return invalid("message "+field+" type", "%d is not 1 (a URL) or 2 (a mini program)", typ)
}

// cardLists checks a card's fields (at most 6) and links (at most 3).
func cardLists(card string, fields []RobotCardField, jumps []RobotCardJump) error {
	var errs []error
	if len(fields) > 6 {
		errs = append(errs, invalid("message "+card+" horizontal_content_list", "%d fields, at most 6", len(fields)))
	}
	for i, f := range fields {
		name := fmt.Sprintf("%s horizontal_content_list %d ", card, i+1)
		errs = append(errs, text(name+"keyname", f.KeyName, 0))
		switch f.Type {
		case 0:
		case RobotCardFieldURL:
			errs = append(errs, text(name+"url", f.URL, 0))
		case RobotCardFieldFile:
			errs = append(errs, text(name+"media_id", f.MediaID, 0))
		case RobotCardFieldMember:
			errs = append(errs, text(name+"userid", f.UserID, 0))
		default:
			errs = append(errs, invalid("message "+name+"type", "%d is not 0 to 3", f.Type))
		}
	}
	if len(jumps) > 3 {
		errs = append(errs, invalid("message "+card+" jump_list", "%d links, at most 3", len(jumps)))
	}
	for i, j := range jumps {
		name := fmt.Sprintf("%s jump_list %d", card, i+1)
		errs = append(errs, text(name+" title", j.Title, 0), link(name, j.Type, j.URL, j.AppID, true))
	}
	return errors.Join(errs...)
}
