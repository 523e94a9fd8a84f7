package wecom

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/wecomkit/wecom/catalog"
)

// The message types of a group robot's webhook/send (document/path/91770),
// each as WeCom takes it under its msgtype. Lengths are in bytes of UTF-8.

// RobotMessage is a message a Robot sends: one of the Robot types of this
// package, each of which says its msgtype and checks itself.
type RobotMessage interface {
	// MsgType is the message's msgtype on the wire ("text", ...).
	MsgType() string
	// Validate reports what WeCom would refuse in the message.
	Validate() error
	robotMessage()
}

// RobotText is a text message ("text"), at most 2,048 bytes. Mentioned
// are the group members it mentions (@) by userid, MentionedMobiles those
// by mobile number; "@all" in either mentions everyone. <@userid> in the
// content mentions a member too.
type RobotText struct {
	Content          string   `json:"content"`
	Mentioned        []string `json:"mentioned_list,omitempty"`
	MentionedMobiles []string `json:"mentioned_mobile_list,omitempty"`
}

// RobotMarkdown is a message in WeCom's first subset of Markdown
// ("markdown": headings, bold, links, inline code, quotes and three font
// colors), at most 4,096 bytes.
type RobotMarkdown struct {
	Content string `json:"content"`
}

// RobotMarkdownV2 is a message in WeCom's second subset of Markdown
// ("markdown_v2": lists, tables, images, code blocks, rules; no font
// colors, no <@userid>), at most 4,096 bytes. Clients before 4.1.36
// (Android 4.1.38) show it as plain text.
type RobotMarkdownV2 struct {
	Content string `json:"content"`
}

// RobotImage is an image ("image"): the bytes of a JPG or PNG of at most
// 2 MB. The SDK sends them in base64 with their MD5, as WeCom asks.
type RobotImage struct {
	Data []byte
}

// RobotNews is one to eight linked articles ("news").
type RobotNews struct {
	Articles []RobotArticle `json:"articles"`
}

// RobotArticle is one article of a RobotNews: it opens URL. WeCom cuts a
// title over 128 bytes and a description over 512. PicURL is a JPG or PNG,
// best 1068×455 (150×150 when small).
type RobotArticle struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
	PicURL      string `json:"picurl,omitempty"`
}

// RobotFile is a file ("file") uploaded with Robot.Upload.
type RobotFile struct {
	MediaID string `json:"media_id"`
}

// RobotVoice is a voice message ("voice") uploaded with Robot.Upload.
type RobotVoice struct {
	MediaID string `json:"media_id"`
}

// MsgType implements RobotMessage.
func (*RobotText) MsgType() string { return "text" }

// MsgType implements RobotMessage.
func (*RobotMarkdown) MsgType() string { return "markdown" }

// MsgType implements RobotMessage.
func (*RobotMarkdownV2) MsgType() string { return "markdown_v2" }

// MsgType implements RobotMessage.
func (*RobotImage) MsgType() string { return "image" }

// MsgType implements RobotMessage.
func (*RobotNews) MsgType() string { return "news" }

// MsgType implements RobotMessage.
func (*RobotFile) MsgType() string { return "file" }

// MsgType implements RobotMessage.
func (*RobotVoice) MsgType() string { return "voice" }

func (*RobotText) robotMessage()       {}
func (*RobotMarkdown) robotMessage()   {}
func (*RobotMarkdownV2) robotMessage() {}
func (*RobotImage) robotMessage()      {}
func (*RobotNews) robotMessage()       {}
func (*RobotFile) robotMessage()       {}
func (*RobotVoice) robotMessage()      {}

// Validate implements RobotMessage.
func (m *RobotText) Validate() error {
	errs := []error{text("text content", m.Content, catalog.RobotTextBytes)}
	for _, l := range [][]string{m.Mentioned, m.MentionedMobiles} {
		for _, v := range l {
			if v == "" {
				errs = append(errs, invalid("message text mentioned", "an empty userid or mobile"))
			}
		}
	}
	return errors.Join(errs...)
}

// Validate implements RobotMessage.
func (m *RobotMarkdown) Validate() error {
	return text("markdown content", m.Content, catalog.RobotMarkdownBytes)
}

// Validate implements RobotMessage.
func (m *RobotMarkdownV2) Validate() error {
	return text("markdown_v2 content", m.Content, catalog.RobotMarkdownBytes)
}

// Validate implements RobotMessage.
func (m *RobotImage) Validate() error {
	switch t := http.DetectContentType(m.Data); {
	case len(m.Data) == 0:
		return invalid("message image", "no bytes")
	case len(m.Data) > catalog.RobotImageBytes:
		return invalid("message image", "%d bytes, at most %d", len(m.Data), catalog.RobotImageBytes)
	case t != "image/jpeg" && t != "image/png":
		return invalid("message image", "%s, not a JPG or PNG", t)
	}
	return nil
}

// MarshalJSON writes the image as WeCom takes it: its bytes in base64 and
// the MD5 of the bytes (not of the base64).
func (m *RobotImage) MarshalJSON() ([]byte, error) {
	sum := md5.Sum(m.Data)
	return json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(m.Data), "md5": hex.EncodeToString(sum[:])})
}

// Validate implements RobotMessage.
func (m *RobotNews) Validate() error {
	errs := []error{count("news articles", len(m.Articles), catalog.RobotArticles)}
	for i, a := range m.Articles {
		f := fmt.Sprintf("news article %d ", i+1)
		errs = append(errs, text(f+"title", a.Title, 0), text(f+"url", a.URL, 0))
	}
	return errors.Join(errs...)
}

// Validate implements RobotMessage.
func (m *RobotFile) Validate() error { return text("file media_id", m.MediaID, 0) }

// Validate implements RobotMessage.
func (m *RobotVoice) Validate() error { return text("voice media_id", m.MediaID, 0) }
