package mock

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"time"
)

// The events the Server sends for changes made through the API, where
// WeCom sends one (its contact change notices; document/path/92130 for
// customer contact), and for a customer added with AddExternalContact.

// callbackEvent is an event to push: its Event, ChangeType and fields, in
// order, under the header every event has.
type callbackEvent struct {
	event, changeType string
	fields            []xmlField
}

// xmlField is one element of an event: text in CDATA, or a number.
type xmlField struct {
	name, value string
	number      bool
}

func text(name, value string) xmlField { return xmlField{name: name, value: value} }
func number(name string, n int) xmlField {
	return xmlField{name: name, value: strconv.Itoa(n), number: true}
}

// emit queues an event for the call's corp's receiver; execute pushes the
// events of a call that succeeded.
func (in *input) emit(event, changeType string, fields ...xmlField) {
	in.events = append(in.events, callbackEvent{event: event, changeType: changeType, fields: fields})
}

// pushEventsLocked pushes events to corp corpID's receiver, if it has one.
// s.mu must be held (it is the events' time).
func (s *Server) pushEventsLocked(corpID string, now time.Time, events []callbackEvent) {
	if len(events) == 0 {
		return
	}
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	t := s.push.targets[corpID]
	if t == nil {
		return
	}
	for _, ev := range events {
		s.startPushLocked(t, &delivery{corpID: corpID, event: ev.event, changeType: ev.changeType, xml: ev.xml(corpID, now)})
	}
}

// xml renders the event as WeCom's plaintext: ToUserName (the corp),
// FromUserName sys, CreateTime, MsgType event, Event, ChangeType, then the
// fields.
func (ev callbackEvent) xml(corpID string, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("<xml>")
	writeCDATA(&b, "ToUserName", corpID)
	writeCDATA(&b, "FromUserName", "sys")
	b.WriteString("<CreateTime>" + strconv.FormatInt(now.Unix(), 10) + "</CreateTime>")
	writeCDATA(&b, "MsgType", "event")
	writeCDATA(&b, "Event", ev.event)
	if ev.changeType != "" {
		writeCDATA(&b, "ChangeType", ev.changeType)
	}
	for _, f := range ev.fields {
		if f.number {
			b.WriteString("<" + f.name + ">" + f.value + "</" + f.name + ">")
		} else {
			writeCDATA(&b, f.name, f.value)
		}
	}
	b.WriteString("</xml>")
	return b.Bytes()
}

// writeCDATA writes <name><![CDATA[value]]></name>, splitting any "]]>"
// in value across two sections.
func writeCDATA(b *bytes.Buffer, name, value string) {
	b.WriteString("<" + name + "><![CDATA[")
	b.WriteString(strings.ReplaceAll(value, "]]>", "]]]]><![CDATA[>"))
	b.WriteString("]]></" + name + ">")
}

// probeOf reads the Event (or MsgType, or InfoType) and ChangeType of a
// callback's XML, for CallbackDelivery; "" when it is not XML.
func probeOf(msg []byte) (event, changeType string, command bool) {
	var p struct {
		MsgType, Event, InfoType, ChangeType string
	}
	_ = xml.Unmarshal(msg, &p) // a test may push anything
	p.Event, p.InfoType, p.MsgType = strings.TrimSpace(p.Event), strings.TrimSpace(p.InfoType), strings.TrimSpace(p.MsgType)
	switch {
	case p.Event != "":
		event = p.Event
	case p.InfoType != "":
		event, command = p.InfoType, true
	default:
		event = p.MsgType
	}
	return event, strings.TrimSpace(p.ChangeType), command
}

// joinInts joins ids with commas, as WeCom's event items are.
func joinInts(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// AddExternalContact makes cu a new customer of member userID, as a
// customer adding the member does: the customer is added (AddCustomer),
// the follow carries state (the contact way's state, "" for none), a
// welcome code is issued (WelcomeCode), and change_external_contact
// add_external_contact is pushed to the corp's receiver (SetCallback) with
// UserID, ExternalUserID, State and WelcomeCode. It returns the welcome
// code.
func (s *Server) AddExternalContact(corpID, userID string, cu Customer, state string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	now := s.now()
	c.addCustomer(cu, now.Unix(), userID)
	c.customers[userID][cu.ExternalUserID].state = state
	code := c.newWelcomeCode(userID, cu.ExternalUserID, now)
	s.pushEventsLocked(corpID, now, []callbackEvent{{event: "change_external_contact", changeType: "add_external_contact", fields: []xmlField{
		text("UserID", userID), text("ExternalUserID", cu.ExternalUserID), text("State", state), text("WelcomeCode", code),
	}}})
	return code
}
