package mock_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/mock"
)

func TestScripts(t *testing.T) {
	t.Parallel()
	const pathMark = pathMarkTag
	srv := newServer(t, mock.Config{})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	target := pathCreate + "?access_token=" + tok
	wmA := func(_ *http.Request, body []byte) bool { return bytes.Contains(body, []byte(`"wmA"`)) }
	for _, sc := range []mock.Script{
		{Path: pathCreate, Times: 2, ErrCode: 45033},
		{Path: pathMark, Match: wmA, ErrCode: 40068, ErrMsg: "invalid tag"},
		{Path: pathToken, Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"},
		{Path: pathCreate, Body: `{"message":"blocked"}`},
	} {
		if err := srv.AddScript(sc); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []int{45033, 45033} {
		if code := directCode(t, h, http.MethodPost, target, `{"tagname":"x"}`); code != want {
			t.Errorf("create %d: errcode %d, want %d", i, code, want)
		}
	}
	if rec := direct(t.Context(), h, http.MethodPost, target, `{"tagname":"x"}`); rec.Body.String() != `{"message":"blocked"}` {
		t.Errorf("third create answered %q, want the scripted body", rec.Body.String())
	}
	if code := directCode(t, h, http.MethodPost, target, `{"tagname":"x"}`); code != 0 {
		t.Errorf("create after the scripts: errcode %d, want 0 (modelled)", code)
	}
	markTarget := pathMark + "?access_token=" + tok
	before := srv.Stats().Scripted
	directCode(t, h, http.MethodPost, markTarget, `{"userid":"u1","external_userid":"wmB","add_tag":["none"]}`)
	if srv.Stats().Scripted != before {
		t.Error("a call the predicate refuses got the scripted answer")
	}
	if code := directCode(t, h, http.MethodPost, markTarget, `{"userid":"u1","external_userid":"wmA","add_tag":["none"]}`); code != 40068 {
		t.Errorf("mark of wmA: errcode %d, want the scripted 40068", code)
	}
	rec := direct(t.Context(), h, http.MethodGet, pathToken+"?corpid="+corpID+"&corpsecret="+secret, "")
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "bad gateway") {
		t.Errorf("gettoken answered %d %q, want the scripted 502", rec.Code, rec.Body.String())
	}
	st := srv.Stats()
	if st.Scripted != 5 || st.Refusals[45033] != 2 {
		t.Errorf("Stats: Scripted %d, 45033 refusals %d, want 5 and 2", st.Scripted, st.Refusals[45033])
	}
}

func TestAddScriptValidates(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	for _, sc := range []mock.Script{
		{},
		{Path: pathCreate, Times: -1},
		{Path: pathCreate, Status: 42},
	} {
		if err := srv.AddScript(sc); err == nil {
			t.Errorf("AddScript(%+v) accepted", sc)
		}
	}
}
