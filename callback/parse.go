package callback

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"strings"
)

// newEvent returns a new value of the type of a callback's kind (see
// kindOf), or nil for a kind this package does not parse.
func newEvent(kind string) Event {
	switch kind {
	case "text":
		return new(TextMessage)
	case "image":
		return new(ImageMessage)
	case "voice":
		return new(VoiceMessage)
	case "video":
		return new(VideoMessage)
	case "location":
		return new(LocationMessage)
	case "link":
		return new(LinkMessage)
	case "event/subscribe", "event/unsubscribe":
		return new(SubscribeEvent)
	case "event/enter_agent":
		return new(EnterAgentEvent)
	case "event/click", "event/view":
		return new(MenuEvent)
	case "event/scancode_push", "event/scancode_waitmsg":
		return new(ScanCodeEvent)
	case "event/batch_job_result":
		return new(BatchJobEvent)
	case "event/change_contact", "info/change_contact":
		return new(ContactEvent)
	case "event/change_external_contact", "info/change_external_contact":
		return new(ExternalContactEvent)
	case "event/change_external_chat", "info/change_external_chat":
		return new(ExternalChatEvent)
	case "event/change_external_tag", "info/change_external_tag":
		return new(ExternalTagEvent)
	case "event/kf_msg_or_event":
		return new(KfEvent)
	case "event/template_card_event":
		return new(TemplateCardEvent)
	case "event/sys_approval_change":
		return new(ApprovalEvent)
	case "event/open_approval_change":
		return new(OpenApprovalEvent)
	case "info/suite_ticket":
		return new(SuiteTicketEvent)
	case "info/create_auth", "info/change_auth", "info/cancel_auth":
		return new(AuthEvent)
	}
	return nil
}

// probe holds the fields that name a callback's kind and its identity.
type probe struct {
	ToUserName string `xml:"ToUserName"`
	MsgType    string `xml:"MsgType"`
	Event      string `xml:"Event"`
	InfoType   string `xml:"InfoType"`
	MsgID      string `xml:"MsgId"`
}

// kindOf names a callback's kind: its MsgType for a message,
// "event/"+Event for an event, "info/"+InfoType for a suite's command.
func (p *probe) kindOf() string {
	switch {
	case p.MsgType == "event":
		return "event/" + p.Event
	case p.MsgType != "":
		return p.MsgType
	default:
		return "info/" + p.InfoType
	}
}

// Parse turns a decrypted callback (the XML Crypto.Decrypt returns) into
// its typed Event: a *TextMessage, an *ExternalContactEvent, … A kind this
// package does not know, or a known one whose fields do not parse as
// documented, is a *RawEvent, never an error. Only XML that does not parse
// at all is an error (matching ErrMalformed).
func Parse(data []byte) (Event, error) {
	ev, _, err := parse(data)
	return ev, err
}

// parse is Parse, also returning the probe.
func parse(data []byte) (Event, *probe, error) {
	var p probe
	if err := xml.Unmarshal(data, &p); err != nil {
		return nil, nil, fail(ErrMalformed, "decrypted message is not XML")
	}
	p.MsgType, p.Event, p.InfoType = strings.TrimSpace(p.MsgType), strings.TrimSpace(p.Event), strings.TrimSpace(p.InfoType)
	if ev := newEvent(p.kindOf()); ev != nil {
		if xml.Unmarshal(data, ev) == nil {
			trimNames(ev)
			ev.Common().XML = data
			return ev, &p, nil
		}
	}
	raw := new(RawEvent)
	if err := xml.Unmarshal(data, raw); err != nil {
		// A number that is not one in the Header: keep the kind at least.
		raw = &RawEvent{Header: Header{ToUserName: p.ToUserName, MsgType: p.MsgType, Event: p.Event, InfoType: p.InfoType}}
	}
	trimNames(raw)
	raw.XML = data
	return raw, &p, nil
}

// trimNames strips the white space around the fields that name a
// callback's kind (MsgType, Event, InfoType, ChangeType): WeCom's own
// documented samples have some, such as document 90628's
// "<InfoType> <![CDATA[suite_ticket]]></InfoType>".
func trimNames(ev Event) {
	h := ev.Common()
	h.MsgType, h.Event, h.InfoType = strings.TrimSpace(h.MsgType), strings.TrimSpace(h.Event), strings.TrimSpace(h.InfoType)
	var ct *string
	switch e := ev.(type) {
	case *RawEvent:
		ct = &e.ChangeType
	case *ContactEvent:
		ct = &e.ChangeType
	case *ExternalContactEvent:
		ct = &e.ChangeType
	case *ExternalChatEvent:
		ct = &e.ChangeType
	case *ExternalTagEvent:
		ct = &e.ChangeType
	}
	if ct != nil {
		*ct = strings.TrimSpace(*ct)
	}
}

// dedupeKey returns the key under which a callback is remembered.
//
// A message has a MsgId, unique per receiving corp. An event has none, and
// FromUserName+CreateTime (WeCom's advice) is too coarse: two contact
// changes in the same second come from the same sender ("sys") at the same
// time, and both must be delivered. WeCom's retries of an event carry the
// same plaintext (a new random prefix and signature, but the same message
// XML, CreateTime included), so the SHA-256 of the decrypted XML is the
// same for every retry of one event and differs between two events that
// differ in any field. Two events identical in every field, in the same
// second, are delivered once.
func dedupeKey(p *probe, data []byte) string {
	if p.MsgID != "" && p.MsgType != "event" {
		return "msg:" + p.ToUserName + ":" + p.MsgID
	}
	sum := sha256.Sum256(data)
	return "xml:" + hex.EncodeToString(sum[:])
}
