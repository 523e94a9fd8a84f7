package callback

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// flatSeeds are documents the scan reads and documents it must give up
// on, or read as encoding/xml does: tricks with CDATA, entities,
// comments, namespaces, nesting, duplicates, white space, bad characters.
var flatSeeds = []string{
	`<xml><ToUserName><![CDATA[ww1]]></ToUserName><AgentID><![CDATA[1000002]]></AgentID><Encrypt><![CDATA[abc+/=]]></Encrypt></xml>`,
	"<xml>\n  <ToUserName><![CDATA[ww1]]></ToUserName>\n  <Encrypt>abc</Encrypt>\n</xml>\n",
	`<xml><Encrypt>a</Encrypt><Encrypt>b</Encrypt></xml>`,
	`<xml><Encrypt></Encrypt></xml>`,
	`<xml><Encrypt/></xml>`,
	`<xml><Encrypt> <![CDATA[a]]> </Encrypt></xml>`,
	`<xml><Encrypt><![CDATA[a]]><![CDATA[b]]></Encrypt></xml>`,
	`<xml><Encrypt><![CDATA[a]]]]><![CDATA[>b]]></Encrypt></xml>`,
	`<xml><Encrypt>a&amp;b</Encrypt></xml>`,
	`<xml><Encrypt>a&#65;</Encrypt></xml>`,
	`<xml><Encrypt>a]]>b</Encrypt></xml>`,
	`<xml><Encrypt><![CDATA[a</Encrypt></xml>`,
	`<xml><Encrypt>a</Encrypt>`,
	`<xml><Encrypt>a</encrypt></xml>`,
	`<xml><x:Encrypt xmlns:x="u">a</x:Encrypt></xml>`,
	`<xml><Encrypt a="1">a</Encrypt></xml>`,
	`<xml><!-- <Encrypt>b</Encrypt> --><Encrypt>a</Encrypt></xml>`,
	`<?xml version="1.0" encoding="UTF-8"?><xml><Encrypt>a</Encrypt></xml>`,
	`<!DOCTYPE xml [<!ENTITY e "x">]><xml><Encrypt>&e;</Encrypt></xml>`,
	`<xml><Nested><Encrypt>a</Encrypt></Nested></xml>`,
	`<xml><Encrypt>a` + "\r\n" + `b</Encrypt></xml>`,
	"<xml><Encrypt>a\x00b</Encrypt></xml>",
	"<xml><Encrypt>a\xffb</Encrypt></xml>",
	"<xml><Encrypt>\uFFFE</Encrypt></xml>",
	`<xml><Content><![CDATA[你好, <b>世界</b>]]></Content></xml>`,
	`<xml><Encrypt>a</Encrypt></xml><trailing>`,
	`garbage<xml><Encrypt>a</Encrypt></xml>`,
	`<xml><Encrypt >a</Encrypt ></xml>`,
	`<xml><1Encrypt>a</1Encrypt></xml>`,
	`<xml><MsgType>event</MsgType><Event>click</Event><CreateTime> 12 </CreateTime><CreateTime>13</CreateTime></xml>`,
	`<xml><MsgType>location</MsgType><Location_X>23.1</Location_X><Location_Y>1e3</Location_Y><Scale>x</Scale></xml>`,
	`<xml><MsgType>event</MsgType><Event>change_contact</Event><ChangeType>create_party</ChangeType><Id>99999999999999999999</Id></xml>`,
	`<xml><MsgType>event</MsgType><Event>unknown</Event><ChangeType> x </ChangeType><Other>y</Other></xml>`,
	`<xml><MsgType>event</MsgType><Event>scancode_push</Event><EventKey>k</EventKey></xml>`,
	`<xml><MsgType>file</MsgType><MsgId> 7</MsgId><MsgId>8</MsgId></xml>`,
	`<xml><InfoType><![CDATA[suite_]]>ticket</InfoType><MsgId>7</MsgId><SuiteTicket>t</SuiteTicket></xml>`,
	`<xml><MsgType><![CDATA[te]]>xt</MsgType><MsgId>7</MsgId></xml>`,
	`<xml><ToUserName><![CDATA[ww1]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[你好]]></Content><MsgId>1234567890123456</MsgId><AgentID>1000002</AgentID></xml>`,
	`<xml><ToUserName><![CDATA[ww1]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_external_contact]]></Event><ChangeType><![CDATA[add_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wm1]]></ExternalUserID><State><![CDATA[s]]></State><WelcomeCode><![CDATA[W]]></WelcomeCode></xml>`,
	`<xml><InfoType> <![CDATA[suite_ticket]]></InfoType><SuiteTicket>t</SuiteTicket><TimeStamp>-1</TimeStamp></xml>`,
}

// FuzzScanFlat holds the scan to encoding/xml: where scanFlat reads a
// document, encoding/xml reads it too, with the same children and text;
// encryptOf answers as readEncrypt (encoding/xml alone) does; and where
// parseFlat reads a callback, parseXML reads the same Event.
func FuzzScanFlat(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fl flat
		if scanFlat(data, &fl) {
			want, err := xmlChildren(data)
			if err != nil {
				t.Fatalf("scanned, but encoding/xml: %v", err)
			}
			got := fl.els[:fl.n]
			if len(got) != len(want) {
				t.Fatalf("scanned %d children, encoding/xml %d", len(got), len(want))
			}
			for i := range got {
				if string(got[i].name) != want[i].name || string(got[i].text) != string(want[i].text) {
					t.Fatalf("child %d: scanned %q=%q, encoding/xml %q=%q", i, got[i].name, got[i].text, want[i].name, want[i].text)
				}
			}
		}
		enc, err := encryptOf(data)
		wantEnc, wantErr := readEncrypt(data)
		if !bytes.Equal(enc, wantEnc) || errorText(err) != errorText(wantErr) {
			t.Fatalf("encryptOf = %q, %v; encoding/xml %q, %v", enc, err, wantEnc, wantErr)
		}
		if ev, p, ok := parseFlat(data); ok {
			want, wantP, err := parseXML(data)
			if err != nil {
				t.Fatalf("parseFlat read it, parseXML: %v", err)
			}
			if !reflect.DeepEqual(ev, want) || *p != *wantP {
				t.Fatalf("parseFlat = %#v %+v\nparseXML = %#v %+v", ev, p, want, wantP)
			}
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

type xmlChild struct {
	name string
	text []byte
}

// xmlChildren reads the root's children of data and their character data
// with encoding/xml, as its Unmarshal would.
func xmlChildren(data []byte) ([]xmlChild, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var out []xmlChild
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 {
				out = append(out, xmlChild{name: tok.Name.Local, text: []byte{}})
			}
		case xml.EndElement:
			depth--
			if depth == 0 {
				return out, nil
			}
		case xml.CharData:
			if depth == 2 {
				out[len(out)-1].text = append(out[len(out)-1].text, tok...)
			}
		}
		if depth == 1 && out == nil {
			out = []xmlChild{}
		}
	}
}

// TestFlatFieldsMatchTags: every event type whose fields are all scalars
// is a flatEvent, and its field method (with headerFields) names each
// field by its xml tag, as encoding/xml would fill it; no other type is.
func TestFlatFieldsMatchTags(t *testing.T) {
	t.Parallel()
	types := []Event{new(RawEvent)}
	for _, kind := range allKinds {
		types = append(types, newEvent(kind))
	}
	for _, ev := range types {
		v := reflect.ValueOf(ev).Elem()
		fe, isFlat := ev.(flatEvent)
		if flatType := scalarsOnly(v.Type()); flatType != isFlat {
			t.Errorf("%T: scalar fields only %t, a flatEvent %t", ev, flatType, isFlat)
			continue
		}
		if !isFlat {
			continue
		}
		h := (*headerFields)(ev.Common())
		if fe.field([]byte("NoSuchElement")) != nil || h.field([]byte("NoSuchElement")) != nil {
			t.Errorf("%T: an unknown name has a field", ev)
		}
		for name, addr := range taggedFields(v) {
			got := fe.field([]byte(name))
			if got == nil {
				got = h.field([]byte(name))
			}
			if got == nil || reflect.ValueOf(got).Pointer() != addr {
				t.Errorf("%T: <%s> fills %v, want the field tagged %q", ev, name, got, name)
			}
		}
	}
}

// allKinds is every kind newEvent knows.
var allKinds = strings.Fields(`text image voice video location link event/subscribe event/enter_agent
	event/click event/scancode_push event/batch_job_result event/upload_media_job_finish event/change_contact
	event/change_external_contact event/change_external_chat event/change_external_tag event/kf_msg_or_event
	event/template_card_event event/sys_approval_change event/open_approval_change info/suite_ticket info/create_auth`)

// scalarsOnly reports whether t's fields (through embedded structs) are
// strings and numbers only, besides Header.XML.
func scalarsOnly(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Anonymous:
			if !scalarsOnly(f.Type) {
				return false
			}
		case f.Tag.Get("xml") == "-":
		case f.Type.Kind() == reflect.Struct, f.Type.Kind() == reflect.Slice:
			return false
		}
	}
	return true
}

// taggedFields maps each xml tag of v's fields (embedded structs
// flattened, the outer field winning) to the field's address.
func taggedFields(v reflect.Value) map[string]uintptr {
	out := make(map[string]uintptr)
	var embedded []reflect.Value
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous {
			embedded = append(embedded, v.Field(i))
			continue
		}
		if tag := f.Tag.Get("xml"); tag != "" && tag != "-" {
			out[tag] = v.Field(i).Addr().Pointer()
		}
	}
	for _, e := range embedded {
		for name, addr := range taggedFields(e) {
			if _, ok := out[name]; !ok {
				out[name] = addr
			}
		}
	}
	return out
}
