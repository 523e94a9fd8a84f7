package callback

import (
	"encoding/xml"
	"time"
)

// TextReply returns the plaintext XML of a passive text reply to a message
// (for HandleReply): from the app (the message's ToUserName) to its sender
// (FromUserName), created now.
func TextReply(to Event, content string) []byte {
	h := to.Common()
	out, err := xml.Marshal(struct {
		XMLName      xml.Name `xml:"xml"`
		ToUserName   string   `xml:"ToUserName"`
		FromUserName string   `xml:"FromUserName"`
		CreateTime   int64    `xml:"CreateTime"`
		MsgType      string   `xml:"MsgType"`
		Content      string   `xml:"Content"`
	}{ToUserName: h.FromUserName, FromUserName: h.ToUserName, CreateTime: time.Now().Unix(), MsgType: "text", Content: content})
	if err != nil { // strings and an integer always marshal
		return nil
	}
	return out
}
