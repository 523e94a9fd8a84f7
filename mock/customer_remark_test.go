package mock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const pathRemark = string(catalog.CustomerRemark)

func TestRemark(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	remark := func(body string) int {
		return directCode(t, h, http.MethodPost, pathRemark+"?access_token="+tok, body)
	}
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"no userid", `{"external_userid":"wmA","remark":"x"}`, 41009},
		{"no external", `{"userid":"u1","remark":"x"}`, 40096},
		{"nothing to set", `{"userid":"u1","external_userid":"wmA"}`, 40058},
		{"remark 21 chars", fmt.Sprintf(`{"userid":"u1","external_userid":"wmA","remark":%q}`, strings.Repeat("名", 21)), 40058},
		{"description 151 chars", fmt.Sprintf(`{"userid":"u1","external_userid":"wmA","description":%q}`, strings.Repeat("x", 151)), 40058},
		{"company 21 chars", fmt.Sprintf(`{"userid":"u1","external_userid":"wmA","remark_company":%q}`, strings.Repeat("x", 21)), 40058},
		{"bad json", `{"userid":`, 47001},
		{"set", fmt.Sprintf(`{"userid":"u1","external_userid":"wmA","remark":%q,"description":"d","remark_mobiles":["1","2"]}`, strings.Repeat("名", 20)), 0},
		{"change one field", `{"userid":"u1","external_userid":"wmA","remark_company":"ACME"}`, 0},
	} {
		if got := remark(tc.body); got != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.name, got, tc.want)
		}
	}
	r, ok := srv.Remark(corpID, "u1", "wmA")
	want := mock.Remark{Remark: strings.Repeat("名", 20), Description: "d", RemarkCompany: "ACME", RemarkMobiles: []string{"1", "2"}}
	if !ok || r.Remark != want.Remark || r.Description != want.Description || r.RemarkCompany != want.RemarkCompany || !slices.Equal(r.RemarkMobiles, want.RemarkMobiles) {
		t.Errorf("Remark = %+v, %t; want %+v", r, ok, want)
	}
	if code := remark(`{"userid":"u1","external_userid":"wmA","remark_mobiles":[""]}`); code != 0 {
		t.Fatalf("clearing the mobiles: errcode %d", code)
	}
	if r, _ := srv.Remark(corpID, "u1", "wmA"); r.RemarkMobiles != nil || r.Remark == "" {
		t.Errorf("after [\"\"]: %+v, want no mobiles and the rest kept", r)
	}
	if _, ok := srv.Remark(corpID, "u2", "wmA"); ok {
		t.Error("a remark for another member")
	}
}

// TestCustomerEditLockShared: a remark and a mark_tag on one customer at
// once: the second gets 45033, as at WeCom; on another customer both pass.
func TestCustomerEditLockShared(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{})
		h := srv.Handler()
		tok := directToken(t, h, corpID, secret)
		rec := direct(context.Background(), h, http.MethodPost, pathCTAdd+"?access_token="+tok, `{"group_name":"g","tag":[{"name":"a"}]}`)
		var added answer
		if err := json.Unmarshal(rec.Body.Bytes(), &added); err != nil || added.code() != 0 {
			t.Fatalf("add_corp_tag: %s", rec.Body.String())
		}
		tag := addedIDs(added)["a"]
		srv.SetLatency(time.Second)
		mark := func(ext string) int {
			return directCode(t, h, http.MethodPost, pathMarkTag+"?access_token="+tok,
				fmt.Sprintf(`{"userid":"u1","external_userid":%q,"add_tag":[%q]}`, ext, tag))
		}
		remark := func(ext string) int {
			return directCode(t, h, http.MethodPost, pathRemark+"?access_token="+tok,
				fmt.Sprintf(`{"userid":"u1","external_userid":%q,"remark":"r"}`, ext))
		}
		first := make(chan int, 2)
		go func() { first <- mark("wmA") }()
		synctest.Wait()
		if code := remark("wmA"); code != 45033 {
			t.Errorf("remark while mark_tag edits the customer: errcode %d, want 45033", code)
		}
		go func() { first <- remark("wmB") }()
		for range 2 {
			if code := <-first; code != 0 {
				t.Errorf("errcode %d, want 0", code)
			}
		}
		if n := srv.Stats().Refusals[45033]; n != 1 {
			t.Errorf("%d answers 45033, want 1", n)
		}
	})
}

// TestRoutesFollowTheCatalog: every endpoint of the catalog is served, and
// its in-flight cap is the catalog's.
func TestRoutesFollowTheCatalog(t *testing.T) {
	t.Parallel()
	for _, e := range catalog.Endpoints() {
		if e.ID == catalog.GetToken {
			continue
		}
		t.Run(string(e.ID), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, mock.Config{PerCustomerConcurrency: -1})
				h := srv.Handler()
				tok := directToken(t, h, corpID, secret)
				inFlight := 0
				if r, ok := e.Rule(catalog.RuleInFlight); ok {
					inFlight = r.InFlight
				}
				srv.SetLatency(time.Second)
				n := max(inFlight+1, 3)
				codes := make(chan int, n)
				for i := range n {
					body := fmt.Sprintf(`{"userid":"u%d","external_userid":"wm%d"}`, i, i)
					go func() { codes <- directCode(t, h, e.Method, string(e.ID)+"?access_token="+tok, body) }()
				}
				refused := 0
				for range n {
					if <-codes == 45033 {
						refused++
					}
				}
				want := 0
				if inFlight > 0 {
					want = n - inFlight
				}
				if refused != want {
					t.Errorf("%d of %d calls at once refused with 45033, want %d (in-flight cap %d)", refused, n, want, inFlight)
				}
			})
		})
	}
}
