package callback

import (
	"bytes"
	"strconv"
)

// flatEvent is an Event whose fields, past its Header, are all text
// children of the root: parseFlat fills it from a scan, without
// encoding/xml's reflection. field returns a pointer (*string, *int64,
// *int or *float64) to the field an element of that name fills, nil for a
// name not its own (its Header's names included: Header.field has those).
// TestFlatFieldsMatchTags holds each field method to the type's xml tags.
type flatEvent interface {
	Event
	fielder
}

// fielder is what fill fills.
type fielder interface {
	field(name []byte) any
}

// headerFields is a Header as fill fills it (a method of Header itself
// would make every event type a flatEvent).
type headerFields Header

// parseFlat is parse for a callback scanFlat can read whose type is a
// flatEvent (or that is of a kind this package does not know). ok is
// false when it cannot tell: parse then reads the XML with encoding/xml,
// which decides, as it decided before parseFlat was.
func parseFlat(data []byte) (Event, *probe, bool) {
	var f flat
	if !scanFlat(data, &f) {
		return nil, nil, false
	}
	els := f.els[:f.n]
	var h Header
	if !fill((*headerFields)(&h), els) {
		return nil, nil, false
	}
	trimNames(&h)
	p := &probe{ToUserName: h.ToUserName, MsgType: h.MsgType, Event: h.Event, InfoType: h.InfoType}
	var ev flatEvent = new(RawEvent)
	if known := newEvent(p.kindOf()); known != nil {
		if ev, _ = known.(flatEvent); ev == nil {
			return nil, nil, false
		}
	}
	*ev.Common() = h
	if !fill(ev, els) {
		return nil, nil, false
	}
	trimNames(ev)
	p.MsgID = msgIDOf(ev)
	if _, raw := ev.(*RawEvent); raw {
		p.MsgID = lastText(els, "MsgId") // as parseXML: an unknown message's id
	}
	ev.Common().XML = data
	return ev, p, true
}

// lastText returns the text of the last element named name, "" if none.
func lastText(els []element, name string) string {
	for i := len(els) - 1; i >= 0; i-- {
		if string(els[i].name) == name {
			return string(els[i].text)
		}
	}
	return ""
}

// fill sets the fields of ev that els name (the last of a name wins, as
// in encoding/xml); ok is false when a number does not parse.
func fill(ev fielder, els []element) bool {
	for _, e := range els {
		switch dst := ev.field(e.name).(type) {
		case *string:
			*dst = string(e.text)
		case *int64:
			n, ok := parseInt(e.text, 64)
			if !ok {
				return false
			}
			*dst = n
		case *int:
			n, ok := parseInt(e.text, strconv.IntSize)
			if !ok {
				return false
			}
			*dst = int(n)
		case *float64:
			if len(e.text) == 0 {
				*dst = 0
				continue
			}
			x, err := strconv.ParseFloat(string(bytes.TrimSpace(e.text)), 64)
			if err != nil {
				return false
			}
			*dst = x
		}
	}
	return true
}

// parseInt reads a decimal integer of bits bits as encoding/xml does (no
// text is 0; white space around is dropped), without allocating for
// plain digits.
func parseInt(text []byte, bits int) (int64, bool) {
	if len(text) == 0 {
		return 0, true
	}
	s := bytes.TrimSpace(text)
	if len(s) > 0 && len(s) < 19 && s[0] != '+' && s[0] != '-' { // fits in 63 bits
		var n int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		if bits == 64 || n < 1<<(bits-1) {
			return n, true
		}
	}
	n, err := strconv.ParseInt(string(s), 10, bits)
	return n, err == nil
}

func (h *headerFields) field(name []byte) any {
	switch string(name) {
	case "ToUserName":
		return &h.ToUserName
	case "FromUserName":
		return &h.FromUserName
	case "CreateTime":
		return &h.CreateTime
	case "MsgType":
		return &h.MsgType
	case "Event":
		return &h.Event
	case "AgentID":
		return &h.AgentID
	case "SuiteId":
		return &h.SuiteID
	case "InfoType":
		return &h.InfoType
	case "TimeStamp":
		return &h.TimeStamp
	case "AuthCorpId":
		return &h.AuthCorpID
	}
	return nil
}

func (e *RawEvent) field(name []byte) any {
	if string(name) == "ChangeType" {
		return &e.ChangeType
	}
	return nil
}

func (m *TextMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "Content":
		return &m.Content
	}
	return nil
}

func (m *ImageMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "PicUrl":
		return &m.PicURL
	case "MediaId":
		return &m.MediaID
	}
	return nil
}

func (m *VoiceMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "MediaId":
		return &m.MediaID
	case "Format":
		return &m.Format
	}
	return nil
}

func (m *VideoMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "MediaId":
		return &m.MediaID
	case "ThumbMediaId":
		return &m.ThumbMediaID
	}
	return nil
}

func (m *LocationMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "Location_X":
		return &m.Latitude
	case "Location_Y":
		return &m.Longitude
	case "Scale":
		return &m.Scale
	case "Label":
		return &m.Label
	case "AppType":
		return &m.AppType
	}
	return nil
}

func (m *LinkMessage) field(name []byte) any {
	switch string(name) {
	case "MsgId":
		return &m.MsgID
	case "Title":
		return &m.Title
	case "Description":
		return &m.Description
	case "Url":
		return &m.URL
	case "PicUrl":
		return &m.PicURL
	}
	return nil
}

func (e *SubscribeEvent) field([]byte) any { return nil }

func (e *EnterAgentEvent) field(name []byte) any {
	if string(name) == "EventKey" {
		return &e.EventKey
	}
	return nil
}

func (e *MenuEvent) field(name []byte) any {
	if string(name) == "EventKey" {
		return &e.EventKey
	}
	return nil
}

func (e *UploadMediaJobEvent) field(name []byte) any {
	if string(name) == "JobId" {
		return &e.JobID
	}
	return nil
}

func (e *ExternalContactEvent) field(name []byte) any {
	switch string(name) {
	case "ChangeType":
		return &e.ChangeType
	case "UserID":
		return &e.UserID
	case "ExternalUserID":
		return &e.ExternalUserID
	case "State":
		return &e.State
	case "WelcomeCode":
		return &e.WelcomeCode
	case "Source":
		return &e.Source
	case "FailReason":
		return &e.FailReason
	}
	return nil
}

func (e *ExternalTagEvent) field(name []byte) any {
	switch string(name) {
	case "ChangeType":
		return &e.ChangeType
	case "Id":
		return &e.ID
	case "TagType":
		return &e.TagType
	case "StrategyId":
		return &e.StrategyID
	}
	return nil
}

func (e *KfEvent) field(name []byte) any {
	switch string(name) {
	case "Token":
		return &e.Token
	case "OpenKfId":
		return &e.OpenKfID
	}
	return nil
}

func (e *SuiteTicketEvent) field(name []byte) any {
	if string(name) == "SuiteTicket" {
		return &e.SuiteTicket
	}
	return nil
}

func (e *AuthEvent) field(name []byte) any {
	switch string(name) {
	case "AuthCode":
		return &e.AuthCode
	case "State":
		return &e.State
	}
	return nil
}

func (e *ContactEvent) field(name []byte) any {
	switch string(name) {
	case "ChangeType":
		return &e.ChangeType
	case "UserID":
		return &e.UserID
	case "NewUserID":
		return &e.NewUserID
	case "Name":
		return &e.Name
	case "Department":
		return &e.Department
	case "MainDepartment":
		return &e.MainDepartment
	case "IsLeaderInDept":
		return &e.IsLeaderInDept
	case "DirectLeader":
		return &e.DirectLeader
	case "Position":
		return &e.Position
	case "Mobile":
		return &e.Mobile
	case "Gender":
		return &e.Gender
	case "Email":
		return &e.Email
	case "BizMail":
		return &e.BizMail
	case "Status":
		return &e.Status
	case "Avatar":
		return &e.Avatar
	case "Alias":
		return &e.Alias
	case "Telephone":
		return &e.Telephone
	case "Address":
		return &e.Address
	case "Id":
		return &e.ID
	case "ParentId":
		return &e.ParentID
	case "Order":
		return &e.Order
	case "TagId":
		return &e.TagID
	case "AddUserItems":
		return &e.AddUserItems
	case "DelUserItems":
		return &e.DelUserItems
	case "AddPartyItems":
		return &e.AddPartyItems
	case "DelPartyItems":
		return &e.DelPartyItems
	}
	return nil
}
