package callback_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// documentedSuiteTicket is WeCom's suite_ticket sample verbatim (document
// 90628), with the space before the CDATA of InfoType.
const documentedSuiteTicket = `<xml>
<SuiteId><![CDATA[ww4asffe99e54c0fxxxx]]></SuiteId>
<InfoType> <![CDATA[suite_ticket]]></InfoType>
<TimeStamp>1403610513</TimeStamp>
<SuiteTicket><![CDATA[asdfasfdasdfasdf]]></SuiteTicket>
</xml>`

// TestParseDocumentedSuiteTicket: the documented sample is a
// *SuiteTicketEvent, with InfoType trimmed.
func TestParseDocumentedSuiteTicket(t *testing.T) {
	t.Parallel()
	ev, err := callback.Parse([]byte(documentedSuiteTicket))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := ev.(*callback.SuiteTicketEvent)
	if !ok || st.InfoType != "suite_ticket" || st.SuiteTicket != "asdfasfdasdfasdf" {
		t.Fatalf("documented suite_ticket parsed as %T %+v", ev, ev)
	}
}

// TestParseTrimsKindNames: white space around MsgType, Event and
// ChangeType does not turn a known kind into a RawEvent, nor keep a
// ChangeType from matching its constant.
func TestParseTrimsKindNames(t *testing.T) {
	t.Parallel()
	msg := `<xml><ToUserName>ww1</ToUserName><FromUserName>sys</FromUserName><CreateTime>1</CreateTime>` +
		`<MsgType> <![CDATA[event]]> </MsgType><Event>
<![CDATA[change_contact]]></Event><ChangeType> <![CDATA[create_user]]></ChangeType><UserID>u</UserID></xml>`
	ev, err := callback.Parse([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	ce, ok := ev.(*callback.ContactEvent)
	if !ok || ce.MsgType != "event" || ce.Event != "change_contact" || ce.ChangeType != callback.ChangeCreateUser {
		t.Fatalf("parsed as %T %+v", ev, ev)
	}
	raw, err := callback.Parse([]byte(`<xml><MsgType> event</MsgType><Event> unknown_event </Event><ChangeType> x </ChangeType></xml>`))
	if r, ok := raw.(*callback.RawEvent); err != nil || !ok || r.Event != "unknown_event" || r.ChangeType != "x" {
		t.Fatalf("raw: %v %+v", err, raw)
	}
}

// TestHandlerAnswersDocumentedSuiteTicket: the documented sample, posted
// to a suite's command URL, reaches the SuiteTicketEvent handler and is
// answered "success".
func TestHandlerAnswersDocumentedSuiteTicket(t *testing.T) {
	t.Parallel()
	c, _ := callback.NewCrypto(testToken, testKey, "ww4asffe99e54c0fxxxx")
	h, err := callback.NewHandler(c)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	callback.Handle(h, func(_ context.Context, e *callback.SuiteTicketEvent) error { got <- e.SuiteTicket; return nil })
	rec := serve(h, seal(t, c, documentedSuiteTicket, time.Now().Unix()))
	if rec.Code != http.StatusOK || rec.Body.String() != "success" {
		t.Fatalf("answered %d %q", rec.Code, rec.Body.String())
	}
	if ticket := <-got; ticket != "asdfasfdasdfasdf" {
		t.Fatalf("ticket %q", ticket)
	}
}
