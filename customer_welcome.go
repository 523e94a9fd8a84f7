package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wecomkit/wecom/catalog"
)

// WelcomeMessage is the message a member's new customer gets on being
// added (externalcontact/send_welcome_msg, document/path/92137).
type WelcomeMessage struct {
	// WelcomeCode is the WelcomeCode of the add_external_contact event
	// (and of add_half_external_contact): it serves once, within 20
	// seconds of the event. There is none when the corp's admin set a
	// welcome message of their own.
	WelcomeCode string
	// Text is the message's text, at most MaxWelcomeTextBytes.
	Text string
	// Attachments follow the text, at most MaxAttachments.
	Attachments []Attachment
}

// The sizes of a WelcomeMessage.
const (
	MaxWelcomeTextBytes = 4000
	MaxAttachments      = 9
)

// Attachment is one attachment of a customer message: set exactly one of
// its fields.
type Attachment struct {
	Image       *AttachmentImage
	Link        *AttachmentLink
	MiniProgram *AttachmentMiniProgram
	Video       *AttachmentMedia
	File        *AttachmentMedia
}

// AttachmentImage is a picture: MediaID (from Media.Upload) or PicURL
// (from media/uploadimg).
type AttachmentImage struct {
	MediaID string `json:"media_id,omitempty"`
	PicURL  string `json:"pic_url,omitempty"`
}

// AttachmentLink is a link card; Title and URL are required.
type AttachmentLink struct {
	Title  string `json:"title"`
	PicURL string `json:"picurl,omitempty"`
	Desc   string `json:"desc,omitempty"`
	URL    string `json:"url"`
}

// AttachmentMiniProgram is a mini program card; every field is required,
// the picture uploaded with Media.Upload.
type AttachmentMiniProgram struct {
	Title      string `json:"title"`
	PicMediaID string `json:"pic_media_id"`
	AppID      string `json:"appid"`
	Page       string `json:"page"`
}

// AttachmentMedia is a video or a file uploaded with Media.Upload.
type AttachmentMedia struct {
	MediaID string `json:"media_id"`
}

// MarshalJSON writes a as WeCom reads it: {"msgtype":"link","link":{...}}.
func (a Attachment) MarshalJSON() ([]byte, error) {
	t, v, err := a.kind()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"msgtype": t, t: v})
}

// kind returns a's msgtype and content, and fails unless exactly one is
// set and it has what WeCom requires.
func (a Attachment) kind() (string, any, error) {
	var kinds []string
	var v any
	var bad bool
	if a.Image != nil {
		kinds, v, bad = append(kinds, "image"), a.Image, (a.Image.MediaID == "") == (a.Image.PicURL == "")
	}
	if a.Link != nil {
		kinds, v, bad = append(kinds, "link"), a.Link, a.Link.Title == "" || a.Link.URL == ""
	}
	if m := a.MiniProgram; m != nil {
		kinds, v, bad = append(kinds, "miniprogram"), m, m.Title == "" || m.PicMediaID == "" || m.AppID == "" || m.Page == ""
	}
	if a.Video != nil {
		kinds, v, bad = append(kinds, "video"), a.Video, a.Video.MediaID == ""
	}
	if a.File != nil {
		kinds, v, bad = append(kinds, "file"), a.File, a.File.MediaID == ""
	}
	switch {
	case len(kinds) != 1:
		return "", nil, fmt.Errorf("%d kinds set (%v), want one", len(kinds), kinds)
	case bad:
		return "", nil, fmt.Errorf("%s: a required field is empty (an image takes media_id or pic_url, not both)", kinds[0])
	}
	return kinds[0], v, nil
}

// Welcome sends a member's new customer the welcome message m, within the
// 20 seconds its WelcomeCode lives: call it from the handler of the
// add_external_contact event, not after a queue. A code serves once, so a
// send whose answer was lost is not repeated (its error matches
// ErrMaybeDone); WeCom answers 41051 to a code another app used first.
func (s *CustomerService) Welcome(ctx context.Context, m WelcomeMessage) error {
	var errs []error
	switch {
	case m.WelcomeCode == "":
		errs = append(errs, invalid("welcome_code", "empty"))
	case m.Text == "" && len(m.Attachments) == 0:
		errs = append(errs, invalid("welcome message", "neither text nor attachments"))
	case len(m.Text) > MaxWelcomeTextBytes:
		errs = append(errs, invalid("welcome text", "%d bytes, at most %d", len(m.Text), MaxWelcomeTextBytes))
	case len(m.Attachments) > MaxAttachments:
		errs = append(errs, invalid("welcome attachments", "%d, at most %d", len(m.Attachments), MaxAttachments))
	}
	for i, a := range m.Attachments {
		if _, _, err := a.kind(); err != nil {
			errs = append(errs, invalid(fmt.Sprintf("welcome attachment %d", i), "%v", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	body := map[string]any{"welcome_code": m.WelcomeCode}
	if m.Text != "" {
		body["text"] = map[string]string{"content": m.Text}
	}
	if len(m.Attachments) > 0 {
		body["attachments"] = m.Attachments
	}
	return s.p.perform(ctx, &call{id: catalog.SendWelcomeMsg, body: body})
}
