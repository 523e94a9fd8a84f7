package wecom

import (
	"errors"
	"fmt"
)

// The message types of message/send (document/path/90236), each as WeCom
// takes it on the wire under its msgtype. Lengths are WeCom's, in bytes of
// UTF-8 unless said otherwise.

// TextMessage is a text message ("text"), at most 2,048 bytes. It may
// hold links and <a href> tags.
type TextMessage struct {
	Content string `json:"content"`
}

// MarkdownMessage is a message in WeCom's subset of Markdown ("markdown"),
// at most 2,048 bytes. Only the WeCom apps show it.
type MarkdownMessage struct {
	Content string `json:"content"`
}

// ImageMessage is an image ("image") uploaded with Media.Upload.
type ImageMessage struct {
	MediaID string `json:"media_id"`
}

// VoiceMessage is a voice message ("voice") uploaded with Media.Upload.
type VoiceMessage struct {
	MediaID string `json:"media_id"`
}

// FileMessage is a file ("file") uploaded with Media.Upload.
type FileMessage struct {
	MediaID string `json:"media_id"`
}

// VideoMessage is a video ("video") uploaded with Media.Upload, with a
// title of at most 128 bytes and a description of at most 512.
type VideoMessage struct {
	MediaID     string `json:"media_id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// TextCardMessage is a card that opens URL ("textcard"): a title of at
// most 128 bytes, a description of at most 512 (WeCom's <div class> tags
// color it) and a button text of at most 4 characters ("详情" when empty).
type TextCardMessage struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	URL         string `json:"url"`
	ButtonText  string `json:"btntxt,omitempty"`
}

// NewsMessage is one to eight linked articles ("news").
type NewsMessage struct {
	Articles []NewsArticle `json:"articles"`
}

// NewsArticle is one article of a NewsMessage: it opens URL, or the mini
// program AppID at PagePath.
type NewsArticle struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	PicURL      string `json:"picurl,omitempty"`
	AppID       string `json:"appid,omitempty"`
	PagePath    string `json:"pagepath,omitempty"`
}

// MPNewsMessage is one to eight articles stored in WeCom ("mpnews"),
// shown in WeCom itself.
type MPNewsMessage struct {
	Articles []MPNewsArticle `json:"articles"`
}

// MPNewsArticle is one article of an MPNewsMessage: its cover image
// (ThumbMediaID, from Media.Upload) and its HTML Content are required.
type MPNewsArticle struct {
	Title            string `json:"title"`
	ThumbMediaID     string `json:"thumb_media_id"`
	Author           string `json:"author,omitempty"`
	ContentSourceURL string `json:"content_source_url,omitempty"`
	Content          string `json:"content"`
	Digest           string `json:"digest,omitempty"`
}

// MiniProgramNotice is a notice of a mini program bound to the app
// ("miniprogram_notice"): a title of 4 to 12 characters and at most 10
// items of content. Only the WeCom apps show it.
type MiniProgramNotice struct {
	AppID             string       `json:"appid"`
	Page              string       `json:"page,omitempty"`
	Title             string       `json:"title"`
	Description       string       `json:"description,omitempty"`
	EmphasisFirstItem bool         `json:"emphasis_first_item,omitempty"`
	ContentItems      []NoticeItem `json:"content_item,omitempty"`
}

// NoticeItem is one line of a MiniProgramNotice: a key of at most 10
// characters and a value of at most 30.
type NoticeItem struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// MsgType implements MessageContent.
func (*TextMessage) MsgType() string { return "text" }

// MsgType implements MessageContent.
func (*MarkdownMessage) MsgType() string { return "markdown" }

// MsgType implements MessageContent.
func (*ImageMessage) MsgType() string { return "image" }

// MsgType implements MessageContent.
func (*VoiceMessage) MsgType() string { return "voice" }

// MsgType implements MessageContent.
func (*FileMessage) MsgType() string { return "file" }

// MsgType implements MessageContent.
func (*VideoMessage) MsgType() string { return "video" }

// MsgType implements MessageContent.
func (*TextCardMessage) MsgType() string { return "textcard" }

// MsgType implements MessageContent.
func (*NewsMessage) MsgType() string { return "news" }

// MsgType implements MessageContent.
func (*MPNewsMessage) MsgType() string { return "mpnews" }

// MsgType implements MessageContent.
func (*MiniProgramNotice) MsgType() string { return "miniprogram_notice" }

// Validate implements MessageContent.
func (m *TextMessage) Validate() error { return text("text content", m.Content, 2048) }

// Validate implements MessageContent.
func (m *MarkdownMessage) Validate() error { return text("markdown content", m.Content, 2048) }

// Validate implements MessageContent.
func (m *ImageMessage) Validate() error { return text("image media_id", m.MediaID, 0) }

// Validate implements MessageContent.
func (m *VoiceMessage) Validate() error { return text("voice media_id", m.MediaID, 0) }

// Validate implements MessageContent.
func (m *FileMessage) Validate() error { return text("file media_id", m.MediaID, 0) }

// Validate implements MessageContent.
func (m *VideoMessage) Validate() error {
	return errors.Join(text("video media_id", m.MediaID, 0), atMost("video title", m.Title, 128),
		atMost("video description", m.Description, 512))
}

// Validate implements MessageContent.
func (m *TextCardMessage) Validate() error {
	return errors.Join(text("textcard title", m.Title, 128), text("textcard description", m.Description, 512),
		text("textcard url", m.URL, 2048), atMostRunes("textcard btntxt", m.ButtonText, 4))
}

// Validate implements MessageContent.
func (m *NewsMessage) Validate() error {
	errs := []error{count("news articles", len(m.Articles), 8)}
	for i, a := range m.Articles {
		f := fmt.Sprintf("news article %d ", i+1)
		errs = append(errs, text(f+"title", a.Title, 128), atMost(f+"description", a.Description, 512), atMost(f+"url", a.URL, 2048))
		if a.URL == "" && a.AppID == "" {
			errs = append(errs, invalid(f+"url", "neither a url nor a mini program's appid"))
		}
	}
	return errors.Join(errs...)
}

// Validate implements MessageContent.
func (m *MPNewsMessage) Validate() error {
	errs := []error{count("mpnews articles", len(m.Articles), 8)}
	for i, a := range m.Articles {
		f := fmt.Sprintf("mpnews article %d ", i+1)
		errs = append(errs, text(f+"title", a.Title, 128), text(f+"thumb_media_id", a.ThumbMediaID, 0),
			text(f+"content", a.Content, 666*1024), atMost(f+"author", a.Author, 64), atMost(f+"digest", a.Digest, 512))
	}
	return errors.Join(errs...)
}

// Validate implements MessageContent.
func (m *MiniProgramNotice) Validate() error {
	errs := []error{text("miniprogram_notice appid", m.AppID, 0), count("miniprogram_notice content_item", max(len(m.ContentItems), 1), 10)}
	if n := len([]rune(m.Title)); n < 4 || n > 12 {
		errs = append(errs, invalid("miniprogram_notice title", "%d characters, 4 to 12", n))
	}
	for i, it := range m.ContentItems {
		f := fmt.Sprintf("miniprogram_notice item %d ", i+1)
		errs = append(errs, atMostRunes(f+"key", it.Key, 10), atMostRunes(f+"value", it.Value, 30))
	}
	return errors.Join(errs...)
}

// text fails when s is empty or (with limit > 0) longer than limit bytes.
func text(field, s string, limit int) error {
	if s == "" {
		return invalid("message "+field, "empty")
	}
	return atMost(field, s, limit)
}

// atMost fails when s is longer than limit bytes (limit 0: no limit).
func atMost(field, s string, limit int) error {
	if limit > 0 && len(s) > limit {
		return invalid("message "+field, "%d bytes, at most %d", len(s), limit)
	}
	return nil
}

// atMostRunes fails when s is longer than limit characters.
func atMostRunes(field, s string, limit int) error {
	if n := len([]rune(s)); n > limit {
		return invalid("message "+field, "%d characters, at most %d", n, limit)
	}
	return nil
}

// count fails when n is not in 1..limit.
func count(field string, n, limit int) error {
	if n < 1 || n > limit {
		return invalid("message "+field, "%d, from 1 to %d", n, limit)
	}
	return nil
}
