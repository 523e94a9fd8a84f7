package mock

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// Group robots (群机器人, document/path/91770): webhook/send and
// webhook/upload_media, called with a robot's key instead of an access
// token. An unknown key answers 93000; over a robot's 20 messages a minute
// the route's limit answers 45009 (WeCom refuses, it does not drop). The
// Server records every message each robot delivered, for tests.

// RobotMessage is one message a robot delivered to its group.
type RobotMessage struct {
	// MsgType is its msgtype ("text", "template_card", ...).
	MsgType string
	// Content is its object on the wire, under its msgtype: {"content":
	// ...} for a text.
	Content json.RawMessage
	// Sent is when the Server delivered it.
	Sent time.Time
}

// robot is one group robot: what it delivered, and its uploaded files.
type robot struct {
	messages []RobotMessage
	media    *mediaStore
}

// AddRobot registers a group robot by its webhook key. Registering it
// twice is a no-op.
func (s *Server) AddRobot(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.robotHost.robots[key] == nil {
		s.robotHost.robots[key] = &robot{media: &mediaStore{files: make(map[string]*mediaFile)}}
	}
}

// RobotMessages returns the messages a robot delivered, oldest first; nil
// for an unknown robot.
func (s *Server) RobotMessages(key string) []RobotMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.robotHost.robots[key]
	if r == nil {
		return nil
	}
	out := make([]RobotMessage, len(r.messages))
	for i, m := range r.messages {
		out[i] = RobotMessage{MsgType: m.MsgType, Content: bytes.Clone(m.Content), Sent: m.Sent}
	}
	return out
}

// checkRobot finds the robot of a webhook key. Robots belong to no corp
// the Server knows: their calls run in the robot host, a corp of their own
// holding only robots. s.mu must be held.
func (s *Server) checkRobot(q url.Values) (*corp, *token, *apiError) {
	if s.robotHost.robots[q.Get(catalog.RobotKey.String())] == nil {
		return nil, nil, errf(catalog.CodeInvalidWebhook, "invalid webhook url")
	}
	return s.robotHost, &token{app: "robot"}, nil
}

// robotOf returns the robot a checked call names.
func (c *corp) robotOf(in *input) *robot {
	return c.robots[in.query.Get(catalog.RobotKey.String())]
}

// Robots registers the group robot (群机器人) APIs.
func (handlerSets) Robots() handlers {
	return handlers{
		catalog.WebhookSend:   (*corp).robotSend,
		catalog.WebhookUpload: (*corp).robotUpload,
	}
}

// robotSend delivers a robot's message (webhook/send) once it is one
// WeCom takes.
func (c *corp) robotSend(in *input) (any, *apiError) {
	var req map[string]json.RawMessage
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	var typ string
	if json.Unmarshal(req["msgtype"], &typ) != nil || typ == "" {
		return nil, errf(catalog.CodeInvalidMsgType, "invalid message type")
	}
	r := c.robotOf(in)
	content := req[typ]
	if len(content) == 0 || content[0] != '{' {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: %s missing", typ)
	}
	if aerr := r.check(typ, content); aerr != nil {
		return nil, aerr
	}
	r.messages = append(r.messages, RobotMessage{MsgType: typ, Content: bytes.Clone(content), Sent: in.now})
	return okStatus("ok"), nil
}

// robotContent is every field of a robot message's object the Server
// checks.
type robotContent struct {
	Content  string `json:"content"`
	Base64   string `json:"base64"`
	MD5      string `json:"md5"`
	MediaID  string `json:"media_id"`
	Articles []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"articles"`
	CardType  string `json:"card_type"`
	MainTitle struct {
		Title string `json:"title"`
	} `json:"main_title"`
	SubTitle  string `json:"sub_title_text"`
	CardImage struct {
		URL string `json:"url"`
	} `json:"card_image"`
	CardAction struct {
		Type  int    `json:"type"`
		URL   string `json:"url"`
		AppID string `json:"appid"`
	} `json:"card_action"`
}

// check refuses a message of type typ whose object WeCom would refuse.
func (r *robot) check(typ string, raw json.RawMessage) *apiError {
	var m robotContent
	if json.Unmarshal(raw, &m) != nil {
		return errf(catalog.CodeDataFormat, "data format error")
	}
	switch typ {
	case "text":
		return content(typ, m.Content, catalog.RobotTextBytes)
	case "markdown", "markdown_v2":
		return content(typ, m.Content, catalog.RobotMarkdownBytes)
	case "image":
		return checkImage(m.Base64, m.MD5)
	case "news":
		if len(m.Articles) < 1 || len(m.Articles) > catalog.RobotArticles {
			return errf(catalog.CodeInvalidParam, "invalid parameter: news.articles: %d, 1 to %d", len(m.Articles), catalog.RobotArticles)
		}
		for i, a := range m.Articles {
			if a.Title == "" || a.URL == "" {
				return errf(catalog.CodeInvalidParam, "invalid parameter: news.articles[%d]: title and url are required", i)
			}
		}
	case "file", "voice":
		if r.media.files[m.MediaID] == nil {
			return errf(catalog.CodeInvalidMediaID, "invalid media_id")
		}
	case "template_card":
		return checkCard(m)
	default:
		return errf(catalog.CodeInvalidMsgType, "invalid message type")
	}
	return nil
}

// content checks a text's or a markdown's content.
func content(typ, s string, limit int) *apiError {
	switch {
	case s == "":
		return errf(catalog.CodeEmptyContent, "empty content")
	case len(s) > limit:
		return errf(catalog.CodeInvalidParam, "%s.content exceed max length %d", typ, limit)
	case !utf8.ValidString(s):
		return errf(catalog.CodeInvalidParam, "%s.content is not utf8", typ)
	}
	return nil
}

// checkImage checks an image: base64 of a JPG or PNG of at most 2 MB,
// whose md5 (of the bytes, not of the base64) is the one given.
func checkImage(b64, sum string) *apiError {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(data) == 0 {
		return errf(catalog.CodeInvalidParam, "invalid parameter: image.base64 is not base64")
	}
	if len(data) > catalog.RobotImageBytes {
		return errf(catalog.CodeInvalidImageSize, "invalid image size")
	}
	if got := md5.Sum(data); hex.EncodeToString(got[:]) != sum {
		return errf(catalog.CodeInvalidParam, "invalid parameter: image.md5 does not match the image")
	}
	return nil
}

// checkCard checks a template card: a text_notice or news_notice with
// what each requires and a card_action that opens something.
func checkCard(m robotContent) *apiError {
	switch {
	case m.CardType != "text_notice" && m.CardType != "news_notice":
		return errf(catalog.CodeInvalidParam, "invalid parameter: card_type %q", m.CardType)
	case m.CardType == "text_notice" && m.MainTitle.Title == "" && m.SubTitle == "":
		return errf(catalog.CodeInvalidParam, "invalid parameter: main_title.title or sub_title_text is required")
	case m.CardType == "news_notice" && (m.MainTitle.Title == "" || m.CardImage.URL == ""):
		return errf(catalog.CodeInvalidParam, "invalid parameter: main_title.title and card_image.url are required")
	}
	a := m.CardAction
	if !(a.Type == 1 && a.URL != "" || a.Type == 2 && a.AppID != "") {
		return errf(catalog.CodeInvalidParam, "invalid parameter: card_action")
	}
	return nil
}

// robotUpload stores a robot's file or voice (webhook/upload_media), for
// that robot's messages only.
func (c *corp) robotUpload(in *input) (any, *apiError) {
	typ := in.query.Get("type")
	caps := map[string]int{"file": catalog.RobotFileBytes, "voice": catalog.RobotVoiceBytes}
	limit, ok := caps[typ]
	if !ok {
		return nil, errf(catalog.CodeInvalidMediaType, "invalid media type")
	}
	name, data, aerr := readMedia(in, limit)
	if aerr != nil {
		return nil, aerr
	}
	r := c.robotOf(in)
	id := r.media.add(&mediaFile{name: name, ctype: "application/octet-stream", data: data})
	return uploadAnswer{status: okStatus("ok"), Type: typ, MediaID: id, CreatedAt: strconv.FormatInt(in.now.Unix(), 10)}, nil
}

// RobotMedia returns the name and bytes of a file a robot uploaded.
func (s *Server) RobotMedia(key, mediaID string) (name string, data []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.robotHost.robots[key]
	if r == nil || r.media.files[mediaID] == nil {
		return "", nil, false
	}
	f := r.media.files[mediaID]
	return f.name, bytes.Clone(f.data), true
}
