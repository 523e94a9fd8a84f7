package callback

import (
	"bytes"
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
	case "event/upload_media_job_finish":
		return new(UploadMediaJobEvent)
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

// command reports a suite's command callback (an InfoType, no MsgType),
// answered "success" within the command timeout.
func (p *probe) command() bool { return p.MsgType == "" }

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

// parse is Parse, also returning the probe. The flat XML of most kinds is
// scanned and filled in without encoding/xml (parseFlat); the rest
// parseXML reads.
func parse(data []byte) (Event, *probe, error) {
	if ev, p, ok := parseFlat(data); ok {
		return ev, p, nil
	}
	return parseXML(data)
}

// parseXML is parse by encoding/xml. WeCom's XML is read once when
// its kind can be told from a scan of its top (scanProbe) and the typed
// value agrees with the scan; else as before, a first read for the kind
// and a second into its type.
func parseXML(data []byte) (Event, *probe, error) {
	if p, ok := scanProbe(data); ok {
		if ev := newEvent(p.kindOf()); ev != nil {
			if err := xml.Unmarshal(data, ev); err == nil {
				trimNames(ev)
				if h := ev.Common(); h.MsgType == p.MsgType && h.Event == p.Event && h.InfoType == p.InfoType {
					p.ToUserName, p.MsgID = h.ToUserName, msgIDOf(ev)
					h.XML = data
					return ev, &p, nil
				}
			} else if _, syntax := err.(*xml.SyntaxError); syntax {
				return nil, nil, fail(ErrMalformed, "decrypted message is not XML")
			}
		}
	}
	var p probe
	if err := xml.Unmarshal(data, &p); err != nil {
		return nil, nil, fail(ErrMalformed, "decrypted message is not XML")
	}
	p.MsgType, p.Event, p.InfoType = strings.TrimSpace(p.MsgType), strings.TrimSpace(p.Event), strings.TrimSpace(p.InfoType)
	if ev := newEvent(p.kindOf()); ev != nil {
		if xml.Unmarshal(data, ev) == nil {
			trimNames(ev)
			ev.Common().XML = data
			p.MsgID = msgIDOf(ev) // as above: an event's MsgId is no message's
			return ev, &p, nil
		}
	}
	// A kind this package does not know keeps its MsgId, if it has one.
	raw := new(RawEvent)
	if err := xml.Unmarshal(data, raw); err != nil {
		// A number that is not one in the Header: keep the kind at least.
		raw = &RawEvent{Header: Header{ToUserName: p.ToUserName, MsgType: p.MsgType, Event: p.Event, InfoType: p.InfoType}}
	}
	trimNames(raw)
	raw.XML = data
	return raw, &p, nil
}

// scanProbe reads the names of a callback's kind from its XML without
// parsing it: the text of the first MsgType, Event and InfoType elements,
// plain or CDATA. ok is false when the scan cannot tell (an element
// missing, or text with markup or entities to decode): parse then reads
// the XML. parse checks the scan against the typed value it reads.
func scanProbe(data []byte) (p probe, ok bool) {
	msgType, found, plain := firstText(data, "MsgType")
	switch {
	case !plain:
		return p, false
	case found:
		p.MsgType = msgType
		if p.MsgType == "event" {
			if p.Event, found, plain = firstText(data, "Event"); !found || !plain {
				return p, false
			}
		}
	default:
		if p.InfoType, found, plain = firstText(data, "InfoType"); !found || !plain {
			return p, false
		}
	}
	return p, true
}

// firstText returns the trimmed text of the first <name> element of data:
// found reports one, plain that its text needs no decoding (plain
// characters, or one CDATA section).
func firstText(data []byte, name string) (text string, found, plain bool) {
	open, end := "<"+name+">", "</"+name+">"
	i := bytes.Index(data, []byte(open))
	if i < 0 {
		return "", false, true
	}
	v := data[i+len(open):]
	j := bytes.Index(v, []byte(end))
	if j < 0 {
		return "", true, false
	}
	v = bytes.TrimSpace(v[:j])
	if cd, ok := bytes.CutPrefix(v, []byte("<![CDATA[")); ok {
		inner, rest, ok := bytes.Cut(cd, []byte("]]>"))
		if !ok || len(rest) > 0 {
			return "", true, false
		}
		v = inner
	} else if bytes.ContainsAny(v, "<&") {
		return "", true, false
	}
	return strings.TrimSpace(string(v)), true, true
}

// msgIDOf returns a message's MsgId ("" for an event).
func msgIDOf(ev Event) string {
	switch m := ev.(type) {
	case *TextMessage:
		return m.MsgID
	case *ImageMessage:
		return m.MsgID
	case *VoiceMessage:
		return m.MsgID
	case *VideoMessage:
		return m.MsgID
	case *LocationMessage:
		return m.MsgID
	case *LinkMessage:
		return m.MsgID
	}
	return ""
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

// dedupeKey returns the key under which a callback is remembered, in the
// Handler's namespace ns, built in one allocation.
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
func dedupeKey(ns string, p *probe, data []byte) string {
	if p.MsgID != "" && p.MsgType != "event" {
		return ns + ":msg:" + p.ToUserName + ":" + p.MsgID
	}
	sum := sha256.Sum256(data)
	var digits [2 * sha256.Size]byte
	hex.Encode(digits[:], sum[:])
	return ns + ":xml:" + string(digits[:])
}
