package callback_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// A receiver of a corp's customer-contact callbacks. WeCom's side is played
// by a second Crypto with the same token and key, which encrypts and signs
// an add_external_contact event and posts it twice (a retry).
func Example() {
	const token, key, corpID = "callbackToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C", "ww0123456789abcdef"

	crypto, err := callback.NewCrypto(token, key, corpID)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		fmt.Println(err)
		return
	}
	callback.Handle(h, func(ctx context.Context, e *callback.ExternalContactEvent) error {
		if e.ChangeType == callback.ChangeAddExternalContact {
			// Within 20 s, send a welcome message with e.WelcomeCode.
			fmt.Printf("%s added %s (welcome code %s)\n", e.UserID, e.ExternalUserID, e.WelcomeCode)
		}
		return nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()

	// WeCom's side.
	wecom, _ := callback.NewCrypto(token, key, corpID)
	event := `<xml><ToUserName><![CDATA[ww0123456789abcdef]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName>` +
		`<CreateTime>` + strconv.FormatInt(time.Now().Unix(), 10) + `</CreateTime><MsgType><![CDATA[event]]></MsgType>` +
		`<Event><![CDATA[change_external_contact]]></Event><ChangeType><![CDATA[add_external_contact]]></ChangeType>` +
		`<UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wmCustomer01]]></ExternalUserID>` +
		`<WelcomeCode><![CDATA[CODE123]]></WelcomeCode></xml>`
	for attempt := range 2 {
		enc, _ := wecom.Encrypt([]byte(event))
		ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), "nonce"+strconv.Itoa(attempt)
		q := url.Values{"msg_signature": {wecom.Sign(ts, nonce, enc)}, "timestamp": {ts}, "nonce": {nonce}}
		resp, err := http.Post(srv.URL+"/?"+q.Encode(), "text/xml", strings.NewReader("<xml><Encrypt><![CDATA["+enc+"]]></Encrypt></xml>"))
		if err != nil {
			fmt.Println(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println("attempt", attempt+1, "answered", resp.StatusCode)
	}
	fmt.Printf("%+v\n", h.Stats())
	// Output:
	// zhangsan added wmCustomer01 (welcome code CODE123)
	// attempt 1 answered 200
	// attempt 2 answered 200
	// {Delivered:1 Duplicates:1 Rejected:0 Refused:0 Failed:0 Overran:0 Lost:0}
}
