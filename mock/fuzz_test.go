package mock_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/mock"
)

// The mock parses requests from code under test: whatever the body and query,
// it must answer (never panic) with a JSON errcode or an HTTP error.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct{ path, query, body string }{
		{"/cgi-bin/tag/create", "", `{"tagname":"UI","tagid":12}`},
		{"/cgi-bin/tag/addtagusers", "", `{"tagid":1,"userlist":["a","b"],"partylist":[1]}`},
		{"/cgi-bin/tag/get", "tagid=1", ``},
		{"/cgi-bin/tag/delete", "tagid=-5", ``},
		{"/cgi-bin/externalcontact/add_corp_tag", "", `{"group_name":"g","tag":[{"name":"t","order":4294967295}]}`},
		{"/cgi-bin/externalcontact/mark_tag", "", `{"userid":"u","external_userid":"e","add_tag":["x"]}`},
		{"/cgi-bin/externalcontact/del_corp_tag", "", `{"tag_id":[],"group_id":null}`},
		{"/cgi-bin/externalcontact/get_corp_tag_list", "", `{"tag_id":[1,2]}`},
		{"/cgi-bin/gettoken", "corpid=c&corpsecret=s", ``},
	} {
		f.Add(seed.path, seed.query, seed.body)
	}
	f.Fuzz(func(t *testing.T, path, query, body string) {
		m, err := mock.New(mock.Config{})
		if err != nil {
			t.Fatal(err)
		}
		m.AddApp("c", "s")
		m.AddUsers("c", "a", "b")
		h := m.Handler()
		tokRec := httptest.NewRecorder()
		h.ServeHTTP(tokRec, httptest.NewRequest("GET", "/cgi-bin/gettoken?corpid=c&corpsecret=s", nil))
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.Unmarshal(tokRec.Body.Bytes(), &tok); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?# \t\r\n") {
			path = "/cgi-bin/tag/create"
		}
		target := path + "?access_token=" + tok.AccessToken + "&" + strings.NewReplacer(" ", "", "#", "", "\n", "").Replace(query)
		req, err := http.NewRequest("POST", target, strings.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			var ans struct {
				ErrCode *int `json:"errcode"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || ans.ErrCode == nil {
				t.Fatalf("%s %q: answer %q is not a WeCom answer", target, body, rec.Body.String())
			}
		}
	})
}
