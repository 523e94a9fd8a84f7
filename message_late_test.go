package wecom_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// slowFirst delays the first message/send on its way to WeCom.
type slowFirst struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (s *slowFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == catalog.MessageSend.Path() && s.n.Add(1) == 1 {
		time.Sleep(1500 * time.Millisecond) // the request reaches WeCom 1.5 s after its lease
	}
	return s.next.RoundTrip(r)
}

// TestMessageLateArrival: the per-member window counts a message at its
// lease, WeCom when it arrives. The first of 31 messages arrives 1.5 s late;
// the 31st, sent when the client's window opens, must still fall outside
// WeCom's minute of the first (silentMargin): none dropped. A lag longer
// than the margin and a bucket can still lose one (see silentMargin).
func TestMessageLateArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		srv.AddUsers(testCorp, "a")
		mt := httpmock.NewMockTransport()
		srv.Register(mt, testBase)
		c := setup(t, wecom.WithTransport(&slowFirst{next: mt}), wecom.WithAgentID(1000002))
		for i := range 31 {
			if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"a"}, Content: &wecom.TextMessage{Content: "m" + string(rune('a'+i%26))}}); err != nil {
				t.Fatal(err)
			}
		}
		if got := srv.MessageTally(testCorp, "a"); got.Dropped > 0 {
			t.Errorf("tally %+v: a message was dropped", got)
		}
	})
}
