package callback

// Event is a decrypted callback: one of this package's message and event
// types (*TextMessage, *ExternalContactEvent, *SuiteTicketEvent, …), or a
// *RawEvent for a kind this package does not know. Every one embeds a
// Header.
type Event interface {
	// Common returns the fields every callback has, and its XML.
	Common() *Header
}

// Header holds what every callback carries. An app's callbacks set
// ToUserName, FromUserName, CreateTime, MsgType (and Event for events); a
// suite's command callbacks set SuiteID, InfoType and TimeStamp (and
// AuthCorpID when about an authorizing corp) instead.
type Header struct {
	// ToUserName is the corp id (ww…) of the receiving corp.
	ToUserName string `xml:"ToUserName"`
	// FromUserName is the sender: a member's userid, or "sys" for a
	// system event.
	FromUserName string `xml:"FromUserName"`
	// CreateTime is when WeCom created the message, in Unix seconds.
	CreateTime int64 `xml:"CreateTime"`
	// MsgType is text, image, voice, video, location, link, or event.
	MsgType string `xml:"MsgType"`
	// Event names the event when MsgType is "event".
	Event string `xml:"Event"`
	// AgentID is the app the callback is for (0 when absent).
	AgentID int64 `xml:"AgentID"`

	// SuiteID is the suite of a command callback.
	SuiteID string `xml:"SuiteId"`
	// InfoType names a suite's command callback (suite_ticket, …).
	InfoType string `xml:"InfoType"`
	// TimeStamp is when WeCom sent a command callback, in Unix seconds.
	TimeStamp int64 `xml:"TimeStamp"`
	// AuthCorpID is the authorizing corp a command callback is about.
	AuthCorpID string `xml:"AuthCorpId"`

	// XML is the decrypted callback as WeCom sent it, for the fields a type
	// does not hold.
	XML []byte `xml:"-"`
}

// Common implements Event.
func (h *Header) Common() *Header { return h }

// RawEvent is a callback of a kind this package does not parse: its Header
// (with MsgType, Event, InfoType) and ChangeType, and its XML. Kinds are
// delivered raw, never refused.
type RawEvent struct {
	Header
	// ChangeType further names the event (change_contact's create_user…).
	ChangeType string `xml:"ChangeType"`
}

// TextMessage is a text a member sent to the app (MsgType text).
type TextMessage struct {
	Header
	MsgID   string `xml:"MsgId"`
	Content string `xml:"Content"`
}

// ImageMessage is a picture (MsgType image).
type ImageMessage struct {
	Header
	MsgID   string `xml:"MsgId"`
	PicURL  string `xml:"PicUrl"`
	MediaID string `xml:"MediaId"`
}

// VoiceMessage is a voice message (MsgType voice); Format is amr or speex.
type VoiceMessage struct {
	Header
	MsgID   string `xml:"MsgId"`
	MediaID string `xml:"MediaId"`
	Format  string `xml:"Format"`
}

// VideoMessage is a video (MsgType video).
type VideoMessage struct {
	Header
	MsgID        string `xml:"MsgId"`
	MediaID      string `xml:"MediaId"`
	ThumbMediaID string `xml:"ThumbMediaId"`
}

// LocationMessage is a location a member shared (MsgType location).
type LocationMessage struct {
	Header
	MsgID     string  `xml:"MsgId"`
	Latitude  float64 `xml:"Location_X"`
	Longitude float64 `xml:"Location_Y"`
	Scale     int     `xml:"Scale"`
	Label     string  `xml:"Label"`
	AppType   string  `xml:"AppType"`
}

// LinkMessage is a link (MsgType link).
type LinkMessage struct {
	Header
	MsgID       string `xml:"MsgId"`
	Title       string `xml:"Title"`
	Description string `xml:"Description"`
	URL         string `xml:"Url"`
	PicURL      string `xml:"PicUrl"`
}

// SubscribeEvent is a member following (Event subscribe) or unfollowing
// (unsubscribe) the app.
type SubscribeEvent struct {
	Header
}

// EnterAgentEvent is a member opening the app (Event enter_agent).
type EnterAgentEvent struct {
	Header
	EventKey string `xml:"EventKey"`
}

// MenuEvent is a click on a menu item (Event click: EventKey is the item's
// key) or a jump to a URL (Event view: EventKey is the URL).
type MenuEvent struct {
	Header
	EventKey string `xml:"EventKey"`
}

// ScanCodeEvent is a scan from a menu (Event scancode_push or
// scancode_waitmsg).
type ScanCodeEvent struct {
	Header
	EventKey     string `xml:"EventKey"`
	ScanCodeInfo struct {
		ScanType   string `xml:"ScanType"`
		ScanResult string `xml:"ScanResult"`
	} `xml:"ScanCodeInfo"`
}
