package mock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const (
	pathTransfer         = string(catalog.TransferCustomer)
	pathTransferResult   = string(catalog.TransferResult)
	pathResignedTransfer = string(catalog.ResignedTransferCustomer)
	pathResignedResult   = string(catalog.ResignedTransferResult)
)

// transferFixture is a Server on a fake clock whose token outlives the
// tests' 90 days, and a token for it.
type transferFixture struct {
	srv   *mock.Server
	h     http.Handler
	tok   string
	clock *fakeClock
}

func newTransferFixture(t *testing.T) *transferFixture {
	t.Helper()
	clock := newClock()
	srv := newServer(t, mock.Config{Now: clock.Now, TokenTTL: 365 * 24 * time.Hour})
	h := srv.Handler()
	return &transferFixture{srv: srv, h: h, tok: directToken(t, h, corpID, secret), clock: clock}
}

// post calls path with body and returns the answer.
func (f *transferFixture) post(t *testing.T, path, body string) answer {
	t.Helper()
	rec := direct(context.Background(), f.h, http.MethodPost, path+"?access_token="+f.tok, body)
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s: answer %q: %v", path, rec.Body.String(), err)
	}
	return a
}

// transfer asks path to transfer exts from handover to takeover and returns
// the errcode of each customer, in the answer's order.
func (f *transferFixture) transfer(t *testing.T, path, handover, takeover string, exts ...string) []int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"handover_userid": handover, "takeover_userid": takeover, "external_userid": exts})
	a := f.post(t, path, string(body))
	wantCode(t, path, a, 0)
	var codes []int
	for i, c := range a.list("customer") {
		r := answer(c.(map[string]any))
		if r.str("external_userid") != exts[i] {
			t.Errorf("%s: result %d is for %q, want %q", path, i, r.str("external_userid"), exts[i])
		}
		codes = append(codes, r.num("errcode"))
	}
	if len(codes) != len(exts) {
		t.Errorf("%s: %d results for %d customers", path, len(codes), len(exts))
	}
	return codes
}

// results returns one page of path's transfer results.
func (f *transferFixture) results(t *testing.T, path, handover, takeover, cursor string) answer {
	t.Helper()
	return f.post(t, path, fmt.Sprintf(`{"handover_userid":%q,"takeover_userid":%q,"cursor":%q}`, handover, takeover, cursor))
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// TestTransferRefusedWhole: requests WeCom refuses as a whole.
func TestTransferRefusedWhole(t *testing.T) {
	t.Parallel()
	f := newTransferFixture(t)
	f.srv.AddCustomers(corpID, "u1", ids("wm", 101)...)
	f.srv.AddCustomers(corpID, "gone", "wmG")
	f.srv.Resign(corpID, "gone")
	f.srv.Resign(corpID, "left")
	body := func(handover, takeover string, n int, msg string) string {
		b, _ := json.Marshal(map[string]any{"handover_userid": handover, "takeover_userid": takeover, "external_userid": ids("wm", n), "transfer_success_msg": msg})
		return string(b)
	}
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"bad json", pathTransfer, `{"handover_userid":`, 47001},
		{"external_userid not a list", pathTransfer, `{"handover_userid":"u1","takeover_userid":"u2","external_userid":"wm000"}`, 47001},
		{"no takeover", pathTransfer, body("u1", "", 1, ""), 41009},
		{"no handover", pathResignedTransfer, body("", "u2", 1, ""), 41009},
		{"no customers", pathTransfer, body("u1", "u2", 0, ""), 41035},
		{"101 customers", pathTransfer, body("u1", "u2", 101, ""), 40058},
		{"101 customers, resigned", pathResignedTransfer, body("gone", "u2", 101, ""), 40058},
		{"message of 201 characters", pathTransfer, body("u1", "u2", 1, strings.Repeat("客", 201)), 40058},
		{"same member", pathTransfer, body("u1", "u1", 1, ""), 40130},
		{"on-job transfer from a resigned member", pathTransfer, body("gone", "u2", 1, ""), 60111},
		{"transfer to a resigned member", pathTransfer, body("u1", "left", 1, ""), 60111},
		{"resigned transfer from an on-job member", pathResignedTransfer, body("u1", "u2", 1, ""), 40097},
		{"resigned transfer to a resigned member", pathResignedTransfer, body("gone", "left", 1, ""), 60111},
	} {
		if a := f.post(t, tc.path, tc.body); a.code() != tc.want {
			t.Errorf("%s: errcode %d (%s), want %d", tc.name, a.code(), a.msg(), tc.want)
		}
	}
	if n := len(f.results(t, pathTransferResult, "u1", "u2", "").list("customer")); n != 0 {
		t.Errorf("%d transfers recorded after refusals, want none", n)
	}
	// The limits allow what they name.
	if codes := f.transfer(t, pathTransfer, "u1", "u2", ids("wm", 100)...); slices.ContainsFunc(codes, func(c int) bool { return c != 0 }) {
		t.Errorf("100 customers: codes %v, want all 0", codes)
	}
	if a := f.post(t, pathTransfer, body("u1", "u3", 1, strings.Repeat("客", 200))); a.code() != 0 {
		t.Errorf("message of 200 characters: errcode %d", a.code())
	}
}

// TestTransferPerCustomer: each customer gets its own errcode.
func TestTransferPerCustomer(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct{ name, path, handover string }{
		{"on-job", pathTransfer, "u1"},
		{"resigned", pathResignedTransfer, "gone"},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			f := newTransferFixture(t)
			f.srv.AddCustomers(corpID, kind.handover, "wmA", "wmB")
			f.srv.AddCustomers(corpID, "u2", "wmD")
			f.srv.Resign(corpID, "gone")
			got := f.transfer(t, kind.path, kind.handover, "u3", "wmA", "wmZ", "wmD", "wmA", "wmB")
			if want := []int{0, 40096, 40131, 40129, 0}; !slices.Equal(got, want) {
				t.Errorf("codes %v, want %v (ok, unknown, not the handover's, pending, ok)", got, want)
			}
			if got := f.transfer(t, kind.path, kind.handover, "u2", "wmA"); got[0] != 40129 {
				t.Errorf("again while pending: code %d, want 40129", got[0])
			}
		})
	}
}

// TestTransferLimit: an on-job member's customer is transferred at most
// twice in 90 days; resigned transfers are not capped.
func TestTransferLimit(t *testing.T) {
	t.Parallel()
	f := newTransferFixture(t)
	f.srv.AddCustomers(corpID, "u1", "wmA", "wmB")
	hop := func(from, to, ext string) int {
		t.Helper()
		code := f.transfer(t, pathTransfer, from, to, ext)[0]
		f.srv.CompleteTransfers(corpID)
		return code
	}
	if a, b := hop("u1", "u2", "wmA"), hop("u2", "u3", "wmA"); a != 0 || b != 0 {
		t.Fatalf("two transfers: codes %d, %d", a, b)
	}
	if c := hop("u3", "u1", "wmA"); c != 40128 {
		t.Errorf("third transfer within 90 days: code %d, want 40128", c)
	}
	f.srv.Resign(corpID, "u3")
	if c := f.transfer(t, pathResignedTransfer, "u3", "u1", "wmA")[0]; c != 0 {
		t.Errorf("resigned transfer after two on-job ones: code %d, want 0", c)
	}

	if a, b := hop("u1", "u2", "wmB"), hop("u2", "u1", "wmB"); a != 0 || b != 0 {
		t.Fatalf("two transfers of wmB: codes %d, %d", a, b)
	}
	f.clock.Advance(90*24*time.Hour - time.Second)
	if c := hop("u1", "u2", "wmB"); c != 40128 {
		t.Errorf("a second before 90 days: code %d, want 40128", c)
	}
	f.clock.Advance(time.Second)
	if c := hop("u1", "u2", "wmB"); c != 0 {
		t.Errorf("90 days later: code %d, want 0", c)
	}
}

// TestTransferCompletes: a transfer waits 24 hours, then moves the customer
// to the takeover member, whichever API is called next.
func TestTransferCompletes(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct{ name, path, result, handover string }{
		{"on-job", pathTransfer, pathTransferResult, "u1"},
		{"resigned", pathResignedTransfer, pathResignedResult, "gone"},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			f := newTransferFixture(t)
			f.srv.AddCustomers(corpID, kind.handover, "wmA", "wmB")
			f.srv.Resign(corpID, "gone")
			start := f.clock.Now()
			f.transfer(t, kind.path, kind.handover, "u2", "wmB", "wmA")
			check := func(status int, at time.Time, handover, takeover []string) {
				t.Helper()
				a := f.results(t, kind.result, kind.handover, "u2", "")
				wantCode(t, "transfer_result", a, 0)
				var got []string
				for _, c := range a.list("customer") {
					r := answer(c.(map[string]any))
					got = append(got, r.str("external_userid"))
					if r.num("status") != status || int64(r.num("takeover_time")) != at.Unix() {
						t.Errorf("%s: status %d at %d, want %d at %d", r.str("external_userid"), r.num("status"), r.num("takeover_time"), status, at.Unix())
					}
				}
				if !slices.Equal(got, []string{"wmA", "wmB"}) || a.str("next_cursor") != "" {
					t.Errorf("listed %v, next %q; want [wmA wmB] and no next page", got, a.str("next_cursor"))
				}
				if h, k := f.srv.Customers(corpID, kind.handover), f.srv.Customers(corpID, "u2"); !slices.Equal(h, handover) || !slices.Equal(k, takeover) {
					t.Errorf("customers of the handover %v, of the takeover %v; want %v and %v", h, k, handover, takeover)
				}
			}
			due := start.Add(24 * time.Hour)
			check(2, due, []string{"wmA", "wmB"}, nil)
			f.clock.Advance(24*time.Hour - time.Second)
			check(2, due, []string{"wmA", "wmB"}, nil)
			f.clock.Advance(time.Second)
			// Another API's call completes the due transfers first.
			if code := directCode(t, f.h, http.MethodGet, string(catalog.FollowUserList)+"?access_token="+f.tok, ""); code != 0 {
				t.Fatalf("get_follow_user_list: errcode %d", code)
			}
			if got := f.srv.Customers(corpID, "u2"); !slices.Equal(got, []string{"wmA", "wmB"}) {
				t.Errorf("after another API's call, the takeover has %v", got)
			}
			check(1, due, nil, []string{"wmA", "wmB"})
		})
	}
}

// TestCompleteTransfers: every waiting transfer completes at once, taken
// over now.
func TestCompleteTransfers(t *testing.T) {
	t.Parallel()
	f := newTransferFixture(t)
	f.srv.AddCustomers(corpID, "u1", "wmA")
	f.srv.AddCustomers(corpID, "gone", "wmB")
	f.srv.Resign(corpID, "gone")
	f.transfer(t, pathTransfer, "u1", "u3", "wmA")
	f.transfer(t, pathResignedTransfer, "gone", "u3", "wmB")
	f.clock.Advance(time.Hour)
	f.srv.CompleteTransfers(corpID)
	f.srv.CompleteTransfers("wwnobody") // no such corp: nothing happens
	if got := f.srv.Customers(corpID, "u3"); !slices.Equal(got, []string{"wmA", "wmB"}) {
		t.Errorf("takeover's customers %v, want [wmA wmB]", got)
	}
	for _, p := range []struct{ path, handover string }{{pathTransferResult, "u1"}, {pathResignedResult, "gone"}} {
		c := answer(f.results(t, p.path, p.handover, "u3", "").list("customer")[0].(map[string]any))
		if c.num("status") != 1 || int64(c.num("takeover_time")) != f.clock.Now().Unix() {
			t.Errorf("%s: %v, want status 1 taken over now", p.path, c)
		}
	}
	// Each API lists its own transfers.
	if n := len(f.results(t, pathResignedResult, "u1", "u3", "").list("customer")); n != 0 {
		t.Errorf("resigned/transfer_result lists %d on-job transfers", n)
	}
}

// TestTransferResultPages: pages of 100 sorted by external_userid, with
// cursors that belong to one API and one pair of members.
func TestTransferResultPages(t *testing.T) {
	t.Parallel()
	f := newTransferFixture(t)
	all := ids("wm", 250)
	f.srv.AddCustomers(corpID, "u1", all...)
	f.srv.AddCustomers(corpID, "u2", "wmX")
	for i := 0; i < len(all); i += 100 {
		f.transfer(t, pathTransfer, "u1", "u2", all[i:min(i+100, len(all))]...)
	}
	f.transfer(t, pathTransfer, "u2", "u3", "wmX")
	var got []string
	var cursors []string
	cursor := ""
	for range 4 {
		a := f.results(t, pathTransferResult, "u1", "u2", cursor)
		wantCode(t, "transfer_result", a, 0)
		for _, c := range a.list("customer") {
			got = append(got, answer(c.(map[string]any)).str("external_userid"))
		}
		if cursor = a.str("next_cursor"); cursor == "" {
			break
		}
		cursors = append(cursors, cursor)
	}
	if !slices.Equal(got, all) || len(cursors) != 2 {
		t.Fatalf("listed %d customers over %d cursors, want the 250 in order over 2", len(got), len(cursors))
	}
	for _, tc := range []struct {
		name, path, handover, takeover, cursor string
	}{
		{"another takeover", pathTransferResult, "u1", "u3", cursors[0]},
		{"another handover", pathTransferResult, "u2", "u2", cursors[0]},
		{"the resigned API", pathResignedResult, "u1", "u2", cursors[0]},
		{"made up", pathTransferResult, "u1", "u2", "100"},
	} {
		if a := f.results(t, tc.path, tc.handover, tc.takeover, tc.cursor); a.code() != 40058 {
			t.Errorf("cursor of %s: errcode %d, want 40058", tc.name, a.code())
		}
	}
	if a := f.post(t, pathTransferResult, `{"handover_userid":"u1"}`); a.code() != 41009 {
		t.Errorf("no takeover: errcode %d, want 41009", a.code())
	}
	if a := f.post(t, pathResignedResult, `{"handover_userid":`); a.code() != 47001 {
		t.Errorf("bad json: errcode %d, want 47001", a.code())
	}
}
