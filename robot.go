package wecom

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/wecomkit/wecom/catalog"
)

// Robot sends messages to the group chat of one group robot (群机器人,
// document/path/91770) through its webhook key. It needs no corp id,
// secret or access token: the key is its credential, carried in the query
// and never in a log line, an error or a limiter key (which hold a digest
// of it).
//
// WeCom takes at most 20 messages a minute from one robot. Send counts them
// in the limiter and waits, within its context, for room: a robot shared by
// several processes stays under the limit when they share a limiter
// (WithLimiter on each).
//
// A Robot is safe for concurrent use. It starts a goroutine only for a
// message whose sender gave up before the answer (see Drain).
type Robot struct {
	p *pipeline // carrying the robot's key, for no corp
}

// NewRobot returns a Robot for the webhook key given: the value of key= in
// the robot's webhook URL. The options are the Client's: WithBaseURL,
// WithTransport, WithHTTPClient, WithLimiter, WithRetryPolicy, WithObserver,
// WithLogger and the like share a client's pipeline with the robot; those
// about a corp's credentials (WithAgentID, WithTokenStore, WithTokenSource, ...)
// do nothing here.
func NewRobot(key string, opts ...Option) (*Robot, error) {
	switch {
	case key == "":
		return nil, invalid("robot key", "empty")
	case strings.ContainsFunc(key, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("&#?=/", r)
	}):
		// the key is not echoed: it is a credential
		return nil, invalid("robot key", "holds a space, a control character or one of & # ? = /: give the key of the webhook URL, not the URL")
	}
	cfg, err := newConfig("", "", opts)
	if err != nil {
		return nil, err
	}
	cfg.robotKey = key
	p, err := newPipeline(cfg)
	if err != nil {
		return nil, err
	}
	return &Robot{p: p}, nil
}

// Send sends a message to the robot's group: a *RobotText,
// *RobotMarkdown, *RobotMarkdownV2, *RobotImage, *RobotNews, *RobotFile,
// *RobotVoice, or a *TemplateCardMessage of CardTextNotice or
// CardNewsNotice (a robot sends no interactive card). It waits for room in
// the robot's 20 messages a minute as long as ctx allows; when ctx cannot
// wait that long it fails at once with a *RateLimitError, and nothing is
// sent.
//
// A message sent twice shows twice, so a send whose answer was lost (a
// timeout, -1) is not repeated: its error matches ErrMaybeDone.
func (r *Robot) Send(ctx context.Context, m RobotMessage) error {
	if m == nil {
		return invalid("robot message", "nil")
	}
	if err := m.Validate(); err != nil {
		return err
	}
	if card, ok := m.(*TemplateCardMessage); ok && card.CardType != CardTextNotice && card.CardType != CardNewsNotice {
		return invalid("robot template_card card_type", "%q: a robot sends text_notice and news_notice cards only", card.CardType)
	}
	body, err := json.Marshal(map[string]any{"msgtype": m.MsgType(), m.MsgType(): m})
	if err != nil {
		return invalid("robot message", "%v", err)
	}
	return r.p.perform(ctx, &call{id: catalog.WebhookSend, body: json.RawMessage(body)})
}

// Upload uploads a file for the robot's *RobotFile and *RobotVoice
// messages (webhook/upload_media), streamed from req.Body. req.Type is
// MediaFile (at most 20 MB) or MediaVoice (AMR, at most 2 MB and 60 s);
// either is over 5 bytes. The media_id serves only this robot, for three
// days.
//
// WeCom's limit of 20 a minute is on a robot's messages; its page says
// nothing of uploads, and the SDK does not count them.
func (r *Robot) Upload(ctx context.Context, req UploadRequest) (Media, error) {
	if req.Type != MediaFile && req.Type != MediaVoice {
		return Media{}, invalid("type", "%q: a robot uploads a file or a voice", req.Type)
	}
	size, err := req.check()
	if err != nil {
		return Media{}, err
	}
	return sendUpload(ctx, r.p, catalog.WebhookUpload, req, size)
}

// Drain waits until every attempt of the robot that may outlive its caller
// has ended, or until ctx ends, as Client.Drain does.
func (r *Robot) Drain(ctx context.Context) error { return r.p.background.wait(ctx) }
