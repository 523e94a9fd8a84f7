package mock

import (
	"fmt"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// route is one API as the Server serves it: its catalog entry, its handler,
// and its limits, taken from the catalog's rules unless Config overrides
// them.
type route struct {
	catalog.Endpoint
	// apply is nil for gettoken, which has its own path through serve.
	apply func(c *corp, in *input) (any, *apiError)
	// inFlight caps the calls in flight per (corp, API); 0: no cap.
	inFlight int
	// lock names the per-customer lock (a rule's group, shared by the APIs
	// naming it) and perCustomer caps its calls in flight; "" or 0: none.
	lock        string
	perCustomer int
	// windows are the rate windows per (corp, API), maxPeriod the longest.
	windows   []Window
	maxPeriod time.Duration
}

// handlers maps every endpoint of the catalog to the Server's handler.
// gettoken maps to nil: serve answers it itself.
func handlers() map[catalog.ID]func(c *corp, in *input) (any, *apiError) {
	return map[catalog.ID]func(c *corp, in *input) (any, *apiError){
		catalog.GetToken:       nil,
		catalog.TagCreate:      (*corp).tagCreate,
		catalog.TagUpdate:      (*corp).tagUpdate,
		catalog.TagDelete:      (*corp).tagDelete,
		catalog.TagGet:         (*corp).tagGet,
		catalog.TagAddUsers:    (*corp).tagAddUsers,
		catalog.TagDelUsers:    (*corp).tagDelUsers,
		catalog.TagList:        (*corp).tagList,
		catalog.CorpTagList:    (*corp).corpTagList,
		catalog.CorpTagAdd:     (*corp).corpTagAdd,
		catalog.CorpTagEdit:    (*corp).corpTagEdit,
		catalog.CorpTagDel:     (*corp).corpTagDel,
		catalog.MarkTag:        (*corp).markTag,
		catalog.CustomerRemark: (*corp).remark,
		catalog.FollowUserList: (*corp).followUserList,
		catalog.CustomerList:   (*corp).customerList,
		catalog.CustomerGet:    (*corp).customerGet,
		catalog.CustomerBatch:  (*corp).customerBatch,

		catalog.GroupChatList:     (*corp).groupChatList,
		catalog.GroupChatGet:      (*corp).groupChatGet,
		catalog.GroupChatTransfer: (*corp).groupChatTransfer,

		// Customer transfer (客户继承).
		catalog.TransferCustomer:         (*corp).transferCustomer,
		catalog.TransferResult:           (*corp).transferResult,
		catalog.ResignedTransferCustomer: (*corp).resignedTransferCustomer,
		catalog.ResignedTransferResult:   (*corp).resignedTransferResult,
	}
}

// newRoutes builds a route for every endpoint of the catalog, by path. An
// endpoint without a handler is an error: the mock serves all of them.
func newRoutes(cfg Config) (map[string]*route, error) {
	hs := handlers()
	rts := make(map[string]*route)
	for _, e := range catalog.Endpoints() {
		h, ok := hs[e.ID]
		if !ok {
			return nil, fmt.Errorf("mock: no handler for %s", e.ID)
		}
		rt := &route{Endpoint: e, apply: h}
		if h != nil { // transfers due complete before any API is served
			rt.apply = settlingTransfers(h)
		}
		if h != nil { // gettoken is not limited
			rt.limit(cfg)
		}
		rts[string(e.ID)] = rt
	}
	return rts, nil
}

// limit sets the route's limits from its rules and cfg. Day rules are not
// enforced: the mock's windows slide.
func (rt *route) limit(cfg Config) {
	for _, r := range rt.Rules {
		switch {
		case r.Scope == catalog.ScopeAPI && r.InFlight > 0:
			rt.inFlight = override(cfg.Concurrency, r.InFlight)
		case (r.Scope == catalog.ScopeShared || r.Scope == catalog.ScopeResource) && r.InFlight > 0:
			rt.lock, rt.perCustomer = r.Group, override(cfg.PerCustomerConcurrency, r.InFlight)
			if rt.lock == "" {
				rt.lock = string(rt.ID)
			}
		case r.Scope == catalog.ScopeAPI && r.IsRate() && r.Per != catalog.Day && cfg.Windows == nil:
			rt.windows = append(rt.windows, Window{Limit: r.Limit, Period: r.Per.Duration()})
		}
	}
	if cfg.Windows != nil {
		rt.windows = cfg.Windows
	}
	for _, w := range rt.windows {
		rt.maxPeriod = max(rt.maxPeriod, w.Period)
	}
}

// override returns the cap a Config field sets over the catalog's: zero
// keeps it, negative means none.
func override(cfg, def int) int {
	switch {
	case cfg < 0:
		return 0
	case cfg > 0:
		return cfg
	}
	return def
}
