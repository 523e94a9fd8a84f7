package catalog

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
)

// AppChatKeys reads the chat an app group chat message goes to: the chatid
// of appchat/send's body. The request names no member; the chat's members
// are counted (see Keys.Chat), which only who knows the chat can tell: the
// client's AppChats service and the mock do, Client.Do does not and
// refuses the call.
func AppChatKeys(_ url.Values, body []byte) (Keys, error) {
	var m struct {
		ChatID string `json:"chatid"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Keys{}, fmt.Errorf("%w: the chat: %v", ErrNoKeys, err)
	}
	if m.ChatID == "" {
		return Keys{}, fmt.Errorf("%w: no chat (chatid)", ErrNoKeys)
	}
	return Keys{Chat: m.ChatID}, nil
}

// LinkedMessageKeys reads the members a linked-corp message
// (linkedcorp/message/send) reaches: its touser, an array of userids of the
// corp and "corpid/userid" of linked corps' members, its Weight their
// number (at least 1). Parties, tags and everyone (toall) reach members
// the request does not name: they are listed in Uncounted, as MessageKeys
// lists them.
func LinkedMessageKeys(_ url.Values, body []byte) (Keys, error) {
	var m struct {
		ToUser  []string          `json:"touser"`
		ToParty []json.RawMessage `json:"toparty"`
		ToTag   []json.RawMessage `json:"totag"`
		ToAll   int               `json:"toall"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Keys{}, fmt.Errorf("%w: the recipients: %v", ErrNoKeys, err)
	}
	if slices.Contains(m.ToUser, "") {
		return Keys{}, fmt.Errorf("%w: an empty userid in touser", ErrNoKeys)
	}
	k := Keys{Members: m.ToUser}
	if m.ToAll == 1 {
		k.Uncounted = append(k.Uncounted, "toall")
	}
	if len(m.ToParty) > 0 {
		k.Uncounted = append(k.Uncounted, "toparty")
	}
	if len(m.ToTag) > 0 {
		k.Uncounted = append(k.Uncounted, "totag")
	}
	if len(k.Members) == 0 && len(k.Uncounted) == 0 {
		return Keys{}, fmt.Errorf("%w: no recipient (touser, toparty, totag or toall)", ErrNoKeys)
	}
	k.Weight = max(len(k.Members), 1)
	return k, nil
}
