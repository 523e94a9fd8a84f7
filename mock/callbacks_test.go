package mock_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const (
	cbToken = "callbackToken"
	cbKey   = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
)

// fastDelays are retry waits short enough for tests on real time.
var fastDelays = []time.Duration{time.Millisecond, time.Millisecond}

// received collects the events a callback.Handler delivered.
type received struct {
	mu     sync.Mutex
	events []callback.Event
}

func (r *received) add(_ context.Context, e callback.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *received) all() []callback.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// receiver returns a callback.Handler for corpID's callbacks that records
// every ContactEvent, ExternalContactEvent, ExternalTagEvent and
// TextMessage.
func receiver(t *testing.T) (*callback.Handler, *received) {
	t.Helper()
	crypto, err := callback.NewCrypto(cbToken, cbKey, corpID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	var r received
	callback.Handle(h, func(ctx context.Context, e *callback.ContactEvent) error { return r.add(ctx, e) })
	callback.Handle(h, func(ctx context.Context, e *callback.ExternalContactEvent) error { return r.add(ctx, e) })
	callback.Handle(h, func(ctx context.Context, e *callback.ExternalTagEvent) error { return r.add(ctx, e) })
	callback.Handle(h, func(ctx context.Context, e *callback.TextMessage) error { return r.add(ctx, e) })
	return h, &r
}

// pushTo sets srv's callbacks of corpID to go to h behind an httptest
// server, and closes srv at the end of the test.
func pushTo(t *testing.T, srv *mock.Server, h http.Handler) {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Close)
	if err := srv.SetCallback(corpID, mock.CallbackConfig{URL: hs.URL + "/wecom/callback?app=1", Token: cbToken, EncodingAESKey: cbKey,
		RetryDelays: fastDelays}); err != nil {
		t.Fatal(err)
	}
}

func waitCallbacks(t *testing.T, srv *mock.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCallbackAddExternalContact: the event a Handler receives carries
// the customer, the state and the welcome code the Server issued, and the
// customer is the member's.
func TestCallbackAddExternalContact(t *testing.T) {
	srv := newServer(t, mock.Config{})
	h, got := receiver(t)
	pushTo(t, srv, h)
	code := srv.AddExternalContact(corpID, "u1", mock.Customer{ExternalUserID: "wmNew", Name: "Ann", Type: 1}, "ad-42")
	waitCallbacks(t, srv)
	evs := got.all()
	if len(evs) != 1 {
		t.Fatalf("got %d events, want 1", len(evs))
	}
	e, ok := evs[0].(*callback.ExternalContactEvent)
	if !ok || e.ChangeType != callback.ChangeAddExternalContact || e.UserID != "u1" || e.ExternalUserID != "wmNew" ||
		e.State != "ad-42" || e.WelcomeCode != code || code == "" || e.ToUserName != corpID || e.FromUserName != "sys" {
		t.Errorf("event %+v, want add_external_contact of wmNew by u1, state ad-42, code %q", evs[0], code)
	}
	if cs := srv.Customers(corpID, "u1"); !slices.Equal(cs, []string{"wmNew"}) {
		t.Errorf("u1's customers %q", cs)
	}
	d := srv.CallbackDeliveries()
	if len(d) != 1 || !d[0].Delivered || d[0].Attempt != 1 || d[0].Event != "change_external_contact" || d[0].ChangeType != "add_external_contact" {
		t.Errorf("deliveries %+v", d)
	}
}

// TestCallbackRetriedDeliveredOnce: a receiver whose first answer is a 500
// (after its handler ran) gets the callback again; the Handler's
// deduplication delivers it once.
func TestCallbackRetriedDeliveredOnce(t *testing.T) {
	srv := newServer(t, mock.Config{})
	h, got := receiver(t)
	var calls atomic.Int32
	pushTo(t, srv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			h.ServeHTTP(httptest.NewRecorder(), r) // handled, but the answer is lost
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	srv.AddExternalContact(corpID, "u1", mock.Customer{ExternalUserID: "wmRetry"}, "")
	waitCallbacks(t, srv)
	if n := len(got.all()); n != 1 {
		t.Errorf("delivered %d times, want once", n)
	}
	d := srv.CallbackDeliveries()
	if len(d) != 2 || d[0].Status != 500 || d[0].Delivered || d[0].Err == "" || !d[1].Delivered || d[1].Attempt != 2 ||
		d[0].Push != d[1].Push || string(d[0].XML) != string(d[1].XML) {
		t.Errorf("deliveries %+v, want a 500, then a 200 of the same push", d)
	}
	if st := h.Stats(); st.Delivered != 1 || st.Duplicates != 1 {
		t.Errorf("handler stats %+v, want 1 delivered, 1 duplicate", st)
	}
}

// roundTrip is an http.RoundTripper made of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ok200(r *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r, Header: http.Header{}}
}

// TestCallbackHungRetried: an attempt with no answer within WeCom's 5 s is
// dropped and the callback tried again after the documented wait; three
// failed attempts and the Server gives up.
func TestCallbackHungRetried(t *testing.T) {
	tests := []struct {
		name      string
		hangs     int // attempts that get no answer
		attempts  int
		delivered bool
		took      time.Duration
	}{
		{"first hangs", 1, 2, true, mock.CallbackTimeout + mock.DefaultCallbackRetry1},
		{"all hang", 3, 3, false, 3*mock.CallbackTimeout + mock.DefaultCallbackRetry1 + mock.DefaultCallbackRetry2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, mock.Config{})
				defer srv.Close()
				var n atomic.Int32
				err := srv.SetCallback(corpID, mock.CallbackConfig{URL: "https://receiver.example/cb", Token: cbToken, EncodingAESKey: cbKey,
					Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
						if int(n.Add(1)) <= tt.hangs {
							<-r.Context().Done()
							return nil, r.Context().Err()
						}
						return ok200(r), nil
					})})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := srv.PushCallback(corpID, []byte(`<xml><MsgType><![CDATA[text]]></MsgType><Content>hi</Content><MsgId>1</MsgId></xml>`)); err != nil {
					t.Fatal(err)
				}
				if err := srv.WaitCallbacks(context.Background()); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tt.took {
					t.Errorf("took %v (virtual), want %v", took, tt.took)
				}
				d := srv.CallbackDeliveries()
				if len(d) != tt.attempts || d[len(d)-1].Delivered != tt.delivered {
					t.Fatalf("deliveries %+v, want %d attempts, the last delivered %v", d, tt.attempts, tt.delivered)
				}
				for i, a := range d[:tt.hangs] {
					if a.Status != 0 || !strings.Contains(a.Err, "no answer within 5s") || a.Attempt != i+1 || a.Event != "text" {
						t.Errorf("attempt %d: %+v, want no answer within 5s", i+1, a)
					}
				}
			})
		})
	}
}

// TestCallbackClose: Close cancels an attempt in flight, makes no retry,
// and waits for the pushes' goroutines; nothing is pushed after it.
func TestCallbackClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{})
		started := make(chan struct{})
		err := srv.SetCallback(corpID, mock.CallbackConfig{URL: "http://receiver.example/", Token: cbToken, EncodingAESKey: cbKey,
			Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				close(started)
				<-r.Context().Done()
				return nil, r.Context().Err()
			})})
		if err != nil {
			t.Fatal(err)
		}
		srv.AddExternalContact(corpID, "u1", mock.Customer{ExternalUserID: "wmClose"}, "")
		<-started
		srv.Close() // returns: the bubble would deadlock on a goroutine left
		if d := srv.CallbackDeliveries(); len(d) != 0 {
			t.Errorf("deliveries %+v after Close, want none recorded", d)
		}
		if err := srv.PushCallback(corpID, []byte("<xml/>")); err == nil {
			t.Error("PushCallback after Close: no error")
		}
	})
}

// TestCallbackAPIChanges: the API changes WeCom reports are pushed:
// addtagusers and deltagusers as change_contact update_tag with the ids
// that changed, add/edit/del_corp_tag as change_external_tag, remark as
// edit_external_contact. A call that changes nothing or fails sends none.
func TestCallbackAPIChanges(t *testing.T) {
	srv := newServer(t, mock.Config{Windows: []mock.Window{}})
	h, got := receiver(t)
	pushTo(t, srv, h)
	mh := srv.Handler()
	tok := directToken(t, mh, corpID, secret)
	post := func(id catalog.ID, body string) answer {
		t.Helper()
		rec := direct(context.Background(), mh, http.MethodPost, id.Path()+"?access_token="+tok, body)
		a := decodeAnswer(t, rec.Body.Bytes())
		if a.code() != 0 {
			t.Fatalf("%s: %v", id, a)
		}
		waitCallbacks(t, srv) // one at a time, so that the order is known
		return a
	}
	tag := post(catalog.TagCreate, `{"tagname":"vip"}`).num("tagid")
	post(catalog.TagAddUsers, jsonBody(t, map[string]any{"tagid": tag, "userlist": []string{"u1", "u2"}, "partylist": []int{1}}))
	post(catalog.TagAddUsers, jsonBody(t, map[string]any{"tagid": tag, "userlist": []string{"u1"}})) // no change
	post(catalog.TagDelUsers, jsonBody(t, map[string]any{"tagid": tag, "userlist": []string{"u2"}}))
	grp := post(catalog.CorpTagAdd, `{"group_name":"level","tag":[{"name":"gold"}]}`).obj("tag_group")
	groupID := grp.str("group_id")
	silver := post(catalog.CorpTagAdd, `{"group_id":"`+groupID+`","tag":[{"name":"silver"}]}`).obj("tag_group").list("tag")[0].(map[string]any)["id"].(string)
	post(catalog.CorpTagEdit, `{"id":"`+silver+`","name":"argent"}`)
	post(catalog.CorpTagDel, `{"group_id":["`+groupID+`"]}`)
	srv.AddCustomers(corpID, "u1", "wmR")
	post(catalog.CustomerRemark, `{"userid":"u1","external_userid":"wmR","remark":"met at the fair"}`)
	if rec := direct(context.Background(), mh, http.MethodPost, catalog.TagAddUsers.Path()+"?access_token="+tok, `{"tagid":999,"userlist":["u1"]}`); decodeAnswer(t, rec.Body.Bytes()).code() == 0 {
		t.Fatal("addtagusers of an unknown tag succeeded")
	}
	waitCallbacks(t, srv)

	var lines []string
	for _, e := range got.all() {
		switch e := e.(type) {
		case *callback.ContactEvent:
			lines = append(lines, e.Event+" "+e.ChangeType+" "+itoa(e.TagID)+" +"+e.AddUserItems+" +"+e.AddPartyItems+" -"+e.DelUserItems+" -"+e.DelPartyItems)
		case *callback.ExternalTagEvent:
			lines = append(lines, e.Event+" "+e.ChangeType+" "+e.TagType+" "+e.ID)
		case *callback.ExternalContactEvent:
			lines = append(lines, e.Event+" "+e.ChangeType+" "+e.UserID+" "+e.ExternalUserID)
		}
	}
	want := []string{
		"change_contact update_tag " + itoa(int64(tag)) + " +u1,u2 +1 - -",
		"change_contact update_tag " + itoa(int64(tag)) + " + + -u2 -",
		"change_external_tag create tag_group " + groupID,
		"change_external_tag create tag " + silver,
		"change_external_tag update tag " + silver,
		"change_external_tag delete tag_group " + groupID,
		"change_external_contact edit_external_contact u1 wmR",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestSetCallbackInvalid: a bad URL, token, key or delays is an error that
// quotes neither the token nor the key.
func TestSetCallbackInvalid(t *testing.T) {
	srv := newServer(t, mock.Config{})
	good := mock.CallbackConfig{URL: "https://r.example/cb", Token: cbToken, EncodingAESKey: cbKey}
	tests := []struct {
		name string
		edit func(*mock.CallbackConfig)
	}{
		{"relative URL", func(c *mock.CallbackConfig) { c.URL = "/cb" }},
		{"ftp URL", func(c *mock.CallbackConfig) { c.URL = "ftp://r.example/cb" }},
		{"empty token", func(c *mock.CallbackConfig) { c.Token = "" }},
		{"short key", func(c *mock.CallbackConfig) { c.EncodingAESKey = cbKey[:42] }},
		{"one delay", func(c *mock.CallbackConfig) { c.RetryDelays = []time.Duration{time.Second} }},
		{"negative delay", func(c *mock.CallbackConfig) { c.RetryDelays = []time.Duration{time.Second, -1} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := good
			tt.edit(&cb)
			err := srv.SetCallback(corpID, cb)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), cbToken) || strings.Contains(err.Error(), cbKey[:20]) {
				t.Errorf("error %q quotes a secret", err)
			}
		})
	}
	if err := srv.SetCallback(corpID, good); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCallback(corpID, mock.CallbackConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.PushCallback(corpID, []byte("<xml/>")); err == nil {
		t.Error("PushCallback with the callback unset: no error")
	}
}

func decodeAnswer(t *testing.T, b []byte) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return a
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
