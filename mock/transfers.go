package mock

import (
	"cmp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// Customer transfer (客户继承): on-job (在职继承, transfer_customer) and
// resigned (离职继承, resigned/transfer_customer) members hand customers over
// to another member. A transfer starts waiting; WeCom completes it by itself
// 24 hours later (document/path/92125 and 94081: "0 means the transfer
// started, taken over automatically after 24 hours"), and the mock does so
// when its clock (Config.Now) has passed that time, before it serves the
// next call of any API, or at once on CompleteTransfers. The mock's
// customers never refuse, so a transfer ends done (status 1), never refused
// (3) or with a full takeover member (4).

// The limits of the transfer APIs.
const (
	// maxTransferIDs is the most customers one transfer call takes.
	maxTransferIDs = catalog.TransferCustomerIDs
	// maxTransferMsg is the longest transfer_success_msg, in characters.
	maxTransferMsg = catalog.TransferSuccessMsgLen
	// transferDelay is how long a transfer waits before it completes.
	transferDelay = 24 * time.Hour
	// transferWindow and maxTransfersInWindow: an on-job member's customer
	// may be transferred 2 times in 90 natural days (document/path/92125).
	// The mock counts sliding 90×24 hours, per customer, the transfers it
	// started (refused ones do not count), and applies the cap to on-job
	// transfers only, as the page says.
	transferWindow       = 90 * 24 * time.Hour
	maxTransfersInWindow = 2
	// transferPage is the page size of transfer_result. WeCom's pages hold
	// at most catalog.TransferResultPage; the mock answers 100, the mock's
	// own choice within that, so that clients' paging is exercised on
	// small data.
	transferPage = min(100, catalog.TransferResultPage)
)

// The states of a transfer in transfer_result.
const (
	transferDone    = 1
	transferWaiting = 2
)

// transferKind tells the two APIs' transfers apart: each API lists and
// limits its own.
type transferKind int

const (
	onJob transferKind = iota
	resigned
)

// resultPath is the path of the transfer_result API of the kind, which
// scopes its cursors.
func (k transferKind) resultPath() string {
	if k == resigned {
		return catalog.ResignedTransferResult.Path()
	}
	return catalog.TransferResult.Path()
}

// transfer is one customer's transfer.
type transfer struct {
	kind               transferKind
	handover, takeover string
	external           string
	status             int
	// at is when the transfer was taken over, or, while waiting, when it
	// will be.
	at time.Time
}

type transferKey struct {
	kind               transferKind
	handover, takeover string
	external           string
}

// transferBook is a corp's transfer state.
type transferBook struct {
	// resigned: the members who have resigned.
	resigned map[string]bool
	// latest: the latest transfer of each (kind, handover, takeover,
	// customer), as transfer_result lists them.
	latest map[transferKey]*transfer
	// waiting: external_userid → the customer's transfer under way.
	waiting map[string]*transfer
	// started: external_userid → when its on-job transfers started.
	started map[string][]time.Time
}

// transferBook returns the corp's transfer state, making it on first use.
func (c *corp) transferBook() *transferBook {
	if c.transfers == nil {
		c.transfers = &transferBook{
			resigned: make(map[string]bool),
			latest:   make(map[transferKey]*transfer),
			waiting:  make(map[string]*transfer),
			started:  make(map[string][]time.Time),
		}
	}
	return c.transfers
}

// Resign marks member userID of corp corpID resigned (离职): the on-job
// transfer API refuses to hand over their customers, and the resigned one
// (离职继承) accepts. Their customers stay theirs until transferred.
func (s *Server) Resign(corpID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corpLocked(corpID).transferBook().resigned[userID] = true
}

// CompleteTransfers completes every transfer of corp corpID still waiting,
// as if the 24 hours had passed: each customer moves from the handover
// member to the takeover member, and transfer_result answers it done, taken
// over now.
func (s *Server) CompleteTransfers(corpID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.transfers == nil {
		return
	}
	now := s.now()
	for _, t := range c.transfers.waiting {
		c.completeTransfer(t, now)
	}
}

// settleTransfers completes the transfers due by now.
func (c *corp) settleTransfers(now time.Time) {
	if c.transfers == nil {
		return
	}
	for _, t := range c.transfers.waiting {
		if !now.Before(t.at) {
			c.completeTransfer(t, t.at)
		}
	}
}

// completeTransfer moves the customer to the takeover member at time at.
func (c *corp) completeTransfer(t *transfer, at time.Time) {
	c.removeFollow(t.handover, t.external)
	c.addFollow(t.takeover, t.external, at.Unix())
	t.status, t.at = transferDone, at
	delete(c.transfers.waiting, t.external)
}

// settlingTransfers wraps a handler so that the transfers due complete
// before it runs: any API then sees them done.
func settlingTransfers(h func(c *corp, in *input) (any, *apiError)) func(c *corp, in *input) (any, *apiError) {
	return func(c *corp, in *input) (any, *apiError) {
		c.settleTransfers(in.now)
		return h(c, in)
	}
}

// transferRequest is the body of both transfer APIs. The resigned one has
// no transfer_success_msg; like WeCom with any field it does not know, it
// ignores one.
type transferRequest struct {
	Handover string   `json:"handover_userid"`
	Takeover string   `json:"takeover_userid"`
	External []string `json:"external_userid"`
	Msg      string   `json:"transfer_success_msg"`
}

type transferResult struct {
	ExternalUserID string `json:"external_userid"`
	ErrCode        int    `json:"errcode"`
}

type transferAnswer struct {
	status
	Customer []transferResult `json:"customer"`
}

// Transfers registers the customer transfer (客户继承) APIs.
func (handlerSets) Transfers() handlers {
	return handlers{
		catalog.TransferCustomer:         (*corp).transferCustomer,
		catalog.TransferResult:           (*corp).transferResult,
		catalog.ResignedTransferCustomer: (*corp).resignedTransferCustomer,
		catalog.ResignedTransferResult:   (*corp).resignedTransferResult,
	}
}

// transferCustomer answers externalcontact/transfer_customer.
func (c *corp) transferCustomer(in *input) (any, *apiError) { return c.transfer(in, onJob) }

// resignedTransferCustomer answers externalcontact/resigned/transfer_customer.
func (c *corp) resignedTransferCustomer(in *input) (any, *apiError) {
	return c.transfer(in, resigned)
}

// transfer starts the transfers a request asks for. A request WeCom would
// refuse whole gets an error; otherwise every customer gets its own errcode.
//
// Codes: 40097, 40128 to 40131 and 41035 have those meanings in WeCom's
// error code list. Two are the mock's choice, the real code not being
// documented: more than 100 customers or a success message over 200
// characters answer 40058 (invalid parameter), and an on-job transfer from,
// or any transfer to, a resigned member answers 60111 (userid not found: a
// resigned member has left the directory).
func (c *corp) transfer(in *input, kind transferKind) (any, *apiError) {
	var req transferRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	b := c.transferBook()
	switch {
	case req.Handover == "" || req.Takeover == "":
		return nil, errf(catalog.CodeUserIDMissing, "missing handover_userid or takeover_userid")
	case len(req.External) == 0:
		return nil, errf(catalog.CodeExternalIDMissing, "missing external userid")
	case len(req.External) > maxTransferIDs:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, external_userid holds %d, at most %d", len(req.External), maxTransferIDs)
	case kind == onJob && utf8.RuneCountInString(req.Msg) > maxTransferMsg:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, transfer_success_msg over %d characters", maxTransferMsg)
	case req.Handover == req.Takeover:
		return nil, errf(catalog.CodeSameHandover, "handover_userid and takeover_userid are the same")
	case kind == resigned && !b.resigned[req.Handover]:
		return nil, errf(catalog.CodeNotResigned, "user not resigned from corp")
	case kind == onJob && b.resigned[req.Handover], b.resigned[req.Takeover]:
		return nil, errf(catalog.CodeNoSuchUserID, "userid not found")
	}
	out := transferAnswer{status: okStatus("ok"), Customer: make([]transferResult, 0, len(req.External))}
	for _, ext := range req.External {
		code := c.startTransfer(b, kind, req.Handover, req.Takeover, ext, in.now)
		out.Customer = append(out.Customer, transferResult{ExternalUserID: ext, ErrCode: code})
	}
	return out, nil
}

// startTransfer starts the transfer of customer ext and returns its
// errcode: 0 when it started.
func (c *corp) startTransfer(b *transferBook, kind transferKind, handover, takeover, ext string, now time.Time) int {
	switch {
	case ext == "" || (c.people[ext] == nil && len(c.followers(ext)) == 0):
		return catalog.CodeInvalidExternalUserID
	case c.customers[handover][ext] == nil:
		return catalog.CodeNotFollower
	case b.waiting[ext] != nil:
		return catalog.CodeTransferPending
	}
	if kind == onJob {
		recent := slices.DeleteFunc(b.started[ext], func(t time.Time) bool { return !now.Before(t.Add(transferWindow)) })
		if len(recent) >= maxTransfersInWindow {
			b.started[ext] = recent
			return catalog.CodeTransferTooOften
		}
		b.started[ext] = append(recent, now)
	}
	t := &transfer{kind: kind, handover: handover, takeover: takeover, external: ext, status: transferWaiting, at: now.Add(transferDelay)}
	b.latest[transferKey{kind, handover, takeover, ext}] = t
	b.waiting[ext] = t
	return 0
}

type transferResultRequest struct {
	Handover string `json:"handover_userid"`
	Takeover string `json:"takeover_userid"`
	Cursor   string `json:"cursor"`
}

type transferStatus struct {
	ExternalUserID string `json:"external_userid"`
	Status         int    `json:"status"`
	TakeoverTime   int64  `json:"takeover_time"`
}

type transferResultAnswer struct {
	status
	Customer   []transferStatus `json:"customer"`
	NextCursor string           `json:"next_cursor"`
}

// transferResult answers externalcontact/transfer_result.
func (c *corp) transferResult(in *input) (any, *apiError) { return c.transferResults(in, onJob) }

// resignedTransferResult answers externalcontact/resigned/transfer_result.
func (c *corp) resignedTransferResult(in *input) (any, *apiError) {
	return c.transferResults(in, resigned)
}

// transferResults answers a page of the transfers of kind from one member
// to another, sorted by external_userid. Its cursors belong to the API and
// the pair of members: one of another pair is refused with 40058.
func (c *corp) transferResults(in *input, kind transferKind) (any, *apiError) {
	var req transferResultRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	if req.Handover == "" || req.Takeover == "" {
		return nil, errf(catalog.CodeUserIDMissing, "missing handover_userid or takeover_userid")
	}
	scope := kind.resultPath() + "\x00" + req.Handover + "\x00" + req.Takeover
	off, ok := readCursor(scope, req.Cursor)
	if !ok {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	var all []*transfer
	if b := c.transfers; b != nil {
		for k, t := range b.latest {
			if k.kind == kind && k.handover == req.Handover && k.takeover == req.Takeover {
				all = append(all, t)
			}
		}
	}
	if off > len(all) {
		return nil, errf(catalog.CodeInvalidParam, "invalid cursor")
	}
	slices.SortFunc(all, func(a, b *transfer) int { return cmp.Compare(a.external, b.external) })
	end := min(off+transferPage, len(all))
	out := transferResultAnswer{status: okStatus("ok"), Customer: make([]transferStatus, 0, end-off)}
	for _, t := range all[off:end] {
		out.Customer = append(out.Customer, transferStatus{ExternalUserID: t.external, Status: t.status, TakeoverTime: t.at.Unix()})
	}
	if end < len(all) {
		out.NextCursor = makeCursor(scope, end)
	}
	return out, nil
}
