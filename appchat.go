package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// AppChatService calls the app group chat (群聊会话) APIs: chats an app
// creates and posts to (document/path/90244).
//
// WeCom drops, without an error, every app message beyond 200 a minute and
// 10,000 a day that one member receives in groups. Send counts each
// message on every member of its chat and waits, within its context, until
// all of them have room: nothing is sent that WeCom would drop. As
// appchat/send names only the chat, the client keeps the members of the
// chats it created, changed or read (see Send); Client.Do refuses
// appchat/send.
type AppChatService struct {
	p     *pipeline
	chats chatBook // the members of the chats it created, changed or read
}

// AppChatCreateRequest is a new chat (appchat/create, document/path/90245).
// WeCom creates at most 1,000 a day per corp.
type AppChatCreateRequest struct {
	// Name is the chat's name; WeCom cuts it to AppChatNameLen characters.
	Name string `json:"name,omitempty"`
	// Owner is the owner's userid, one of Members; empty: WeCom picks one
	// of them.
	Owner string `json:"owner,omitempty"`
	// Members are the chat's members, by userid: at least 2, at most 2,000.
	Members []string `json:"userlist"`
	// ChatID is the chat's id, at most 32 letters and digits; empty:
	// WeCom makes one.
	ChatID string `json:"chatid,omitempty"`
}

// AppChatUpdateRequest changes a chat (appchat/update,
// document/path/90246): at most 1,000 changes an hour per corp.
type AppChatUpdateRequest struct {
	// ChatID names the chat.
	ChatID string `json:"chatid"`
	// Name and Owner, when not empty, are the chat's new name (cut to
	// AppChatNameLen characters) and owner.
	Name  string `json:"name,omitempty"`
	Owner string `json:"owner,omitempty"`
	// AddMembers join the chat; RemoveMembers leave it.
	AddMembers    []string `json:"add_user_list,omitempty"`
	RemoveMembers []string `json:"del_user_list,omitempty"`
}

// AppChat is a chat as appchat/get answers it (document/path/90247).
type AppChat struct {
	ChatID  string   `json:"chatid"`
	Name    string   `json:"name"`
	Owner   string   `json:"owner"`
	Members []string `json:"userlist"`
	// ChatType is 0 for a chat of members, 1 for a school's (家校) chat.
	ChatType int `json:"chat_type"`
}

// AppChatMessage is a message to a chat (appchat/send, document/path/90248).
type AppChatMessage struct {
	// ChatID names the chat.
	ChatID string
	// Content is what the message says: a *TextMessage, *ImageMessage,
	// *VoiceMessage, *VideoMessage, *FileMessage, *TextCardMessage,
	// *NewsMessage, *MPNewsMessage or *MarkdownMessage.
	Content MessageContent
	// Safe marks a confidential message (保密消息).
	Safe bool
	// FreshMembers reads the chat's members with appchat/get before this
	// send instead of using those the client knows (for up to
	// KnownChatTTL): for a fleet whose other processes change the chat,
	// whose new members a known list would not count.
	FreshMembers bool
}

// The message types appchat/send takes.
var appChatTypes = []string{"text", "image", "voice", "video", "file", "textcard", "news", "mpnews", "markdown"}

// Create creates a chat and returns its id. The client remembers its
// members for Send.
func (s *AppChatService) Create(ctx context.Context, r AppChatCreateRequest) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	r.Members = distinctUserIDs(r.Members)
	var out struct {
		ChatID string `json:"chatid"`
	}
	if err := s.p.perform(ctx, &call{id: catalog.AppChatCreate, body: r, out: &out}); err != nil {
		return "", err
	}
	s.chats.put(out.ChatID, r.Members, s.p.cfg.now())
	return out.ChatID, nil
}

func (r AppChatCreateRequest) validate() error {
	var errs []error
	ms := distinctUserIDs(r.Members)
	switch {
	case len(ms) < catalog.AppChatMinMembers || len(ms) > catalog.AppChatMaxMembers:
		errs = append(errs, invalid("appchat userlist", "%d distinct members, from %d to %d", len(ms), catalog.AppChatMinMembers, catalog.AppChatMaxMembers))
	case slices.Contains(ms, ""):
		errs = append(errs, invalid("appchat userlist", "an empty userid"))
	}
	if r.Owner != "" && !slices.ContainsFunc(ms, func(m string) bool { return strings.EqualFold(m, r.Owner) }) {
		errs = append(errs, invalid("appchat owner", "%q is not one of the members", r.Owner))
	}
	if r.ChatID != "" {
		errs = append(errs, validChatID(r.ChatID))
	}
	return errors.Join(errs...)
}

// validChatID checks a chatid a caller chose: letters and digits, at most
// AppChatIDLen.
func validChatID(id string) error {
	if len(id) > catalog.AppChatIDLen || strings.IndexFunc(id, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
	}) >= 0 {
		return invalid("appchat chatid", "%q: at most %d letters and digits", id, catalog.AppChatIDLen)
	}
	return nil
}

// Update changes a chat. The client applies the change to the members it
// knows of the chat; after a failure it forgets them, and Send reads them
// again.
func (s *AppChatService) Update(ctx context.Context, r AppChatUpdateRequest) error {
	switch {
	case r.ChatID == "":
		return invalid("appchat chatid", "empty")
	case r.Name == "" && r.Owner == "" && len(r.AddMembers) == 0 && len(r.RemoveMembers) == 0:
		return invalid("appchat update", "nothing to change")
	case slices.Contains(r.AddMembers, "") || slices.Contains(r.RemoveMembers, ""):
		return invalid("appchat update", "an empty userid")
	}
	err := s.p.perform(ctx, &call{id: catalog.AppChatUpdate, body: r})
	if err != nil {
		s.chats.forget(r.ChatID)
		return err
	}
	s.chats.change(r.ChatID, r.AddMembers, r.RemoveMembers)
	return nil
}

// Get reads a chat. The client remembers its members for Send.
func (s *AppChatService) Get(ctx context.Context, chatID string) (AppChat, error) {
	if chatID == "" {
		return AppChat{}, invalid("appchat chatid", "empty")
	}
	var out struct {
		ChatInfo AppChat `json:"chat_info"`
	}
	if err := s.p.perform(ctx, &call{id: catalog.AppChatGet, query: url.Values{"chatid": {chatID}}, out: &out}); err != nil {
		return AppChat{}, err
	}
	s.chats.put(chatID, out.ChatInfo.Members, s.p.cfg.now())
	return out.ChatInfo, nil
}

// Send posts a message to a chat. It counts the message on every member of
// the chat: the members the client knows from Create, Update or Get within
// the last KnownChatTTL, or else those a Get reads first. It waits until
// every one of them has room in the per-member windows, however long the
// context allows; when the context cannot wait that long, it fails at once
// with a *RateLimitError whose Members are those without room, and nothing
// is sent.
//
// A change made elsewhere (another process, the chat's own members) is
// seen once the client's entry for the chat is older than KnownChatTTL;
// call Get after one to count the new members at once.
//
// A message sent twice is delivered twice: a send whose outcome is unknown
// is not repeated, and its error matches ErrMaybeDone.
func (s *AppChatService) Send(ctx context.Context, m AppChatMessage) error {
	body, err := appChatBody(m)
	if err != nil {
		return err
	}
	members, ok := s.chats.get(m.ChatID, s.p.cfg.now())
	if !ok || m.FreshMembers {
		chat, err := s.Get(ctx, m.ChatID)
		if err != nil {
			return fmt.Errorf("wecom: reading the members of chat %q, whom its message counts: %w", m.ChatID, err)
		}
		members = chat.Members
	}
	if len(members) == 0 {
		return fmt.Errorf("wecom: %s: WeCom told no member of chat %q, whom its message counts: not sent", catalog.AppChatSend, m.ChatID)
	}
	err = s.p.perform(ctx, &call{id: catalog.AppChatSend, body: body, chatMembers: members})
	if code := errcodeOf(err); code == CodeChatNotFound || code == CodeChatNotOwned {
		s.chats.forget(m.ChatID)
	}
	return err
}

// appChatBody checks m and returns its JSON body.
func appChatBody(m AppChatMessage) (json.RawMessage, error) {
	var errs []error
	if m.ChatID == "" {
		errs = append(errs, invalid("appchat chatid", "empty"))
	}
	switch {
	case m.Content == nil:
		errs = append(errs, invalid("appchat content", "none"))
	case !slices.Contains(appChatTypes, m.Content.MsgType()):
		errs = append(errs, invalid("appchat msgtype", "%q: a chat takes %s", m.Content.MsgType(), strings.Join(appChatTypes, ", ")))
	default:
		errs = append(errs, m.Content.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := map[string]any{"chatid": m.ChatID, "msgtype": m.Content.MsgType(), m.Content.MsgType(): m.Content}
	if m.Safe {
		w["safe"] = 1
	}
	return json.Marshal(w)
}
