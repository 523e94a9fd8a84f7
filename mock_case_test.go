package wecom_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// rawPost posts body to the mock at path with token tok, past the SDK's
// limits, and returns the answer.
func rawPost(t *testing.T, hc *http.Client, path, tok, body string) string {
	t.Helper()
	resp, err := hc.Post(testBase+path+"?access_token="+tok, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestMockUserIDsWithoutCase: the mock's linked and app group chat sends
// compare userids without case, as WeCom does: a mixed-case member's drops
// are tallied as drops, and a chat may name a member in another case.
func TestMockUserIDsWithoutCase(t *testing.T) {
	srv := newMock(t, mock.Config{})
	srv.AddUsers(testCorp, "ZhangSan", "lisi")
	mt := httpmock.NewMockTransport()
	srv.Register(mt, testBase)
	hc := &http.Client{Transport: mt}
	resp, err := hc.Get(testBase + catalog.GetToken.Path() + "?corpid=" + testCorp + "&corpsecret=" + testSecret)
	if err != nil {
		t.Fatal(err)
	}
	var tk struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	for range 35 {
		rawPost(t, hc, catalog.LinkedMessageSend.Path(), tk.AccessToken, `{"touser":["ZhangSan"],"msgtype":"text","agentid":1000002,"text":{"content":"x"}}`)
	}
	if got := srv.MessageTally(testCorp, "ZhangSan"); got != (mock.MessageTally{Delivered: 30, Dropped: 5}) {
		t.Errorf("linked: 35 in a minute to ZhangSan: %+v, want 5 dropped", got)
	}
	// A chat names its members in any case; they are the directory's.
	out := rawPost(t, hc, catalog.AppChatCreate.Path(), tk.AccessToken, `{"name":"n","userlist":["zhangsan","LISI"],"owner":"ZHANGSAN","chatid":"c1"}`)
	var created struct{ ErrCode int }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ErrCode != 0 {
		t.Fatalf("appchat/create with members in another case: %s", out)
	}
	for range 205 {
		rawPost(t, hc, catalog.AppChatSend.Path(), tk.AccessToken, `{"chatid":"c1","msgtype":"text","text":{"content":"x"}}`)
	}
	want := mock.MessageTally{Delivered: 200, Dropped: 5}
	if a, b := srv.AppChatTally(testCorp, "ZhangSan"), srv.AppChatTally(testCorp, "lisi"); a != want || b != want {
		t.Errorf("appchat: 205 in a minute: ZhangSan %+v, lisi %+v; want %+v each", a, b, want)
	}
}
