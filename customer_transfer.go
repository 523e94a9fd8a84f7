package wecom

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// TransferRequest hands customers of one member over to another (客户继承).
type TransferRequest struct {
	// HandoverUserID is the member who follows the customers now,
	// TakeoverUserID the one who takes them over.
	HandoverUserID string `json:"handover_userid"`
	TakeoverUserID string `json:"takeover_userid"`
	// ExternalUserIDs are the customers, any number: the SDK sends them
	// MaxTransferPerCall at a time. A customer named more than once (the
	// same external_userid exactly) is sent once, where it first appears,
	// and gets one outcome: a transfer is never asked twice for a customer.
	ExternalUserIDs []string `json:"external_userid"`
	// SuccessMsg is sent to each customer once the transfer is done, at
	// most MaxTransferMsgLen characters; empty means WeCom's default text.
	// Only on-job transfers (Transfer) send one: TransferResigned refuses
	// a request that sets it.
	SuccessMsg string `json:"transfer_success_msg,omitempty"`
}

// The limits of a transfer (document/path/92125).
const (
	// MaxTransferPerCall is the most customers one transfer call takes.
	MaxTransferPerCall = catalog.TransferCustomerIDs
	// MaxTransferMsgLen is the longest SuccessMsg, in characters.
	MaxTransferMsgLen = catalog.TransferSuccessMsgLen
)

// TransferOutcome is WeCom's answer for one customer of a transfer.
type TransferOutcome struct {
	ExternalUserID string
	// Code is WeCom's errcode for this customer. 0 means the transfer
	// started: the takeover member gets the customer 24 hours later unless
	// the customer refuses (TransferResults tells). Others, such as
	// CodeTransferTooOften or CodeNotFollower, mean this customer was not
	// transferred. It is 0 too when Unknown: WeCom gave no code.
	Code int
	// Unknown: WeCom's answer had no result for this customer: the
	// transfer may have started; check TransferResults before sending it
	// again (each customer allows few transfers).
	Unknown bool

	path   string
	corpID string
	agent  int
}

// Err returns nil when the transfer of the customer started, an *APIError
// with the customer's errcode and the API's path when WeCom refused it, and
// a *ResponseError saying its fate is unknown when Unknown.
func (o TransferOutcome) Err() error {
	switch {
	case o.Unknown:
		return &ResponseError{Path: o.path, StatusCode: http.StatusOK,
			Err: fmt.Errorf("no result for customer %s: its transfer may have started; check TransferResults", o.ExternalUserID)}
	case o.Code == CodeOK:
		return nil
	}
	return &APIError{Code: o.Code, Message: "transfer of customer " + o.ExternalUserID + " refused", Path: o.path, CorpID: o.corpID, AgentID: o.agent}
}

// Transfer hands an on-job member's customers over to another member
// (在职继承, externalcontact/transfer_customer, document/path/92125). WeCom
// allows each customer of an on-job member 2 transfers in 90 days.
//
// Every customer gets an outcome, in the order given (a customer named
// twice once, where it first appears), with its own errcode: customers
// WeCom refuses are outcomes, not an error. More customers than one call
// takes are sent in several calls, in order; if a call fails as a whole,
// the error says which one (and from which customer), and the outcomes are
// those of the calls before it. A failed call is not sent again when WeCom
// may have done it (catalog: not repeatable).
//
// When WeCom answers a call but leaves customers out, the transfer stops
// there too, with the outcomes of that call included: those WeCom answered
// for, and for each customer left out an outcome marked Unknown. The error
// is then a *ResponseError that says how many customers had no result.
func (s *CustomerService) Transfer(ctx context.Context, req TransferRequest) ([]TransferOutcome, error) {
	return s.transfer(ctx, catalog.TransferCustomer, req)
}

// TransferResigned hands a resigned member's customers over to another
// member (离职继承, externalcontact/resigned/transfer_customer,
// document/path/94081), as Transfer does. It takes no SuccessMsg.
func (s *CustomerService) TransferResigned(ctx context.Context, req TransferRequest) ([]TransferOutcome, error) {
	if req.SuccessMsg != "" {
		return nil, invalid("transfer_success_msg", "a resigned transfer sends none")
	}
	return s.transfer(ctx, catalog.ResignedTransferCustomer, req)
}

// transfer runs transfer_customer or resigned/transfer_customer in calls of
// at most MaxTransferPerCall customers.
func (s *CustomerService) transfer(ctx context.Context, id catalog.ID, req TransferRequest) ([]TransferOutcome, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	exts := distinctIDs(req.ExternalUserIDs)
	calls := (len(exts) + MaxTransferPerCall - 1) / MaxTransferPerCall
	outcomes := make([]TransferOutcome, 0, len(exts))
	for i := range calls {
		b := req
		b.ExternalUserIDs = chunk(exts, i, MaxTransferPerCall)
		out := transferAnswer{sent: b.ExternalUserIDs}
		err := s.p.perform(ctx, &call{id: id, body: b, out: &out})
		// Only an answer short of results leaves both an error and codes:
		// any other error may come while the call still runs (and writes
		// out) without its caller.
		if err == nil || errors.Is(err, errNoTransferResult) {
			for j, ext := range b.ExternalUserIDs {
				outcomes = append(outcomes, TransferOutcome{ExternalUserID: ext, Code: out.codes[j], Unknown: out.unknown[j],
					path: id.Path(), corpID: s.p.cfg.corpID, agent: s.p.cfg.agentID})
			}
		}
		switch {
		case err != nil && calls == 1:
			return outcomes, err
		case err != nil:
			return outcomes, fmt.Errorf("wecom: transfer from %s to %s: call %d of %d (customers from %d): %w",
				req.HandoverUserID, req.TakeoverUserID, i+1, calls, i*MaxTransferPerCall, err)
		}
	}
	return outcomes, nil
}

func (r TransferRequest) validate() error {
	switch {
	case r.HandoverUserID == "" || r.TakeoverUserID == "":
		return invalid("handover_userid", "handover_userid and takeover_userid are required")
	case r.HandoverUserID == r.TakeoverUserID:
		return invalid("takeover_userid", "%q is also the handover member", r.TakeoverUserID)
	case len(r.ExternalUserIDs) == 0:
		return invalid("external_userid", "no customers")
	case utf8.RuneCountInString(r.SuccessMsg) > MaxTransferMsgLen:
		return invalid("transfer_success_msg", "%d characters, at most %d", utf8.RuneCountInString(r.SuccessMsg), MaxTransferMsgLen)
	}
	for i, ext := range r.ExternalUserIDs {
		if ext == "" {
			return invalid("external_userid", "customer %d is empty", i)
		}
	}
	return nil
}

// transferAnswer is a transfer call's answer; sent are the customers the
// call named, without repeats, each of which must have a result.
type transferAnswer struct {
	Customer []struct {
		ExternalUserID string `json:"external_userid"`
		ErrCode        int    `json:"errcode"`
	} `json:"customer"`

	sent []string
	// codes are the errcodes of sent, in its order (the first result of a
	// customer the answer names twice); unknown marks those the answer has
	// no result for.
	codes   []int
	unknown []bool
}

// errNoTransferResult is the cause of a transfer answer that leaves some of
// the customers sent without a result.
var errNoTransferResult = errors.New("no result")

func (a *transferAnswer) validate() error {
	byID := make(map[string]int, len(a.Customer))
	for _, c := range a.Customer {
		if _, ok := byID[c.ExternalUserID]; !ok {
			byID[c.ExternalUserID] = c.ErrCode
		}
	}
	a.codes, a.unknown = make([]int, len(a.sent)), make([]bool, len(a.sent))
	missing := 0
	for i, ext := range a.sent {
		code, ok := byID[ext]
		a.codes[i], a.unknown[i] = code, !ok
		if !ok {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("the answer has %w for %d of the %d customers sent: their transfer may have started; see the outcomes marked Unknown",
			errNoTransferResult, missing, len(a.sent))
	}
	return nil
}

// TransferState is where the transfer of one customer stands.
type TransferState int

// The states of a transfer, as transfer_result answers them.
const (
	// TransferDone: the takeover member has the customer.
	TransferDone TransferState = 1
	// TransferWaiting: the customer has not answered yet; the transfer
	// completes by itself at TakeoverTime.
	TransferWaiting TransferState = 2
	// TransferRefused: the customer refused the takeover member.
	TransferRefused TransferState = 3
	// TransferTakeoverFull: the takeover member has the most customers
	// allowed.
	TransferTakeoverFull TransferState = 4
	// TransferNoRecord: WeCom has no record of the transfer (on-job
	// transfers only).
	TransferNoRecord TransferState = 5
)

// String names the state.
func (st TransferState) String() string {
	switch st {
	case TransferDone:
		return "done"
	case TransferWaiting:
		return "waiting"
	case TransferRefused:
		return "refused"
	case TransferTakeoverFull:
		return "takeover full"
	case TransferNoRecord:
		return "no record"
	}
	return fmt.Sprintf("TransferState(%d)", int(st))
}

// TransferStatus is the state of the transfer of one customer.
type TransferStatus struct {
	ExternalUserID string
	State          TransferState
	// TakeoverTime is when the takeover member got the customer, or, for
	// a waiting transfer, when the transfer will complete by itself; zero
	// when WeCom gives none.
	TakeoverTime time.Time
}

// TransferResults yields the state of every customer member handover has
// transferred to member takeover while on the job (externalcontact/
// transfer_result, document/path/94088), page after page. The first error
// ends the walk, yielded once; breaking out of the loop fetches no further
// page.
func (s *CustomerService) TransferResults(ctx context.Context, handover, takeover string) iter.Seq2[TransferStatus, error] {
	return s.transferResults(ctx, catalog.TransferResult, handover, takeover)
}

// ResignedTransferResults yields the state of every customer of resigned
// member handover transferred to member takeover (externalcontact/resigned/
// transfer_result, document/path/94082), as TransferResults does.
func (s *CustomerService) ResignedTransferResults(ctx context.Context, handover, takeover string) iter.Seq2[TransferStatus, error] {
	return s.transferResults(ctx, catalog.ResignedTransferResult, handover, takeover)
}

func (s *CustomerService) transferResults(ctx context.Context, id catalog.ID, handover, takeover string) iter.Seq2[TransferStatus, error] {
	if handover == "" || takeover == "" {
		return func(yield func(TransferStatus, error) bool) {
			yield(TransferStatus{}, invalid("handover_userid", "handover_userid and takeover_userid are required"))
		}
	}
	return walk(ctx, func(ctx context.Context, cursor string) (page[TransferStatus], error) {
		var out transferResultAnswer
		body := transferResultRequest{HandoverUserID: handover, TakeoverUserID: takeover, Cursor: cursor}
		if err := s.p.perform(ctx, &call{id: id, body: body, out: &out}); err != nil {
			return page[TransferStatus]{}, err
		}
		items := make([]TransferStatus, 0, len(out.Customer))
		for _, c := range out.Customer {
			st := TransferStatus{ExternalUserID: c.ExternalUserID, State: c.Status}
			if c.TakeoverTime > 0 {
				st.TakeoverTime = time.Unix(c.TakeoverTime, 0)
			}
			items = append(items, st)
		}
		return page[TransferStatus]{items: items, next: out.NextCursor}, nil
	})
}

type transferResultRequest struct {
	HandoverUserID string `json:"handover_userid"`
	TakeoverUserID string `json:"takeover_userid"`
	Cursor         string `json:"cursor,omitempty"`
}

type transferResultAnswer struct {
	Customer []struct {
		ExternalUserID string        `json:"external_userid"`
		Status         TransferState `json:"status"`
		TakeoverTime   int64         `json:"takeover_time"`
	} `json:"customer"`
	NextCursor string `json:"next_cursor"`
}
