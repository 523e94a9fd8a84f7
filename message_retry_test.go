package wecom_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// losing returns a fresh mock knowing members a and b, and a transport to
// it that loses its first n answers to message/send after the mock has
// done them.
func losing(t *testing.T, n int) (*mock.Server, *loseAnswers) {
	srv := newMock(t, mock.Config{}, "a", "b")
	return srv, &loseAnswers{next: srvTransport(srv), path: catalog.MessageSend.Path(), n: n}
}

// TestMessageRetryCountsOnce: a send whose answer was lost filled member
// a's minute; its retry under the duplicate check does not count the
// member again (the lost attempt's count stands), so it is not refused: it
// goes out, and WeCom's check drops the copy.
func TestMessageRetryCountsOnce(t *testing.T) {
	srv, lost := losing(t, 0)
	c := setup(t, wecom.WithTransport(lost), wecom.WithAgentID(1000002), fastRetries(), wecom.WithAttemptTimeout(100*time.Millisecond))
	ctx := context.Background()
	for range 29 {
		if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a"}, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	lost.mu.Lock()
	lost.n = 1
	lost.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.Messages.Send(sctx, wecom.Message{ToUser: []string{"a"}, DuplicateCheck: true, Content: &wecom.TextMessage{Content: "alert"}})
	if got := srv.MessageTally(testCorp, "a"); err != nil || got != (mock.MessageTally{Delivered: 30, Deduplicated: 1}) {
		t.Errorf("err = %v, tally %+v; want the retry through, delivered once", err, got)
	}
}

// TestSendReadyAfterLostAnswer: SendReady's first attempt reached a (now
// full) and b, and its answer was lost: the retry neither sends b a second
// copy nor hands a back as not sent.
func TestSendReadyAfterLostAnswer(t *testing.T) {
	srv, lost := losing(t, 0)
	c := setup(t, wecom.WithTransport(lost), wecom.WithAgentID(1000002), fastRetries(), wecom.WithAttemptTimeout(100*time.Millisecond))
	ctx := context.Background()
	for range 29 {
		if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a"}, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	lost.mu.Lock()
	lost.n = 1
	lost.mu.Unlock()
	res, d, err := c.Messages.SendReady(ctx, wecom.Message{ToUser: []string{"a", "b"}, DuplicateCheck: true, Content: &wecom.TextMessage{Content: "alert"}})
	ta, tb := srv.MessageTally(testCorp, "a"), srv.MessageTally(testCorp, "b")
	t.Logf("res=%+v deferred=%+v err=%v; a=%+v b=%+v", res, d, err, ta, tb)
	if tb.Delivered > 1 {
		t.Errorf("b got the message %d times", tb.Delivered)
	}
	if ta.Delivered == 30 && len(d.Members) > 0 {
		t.Errorf("a got it, yet SendReady hands a back as not sent: %v", d.Members)
	}
}

// TestMessageCallerGaveUp: the caller's deadline ends while the request is
// at WeCom: the message goes on, and the error says it may be delivered.
func TestMessageCallerGaveUp(t *testing.T) {
	mt := tokenTransport()
	arrived := make(chan struct{}, 1)
	mt.RegisterResponder(http.MethodPost, testBase+catalog.MessageSend.Path(), func(r *http.Request) (*http.Response, error) {
		arrived <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","msgid":"m1"}`), nil
	})
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a"}, Content: &wecom.TextMessage{Content: "x"}})
	<-arrived
	t.Logf("err = %v", err)
	if !errors.Is(err, wecom.ErrMaybeDone) {
		t.Errorf("the request reached WeCom, but err does not match ErrMaybeDone: %v", err)
	}
}

// TestMessageRetryWithinCheck: a retry under the duplicate check after the
// lost attempt filled the member's window is delivered once, however long
// the window or short the check.
func TestMessageRetryWithinCheck(t *testing.T) {
	t.Parallel() // virtual time, a mock of its own
	for _, tc := range []struct {
		name     string
		prior    int
		interval time.Duration
	}{
		{"minute window, 60 s check", 29, time.Minute},
		{"hour window, default 30 min check", 999, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newMock(t, mock.Config{})
				srv.AddUsers(testCorp, "a")
				lost := &loseAnswers{next: srvTransport(srv), path: catalog.MessageSend.Path()}
				c := setup(t, wecom.WithTransport(lost), wecom.WithAgentID(1000002), fastRetries())
				ctx := context.Background()
				for i := range tc.prior {
					if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a"}, Content: &wecom.TextMessage{Content: "x" + string(rune('0'+i%10))}}); err != nil {
						t.Fatal(err)
					}
				}
				lost.mu.Lock()
				lost.n = 1
				lost.mu.Unlock()
				start := time.Now()
				_, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a"}, DuplicateCheck: true, DuplicateInterval: tc.interval,
					Content: &wecom.TextMessage{Content: "alert"}})
				got := srv.MessageTally(testCorp, "a")
				t.Logf("err=%v after %s; tally %+v", err, time.Since(start), got)
				if got.Delivered > tc.prior+1 {
					t.Errorf("the alert was delivered twice: %+v", got)
				}
			})
		})
	}
}
