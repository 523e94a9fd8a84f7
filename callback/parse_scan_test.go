package callback

import "testing"

// TestScanProbe: the scan tells a kind from plain or CDATA text and gives
// up, to a real read, on text it would have to decode.
func TestScanProbe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		xml  string
		want probe
		ok   bool
	}{
		{`<xml><MsgType><![CDATA[event]]></MsgType><Event> <![CDATA[click]]> </Event></xml>`, probe{MsgType: "event", Event: "click"}, true},
		{`<xml><MsgType>text</MsgType><Content><![CDATA[<MsgType>event</MsgType>]]></Content></xml>`, probe{MsgType: "text"}, true},
		{`<xml><InfoType> <![CDATA[suite_ticket]]></InfoType></xml>`, probe{InfoType: "suite_ticket"}, true},
		{`<xml><MsgType>ev&#101;nt</MsgType></xml>`, probe{}, false},
		{`<xml><MsgType><![CDATA[event]]></MsgType></xml>`, probe{MsgType: "event"}, false},
		{`<xml><MsgType>text</xml>`, probe{}, false},
		{`<xml></xml>`, probe{}, false},
	}
	for _, tt := range tests {
		p, ok := scanProbe([]byte(tt.xml))
		if ok != tt.ok || (ok && p != tt.want) {
			t.Errorf("scanProbe(%s) = %+v, %t; want %+v, %t", tt.xml, p, ok, tt.want, tt.ok)
		}
	}
	// A scan that disagrees with the XML is not believed: the first
	// MsgType here is in a comment the XML reader skips.
	ev, err := Parse([]byte(`<xml><!-- <MsgType>text</MsgType> --><MsgType><![CDATA[event]]></MsgType><Event>click</Event><EventKey>k</EventKey></xml>`))
	if _, menu := ev.(*MenuEvent); err != nil || !menu {
		t.Errorf("Parse = %T, %v; want a *MenuEvent", ev, err)
	}
}
