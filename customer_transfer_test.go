package wecom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// transferEnv is a client talking to a mock on a fake clock.
type transferEnv struct {
	c     *wecom.Client
	srv   *mock.Server
	clock *wecom.FakeClock
}

func newTransferEnv(t *testing.T) *transferEnv {
	t.Helper()
	clock := wecom.NewFakeClock(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC))
	// The token outlives the tests' days: a token refetch would add calls.
	srv := newMock(t, mock.Config{Now: clock.Now, TokenTTL: 365 * 24 * time.Hour})
	c := setup(t, on(srv))
	return &transferEnv{c: c, srv: srv, clock: clock}
}

// calls returns how many requests the mock got for id.
func (e *transferEnv) calls(id catalog.ID) int { return e.srv.Stats().Calls[id.Path()] }

// customerIDs returns n external_userids, sorted.
func customerIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// transferKinds runs the on-job and the resigned variants alike.
type transferKind struct {
	name      string
	handover  string // on-job "u1"; resigned "gone", resigned by prepare
	transfer  func(ctx context.Context, c *wecom.Client, req wecom.TransferRequest) ([]wecom.TransferOutcome, error)
	results   func(ctx context.Context, c *wecom.Client, handover, takeover string) iter.Seq2[wecom.TransferStatus, error]
	id, resID catalog.ID
}

func transferKinds() []transferKind {
	return []transferKind{
		{name: "on-job", handover: "u1", id: catalog.TransferCustomer, resID: catalog.TransferResult,
			transfer: func(ctx context.Context, c *wecom.Client, req wecom.TransferRequest) ([]wecom.TransferOutcome, error) {
				return c.Customers.Transfer(ctx, req)
			},
			results: func(ctx context.Context, c *wecom.Client, h, k string) iter.Seq2[wecom.TransferStatus, error] {
				return c.Customers.TransferResults(ctx, h, k)
			}},
		{name: "resigned", handover: "gone", id: catalog.ResignedTransferCustomer, resID: catalog.ResignedTransferResult,
			transfer: func(ctx context.Context, c *wecom.Client, req wecom.TransferRequest) ([]wecom.TransferOutcome, error) {
				return c.Customers.TransferResigned(ctx, req)
			},
			results: func(ctx context.Context, c *wecom.Client, h, k string) iter.Seq2[wecom.TransferStatus, error] {
				return c.Customers.ResignedTransferResults(ctx, h, k)
			}},
	}
}

// prepare gives the kind's handover member customers exts.
func (k transferKind) prepare(e *transferEnv, exts ...string) {
	e.srv.AddCustomers(testCorp, k.handover, exts...)
	e.srv.Resign(testCorp, "gone")
}

// TestTransferWire: what each endpoint sends and how its answer reads.
func TestTransferWire(t *testing.T) {
	t.Parallel()
	mt := tokenTransport()
	var mu sync.Mutex
	bodies := map[string][]string{}
	record := func(r *http.Request) string {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies[r.URL.Path] = append(bodies[r.URL.Path], buf.String())
		return buf.String()
	}
	for _, id := range []catalog.ID{catalog.TransferCustomer, catalog.ResignedTransferCustomer} {
		mt.RegisterResponder(http.MethodPost, testBase+id.Path(), func(r *http.Request) (*http.Response, error) {
			record(r)
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","customer":[{"external_userid":"wmB","errcode":40128},{"external_userid":"wmA","errcode":0}]}`), nil
		})
	}
	for _, id := range []catalog.ID{catalog.TransferResult, catalog.ResignedTransferResult} {
		mt.RegisterResponder(http.MethodPost, testBase+id.Path(), func(r *http.Request) (*http.Response, error) {
			if strings.Contains(record(r), `"cursor":"C2"`) {
				return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","customer":[{"external_userid":"wmC","status":3,"takeover_time":0}],"next_cursor":""}`), nil
			}
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","customer":[{"external_userid":"wmA","status":1,"takeover_time":1588262400},{"external_userid":"wmB","status":2,"takeover_time":1588482400}],"next_cursor":"C2"}`), nil
		})
	}
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()

	for _, k := range transferKinds() {
		req := wecom.TransferRequest{HandoverUserID: "zhangsan", TakeoverUserID: "lisi", ExternalUserIDs: []string{"wmA", "wmB"}}
		wantBody := `{"handover_userid":"zhangsan","takeover_userid":"lisi","external_userid":["wmA","wmB"]}`
		if k.id == catalog.TransferCustomer {
			req.SuccessMsg = "您好"
			wantBody = `{"handover_userid":"zhangsan","takeover_userid":"lisi","external_userid":["wmA","wmB"],"transfer_success_msg":"您好"}`
		}
		outs, err := k.transfer(ctx, c, req)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if got := bodies[k.id.Path()]; len(got) != 1 || got[0] != wantBody {
			t.Errorf("%s sent %q, want %q", k.name, got, wantBody)
		}
		// Outcomes come in the order asked, whatever the answer's order.
		if len(outs) != 2 || outs[0].ExternalUserID != "wmA" || outs[0].Code != 0 || outs[0].Err() != nil ||
			outs[1].ExternalUserID != "wmB" || outs[1].Code != wecom.CodeTransferTooOften {
			t.Fatalf("%s outcomes %+v", k.name, outs)
		}
		var ae *wecom.APIError
		if err := outs[1].Err(); !errors.As(err, &ae) || ae.Code != wecom.CodeTransferTooOften || ae.Path != k.id.Path() || ae.CorpID != testCorp {
			t.Errorf("%s: wmB's Err() = %v, want an *APIError with 40128 and the path", k.name, err)
		}

		var got []wecom.TransferStatus
		for st, err := range k.results(ctx, c, "zhangsan", "lisi") {
			if err != nil {
				t.Fatalf("%s results: %v", k.name, err)
			}
			got = append(got, st)
		}
		want := []wecom.TransferStatus{
			{ExternalUserID: "wmA", State: wecom.TransferDone, TakeoverTime: time.Unix(1588262400, 0)},
			{ExternalUserID: "wmB", State: wecom.TransferWaiting, TakeoverTime: time.Unix(1588482400, 0)},
			{ExternalUserID: "wmC", State: wecom.TransferRefused},
		}
		if !slices.EqualFunc(got, want, func(a, b wecom.TransferStatus) bool {
			return a.ExternalUserID == b.ExternalUserID && a.State == b.State && a.TakeoverTime.Equal(b.TakeoverTime)
		}) {
			t.Errorf("%s results %+v, want %+v", k.name, got, want)
		}
		wantBodies := []string{`{"handover_userid":"zhangsan","takeover_userid":"lisi"}`, `{"handover_userid":"zhangsan","takeover_userid":"lisi","cursor":"C2"}`}
		if got := bodies[k.resID.Path()]; !slices.Equal(got, wantBodies) {
			t.Errorf("%s results sent %q, want %q", k.name, got, wantBodies)
		}
	}
	if s := wecom.TransferTakeoverFull.String() + "," + wecom.TransferNoRecord.String() + "," + wecom.TransferState(9).String(); s != "takeover full,no record,TransferState(9)" {
		t.Errorf("state names %q", s)
	}
}

// transferEcho answers transfer calls over httpmock as WeCom would, but
// leaves the customers in drop out of the answer; codes are the errcodes of
// those it refuses (0 for the others). It records the customers of every
// call.
type transferEcho struct {
	drop  map[string]bool
	codes map[string]int

	mu    sync.Mutex
	calls [][]string
}

func (e *transferEcho) respond(r *http.Request) (*http.Response, error) {
	var req struct {
		External []string `json:"external_userid"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.calls = append(e.calls, req.External)
	e.mu.Unlock()
	type result struct {
		ExternalUserID string `json:"external_userid"`
		ErrCode        int    `json:"errcode"`
	}
	out := struct {
		ErrCode  int      `json:"errcode"`
		ErrMsg   string   `json:"errmsg"`
		Customer []result `json:"customer"`
	}{ErrMsg: "ok", Customer: []result{}}
	for _, ext := range req.External {
		if !e.drop[ext] {
			out.Customer = append(out.Customer, result{ext, e.codes[ext]})
		}
	}
	return httpmock.NewJsonResponse(http.StatusOK, out)
}

// transport answers the transfer calls with e.
func (e *transferEcho) transport() *httpmock.MockTransport {
	mt := tokenTransport()
	for _, id := range []catalog.ID{catalog.TransferCustomer, catalog.ResignedTransferCustomer} {
		mt.RegisterResponder(http.MethodPost, testBase+id.Path(), e.respond)
	}
	return mt
}

// TestTransferAnswerMissingCustomer: an answer without a result for some
// customers sent is no success, but loses nothing WeCom said: every result
// that came back is an outcome, each customer left out an Unknown outcome
// whose Err says its transfer may have started, and the error (a
// *ResponseError) says how many. The transfer stops at that call, which is
// not sent again.
func TestTransferAnswerMissingCustomer(t *testing.T) {
	t.Parallel()
	many := customerIDs("wm", 250)
	for _, k := range transferKinds() {
		for _, tc := range []struct {
			name    string
			exts    []string
			drop    []string
			outs    int    // outcomes: those of the calls sent
			unknown []int  // the indexes of the Unknown ones
			calls   int    // calls sent
			errText string // in the error
		}{
			{"one call", []string{"wmA", "wmB", "wmC"}, []string{"wmB"}, 3, []int{1}, 1, "no result for 1 of the 3 customers"},
			{"no result at all", []string{"wmX", "wmY"}, []string{"wmX", "wmY"}, 2, []int{0, 1}, 1, "no result for 2 of the 2 customers"},
			{"call 2 of 3", many, []string{many[150], many[160]}, 200, []int{150, 160}, 2, "call 2 of 3 (customers from 100)"},
		} {
			t.Run(k.name+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				e := &transferEcho{drop: map[string]bool{}, codes: map[string]int{"wmC": wecom.CodeTransferTooOften}}
				for _, ext := range tc.drop {
					e.drop[ext] = true
				}
				c := setup(t, wecom.WithTransport(e.transport()))
				outs, err := k.transfer(context.Background(), c, wecom.TransferRequest{HandoverUserID: "u1", TakeoverUserID: "u2", ExternalUserIDs: tc.exts})
				var re *wecom.ResponseError
				if !errors.As(err, &re) || re.Path != k.id.Path() || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("err = %v, want a *ResponseError of %s saying %q", err, k.id.Path(), tc.errText)
				}
				if len(tc.exts) > wecom.MaxTransferPerCall && !strings.Contains(err.Error(), fmt.Sprintf("no result for %d of the 100 customers", len(tc.drop))) {
					t.Errorf("err = %v, want it to say how many customers had no result", err)
				}
				if len(outs) != tc.outs {
					t.Fatalf("%d outcomes, want %d: %+v", len(outs), tc.outs, outs)
				}
				for i, o := range outs {
					unknown := slices.Contains(tc.unknown, i)
					oerr := o.Err()
					switch {
					case o.ExternalUserID != tc.exts[i]:
						t.Errorf("outcome %d is %s, want %s", i, o.ExternalUserID, tc.exts[i])
					case o.Unknown != unknown:
						t.Errorf("outcome %d (%s): Unknown %t, want %t", i, o.ExternalUserID, o.Unknown, unknown)
					case unknown && (!errors.As(oerr, &re) || re.Path != k.id.Path() ||
						!strings.Contains(oerr.Error(), o.ExternalUserID) || !strings.Contains(oerr.Error(), "may have started")):
						t.Errorf("outcome %d (%s): Err() = %v, want a *ResponseError saying its transfer may have started", i, o.ExternalUserID, oerr)
					case !unknown && o.Code != e.codes[o.ExternalUserID]:
						t.Errorf("outcome %d (%s): code %d, want %d", i, o.ExternalUserID, o.Code, e.codes[o.ExternalUserID])
					case !unknown && (oerr == nil) != (o.Code == 0):
						t.Errorf("outcome %d (%s): code %d, Err() = %v", i, o.ExternalUserID, o.Code, oerr)
					}
				}
				if len(e.calls) != tc.calls {
					t.Errorf("%d calls, want %d: a transfer is not sent again, nor after an incomplete answer", len(e.calls), tc.calls)
				}
			})
		}
	}
}

// TestTransferDedup: a customer named more than once is sent once, where
// it first appears, and gets one outcome; the calls of 100 are made of
// distinct customers.
func TestTransferDedup(t *testing.T) {
	t.Parallel()
	hundred := customerIDs("wm", 100)
	// 103 ids, 100 customers: one repeat within, two after the hundredth.
	long := append(slices.Insert(slices.Clone(hundred), 30, hundred[5]), hundred[0], hundred[99])
	for _, k := range transferKinds() {
		for _, tc := range []struct {
			name       string
			exts, want []string
		}{
			{"short", []string{"wmB", "wmA", "wmB", "wmC", "wmA", "wma"}, []string{"wmB", "wmA", "wmC", "wma"}},
			{"a hundred", long, hundred},
		} {
			t.Run(k.name+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				e := &transferEcho{}
				c := setup(t, wecom.WithTransport(e.transport()))
				outs, err := k.transfer(context.Background(), c, wecom.TransferRequest{HandoverUserID: "u1", TakeoverUserID: "u2", ExternalUserIDs: tc.exts})
				if err != nil {
					t.Fatal(err)
				}
				if len(e.calls) != 1 || !slices.Equal(e.calls[0], tc.want) {
					t.Errorf("sent %q, want one call of %q", e.calls, tc.want)
				}
				got := make([]string, len(outs))
				for i, o := range outs {
					got[i] = o.ExternalUserID
					if o.Code != 0 || o.Unknown || o.Err() != nil {
						t.Errorf("outcome %+v, want started", o)
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("outcomes for %q, want %q", got, tc.want)
				}
			})
		}
	}
}

// TestTransferValidates: requests WeCom would refuse are refused before
// any call.
func TestTransferValidates(t *testing.T) {
	t.Parallel()
	e := newTransferEnv(t)
	ok := wecom.TransferRequest{HandoverUserID: "u1", TakeoverUserID: "u2", ExternalUserIDs: []string{"wmA"}}
	with := func(f func(r *wecom.TransferRequest)) wecom.TransferRequest {
		r := ok
		r.ExternalUserIDs = slices.Clone(ok.ExternalUserIDs)
		f(&r)
		return r
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		resigned bool
		req      wecom.TransferRequest
	}{
		{"no handover", false, with(func(r *wecom.TransferRequest) { r.HandoverUserID = "" })},
		{"no takeover", true, with(func(r *wecom.TransferRequest) { r.TakeoverUserID = "" })},
		{"same member", false, with(func(r *wecom.TransferRequest) { r.TakeoverUserID = "u1" })},
		{"no customers", false, with(func(r *wecom.TransferRequest) { r.ExternalUserIDs = nil })},
		{"an empty customer", true, with(func(r *wecom.TransferRequest) { r.ExternalUserIDs = append(r.ExternalUserIDs, "") })},
		{"message of 201 characters", false, with(func(r *wecom.TransferRequest) { r.SuccessMsg = strings.Repeat("客", 201) })},
		{"message on a resigned transfer", true, with(func(r *wecom.TransferRequest) { r.SuccessMsg = "hi" })},
	} {
		var err error
		if tc.resigned {
			_, err = e.c.Customers.TransferResigned(ctx, tc.req)
		} else {
			_, err = e.c.Customers.Transfer(ctx, tc.req)
		}
		var ve *wecom.ValidationError
		if !errors.Is(err, wecom.ErrInvalidRequest) || !errors.As(err, &ve) {
			t.Errorf("%s: err = %v, want a *ValidationError", tc.name, err)
		}
	}
	for _, k := range transferKinds() {
		n := 0
		for _, err := range k.results(ctx, e.c, "u1", "") {
			n++
			if !errors.Is(err, wecom.ErrInvalidRequest) {
				t.Errorf("%s results without a takeover: %v", k.name, err)
			}
		}
		if n != 1 {
			t.Errorf("%s results without a takeover yielded %d times, want once", k.name, n)
		}
	}
	if n := len(e.srv.Stats().Calls); n != 0 {
		t.Errorf("requests sent: %v", e.srv.Stats().Calls)
	}
	// 200 characters is allowed.
	e.srv.AddCustomers(testCorp, "u1", "wmA")
	if _, err := e.c.Customers.Transfer(ctx, with(func(r *wecom.TransferRequest) { r.SuccessMsg = strings.Repeat("客", 200) })); err != nil {
		t.Errorf("message of 200 characters: %v", err)
	}
}

// TestTransferSplits: 250 customers go in 3 calls of at most 100; every
// customer gets its own outcome, those the mock refuses included. A customer
// named twice, in one call or in two, is sent once: sent again, the mock
// would refuse it as being transferred already (40129).
func TestTransferSplits(t *testing.T) {
	t.Parallel()
	for _, k := range transferKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := newTransferEnv(t)
			exts := customerIDs("wm", 250)
			// In the middle call: one customer WeCom does not know, one of
			// another member, one named twice; in the last, one named in
			// the first call.
			k.prepare(e, exts[:150]...)
			k.prepare(e, exts[151:]...)
			e.srv.AddCustomers(testCorp, "u3", "wmOther")
			exts[150] = "wmUnknown"
			exts[160] = "wmOther"
			exts[170] = exts[120]
			exts[230] = exts[10]
			outs, err := k.transfer(context.Background(), e.c, wecom.TransferRequest{HandoverUserID: k.handover, TakeoverUserID: "u2", ExternalUserIDs: exts})
			if err != nil {
				t.Fatal(err)
			}
			if n := e.calls(k.id); n != 3 {
				t.Errorf("%d calls, want 3", n)
			}
			distinct := slices.Concat(exts[:170], exts[171:230], exts[231:])
			if len(outs) != len(distinct) {
				t.Fatalf("%d outcomes for %d customers", len(outs), len(distinct))
			}
			want := map[string]int{"wmUnknown": wecom.CodeInvalidExternalUserID, "wmOther": wecom.CodeNotFollower}
			for i, o := range outs {
				ext := distinct[i]
				if o.ExternalUserID != ext || o.Code != want[ext] || o.Unknown {
					t.Errorf("outcome %d: %s code %d (unknown %t), want %s code %d", i, o.ExternalUserID, o.Code, o.Unknown, ext, want[ext])
				}
				var ae *wecom.APIError
				if err := o.Err(); (want[ext] == 0) != (err == nil) || (err != nil && (!errors.As(err, &ae) || ae.Code != want[ext])) {
					t.Errorf("outcome %d: Err() = %v", i, err)
				}
			}
		})
	}
}

// TestTransferCallFails: a call failing as a whole ends the transfer with
// the outcomes of the calls before it and an error naming the call. The
// failed call is never sent again, even for a failure that would be retried
// on a repeatable API.
func TestTransferCallFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		code     int
		sentinel error
	}{
		{"no permission", wecom.CodeAPINotAllowed, nil},
		{"system busy", wecom.CodeSystemBusy, wecom.ErrSystemBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTransferEnv(t)
			exts := customerIDs("wm", 250)
			e.srv.AddCustomers(testCorp, "u1", exts...)
			err := e.srv.AddScript(mock.Script{Path: catalog.TransferCustomer.Path(), ErrCode: tc.code,
				Match: func(_ *http.Request, body []byte) bool { return bytes.Contains(body, []byte(`"`+exts[100]+`"`)) }})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := e.c.Customers.Transfer(context.Background(), wecom.TransferRequest{HandoverUserID: "u1", TakeoverUserID: "u2", ExternalUserIDs: exts})
			var ae *wecom.APIError
			if !errors.As(err, &ae) || ae.Code != tc.code {
				t.Fatalf("err = %v, want the *APIError %d", err, tc.code)
			}
			if !strings.Contains(err.Error(), "call 2 of 3 (customers from 100)") {
				t.Errorf("err = %q, want it to name call 2 of 3 and customer 100", err)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("err = %v, want it to match %v", err, tc.sentinel)
			}
			if len(outs) != 100 || outs[0].ExternalUserID != exts[0] || outs[99].ExternalUserID != exts[99] || slices.ContainsFunc(outs, func(o wecom.TransferOutcome) bool { return o.Code != 0 }) {
				t.Errorf("%d outcomes, want the first call's 100, all started", len(outs))
			}
			if n := e.calls(catalog.TransferCustomer); n != 2 {
				t.Errorf("%d calls, want 2: the failed one once, the last not sent", n)
			}
		})
	}
}

// TestTransferResultsWalk: every transfer is visited once, over as many
// pages as it takes (the mock's pages hold 100).
func TestTransferResultsWalk(t *testing.T) {
	t.Parallel()
	for _, k := range transferKinds() {
		for _, n := range []int{0, 1, 100, 101, 250} {
			t.Run(fmt.Sprintf("%s %d", k.name, n), func(t *testing.T) {
				t.Parallel()
				e := newTransferEnv(t)
				exts := customerIDs("wm", n)
				k.prepare(e, exts...)
				start := e.clock.Now()
				if n > 0 {
					if _, err := k.transfer(context.Background(), e.c, wecom.TransferRequest{HandoverUserID: k.handover, TakeoverUserID: "u2", ExternalUserIDs: exts}); err != nil {
						t.Fatal(err)
					}
				}
				seen := map[string]int{}
				for st, err := range k.results(context.Background(), e.c, k.handover, "u2") {
					if err != nil {
						t.Fatal(err)
					}
					seen[st.ExternalUserID]++
					if st.State != wecom.TransferWaiting || !st.TakeoverTime.Equal(start.Add(24*time.Hour)) {
						t.Errorf("%s: %v at %v, want waiting until %v", st.ExternalUserID, st.State, st.TakeoverTime, start.Add(24*time.Hour))
					}
				}
				if len(seen) != n {
					t.Errorf("visited %d customers, want %d", len(seen), n)
				}
				for ext, c := range seen {
					if c != 1 {
						t.Errorf("%s visited %d times", ext, c)
					}
				}
				if got, want := e.calls(k.resID), max(1, (n+99)/100); got != want {
					t.Errorf("%d pages fetched, want %d", got, want)
				}
			})
		}
	}
}

// TestTransferResultsStop: breaking out fetches no further page; a context
// cancelled between pages ends the walk with its error.
func TestTransferResultsStop(t *testing.T) {
	t.Parallel()
	k := transferKinds()[0]
	setup := func(t *testing.T) *transferEnv {
		t.Helper()
		e := newTransferEnv(t)
		exts := customerIDs("wm", 250)
		k.prepare(e, exts...)
		if _, err := k.transfer(context.Background(), e.c, wecom.TransferRequest{HandoverUserID: k.handover, TakeoverUserID: "u2", ExternalUserIDs: exts}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	t.Run("break", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		for _, err := range k.results(context.Background(), e.c, k.handover, "u2") {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if n := e.calls(k.resID); n != 1 {
			t.Errorf("%d pages fetched after a break on the first item, want 1", n)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		items, errs := 0, 0
		var last error
		for _, err := range k.results(ctx, e.c, k.handover, "u2") {
			if err != nil {
				errs++
				last = err
				continue
			}
			if items++; items == 100 {
				cancel() // the end of the first page
			}
		}
		if items != 100 || errs != 1 || !errors.Is(last, context.Canceled) {
			t.Errorf("%d items, %d errors, last %v; want 100, one context.Canceled", items, errs, last)
		}
		if n := e.calls(k.resID); n != 1 {
			t.Errorf("%d pages fetched, want 1", n)
		}
	})
}

// TestTransferMovesCustomers: a transfer waits 24 hours on the mock's clock,
// then the customers are the takeover member's; CompleteTransfers does it
// at once.
func TestTransferMovesCustomers(t *testing.T) {
	t.Parallel()
	for _, k := range transferKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := newTransferEnv(t)
			ctx := context.Background()
			k.prepare(e, "wmA", "wmB", "wmC")
			start := e.clock.Now()
			if _, err := k.transfer(ctx, e.c, wecom.TransferRequest{HandoverUserID: k.handover, TakeoverUserID: "u2", ExternalUserIDs: []string{"wmA", "wmB"}}); err != nil {
				t.Fatal(err)
			}
			states := func() map[string]wecom.TransferStatus {
				t.Helper()
				m := map[string]wecom.TransferStatus{}
				for st, err := range k.results(ctx, e.c, k.handover, "u2") {
					if err != nil {
						t.Fatal(err)
					}
					m[st.ExternalUserID] = st
				}
				return m
			}
			e.clock.Advance(24*time.Hour - time.Second)
			if st := states(); st["wmA"].State != wecom.TransferWaiting || len(st) != 2 {
				t.Errorf("before 24 h: %v", st)
			}
			if got := e.srv.Customers(testCorp, "u2"); got != nil {
				t.Errorf("before 24 h the takeover has %v", got)
			}
			e.clock.Advance(time.Second)
			for ext, st := range states() {
				if st.State != wecom.TransferDone || !st.TakeoverTime.Equal(start.Add(24*time.Hour)) {
					t.Errorf("after 24 h: %s %v at %v", ext, st.State, st.TakeoverTime)
				}
			}
			if h, tk := e.srv.Customers(testCorp, k.handover), e.srv.Customers(testCorp, "u2"); !slices.Equal(h, []string{"wmC"}) || !slices.Equal(tk, []string{"wmA", "wmB"}) {
				t.Errorf("after 24 h: handover has %v, takeover %v", h, tk)
			}

			// CompleteTransfers does not wait.
			if _, err := k.transfer(ctx, e.c, wecom.TransferRequest{HandoverUserID: k.handover, TakeoverUserID: "u3", ExternalUserIDs: []string{"wmC"}}); err != nil {
				t.Fatal(err)
			}
			e.srv.CompleteTransfers(testCorp)
			if h, tk := e.srv.Customers(testCorp, k.handover), e.srv.Customers(testCorp, "u3"); h != nil || !slices.Equal(tk, []string{"wmC"}) {
				t.Errorf("after CompleteTransfers: handover has %v, takeover %v", h, tk)
			}
		})
	}
}
