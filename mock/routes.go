package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/wecomkit/wecom/catalog"
)

// route is one API as the Server serves it: its catalog entry, its handler,
// and its limits, taken from the catalog's rules unless Config overrides
// them.
type route struct {
	catalog.Endpoint
	// apply is nil for the token endpoints, which have their own path
	// through serve.
	apply handler
	// limits are its rules as the Server enforces them (see admission.go);
	// thirdParty, the same for a third-party app's call, whose per-IP
	// limits are higher.
	limits, thirdParty []limit
}

// handler answers one call of an endpoint.
type handler func(c *corp, in *input) (any, *apiError)

// handlers maps endpoints to their handlers. A nil handler is a token
// endpoint's, which serve answers itself.
type handlers map[catalog.ID]handler

// handlerSets holds the mock's handler tables: each of its methods, in the
// file of the handlers it names, returns one family's. allHandlers finds
// them all, so a new family registers its endpoints in its own file.
type handlerSets struct{}

// allHandlers merges the tables of handlerSets' methods; an endpoint
// registered twice is an error.
func allHandlers() (handlers, error) {
	all := handlers{}
	sets := reflect.ValueOf(handlerSets{})
	for i := range sets.NumMethod() {
		table, ok := sets.Method(i).Interface().(func() handlers)
		if !ok {
			return nil, fmt.Errorf("mock: handlerSets.%s is not a handler table", sets.Type().Method(i).Name)
		}
		for id, h := range table() {
			if _, dup := all[id]; dup {
				return nil, fmt.Errorf("mock: %s registered twice (again by handlerSets.%s)", id, sets.Type().Method(i).Name)
			}
			all[id] = h
		}
	}
	return all, nil
}

// newRoutes builds a route for every endpoint of the catalog, by path. An
// endpoint without a handler of its own gets answerOK: the mock serves
// every row, and enforces its limits, the day it is declared (and
// TestEveryRowRegistered asks for the row's registration).
func newRoutes(cfg Config) (map[string]*route, error) {
	hs, err := allHandlers()
	if err != nil {
		return nil, err
	}
	rts := make(map[string]*route)
	for _, e := range catalog.Endpoints() {
		h, ok := hs[e.ID]
		if !ok {
			h = answerOK
		}
		rt := &route{Endpoint: e}
		if h != nil { // transfers due complete before any API is served
			rt.apply = settlingTransfers(h)
		}
		if h != nil { // gettoken is not limited
			rt.limits = limits(e.Rules, cfg)
			tp := catalog.SetIPLimits(e.Rules, catalog.ThirdPartyIPPerMinute, catalog.ThirdPartyIPPerHour, "third-party")
			rt.thirdParty = limits(tp, cfg)
		}
		rts[string(e.ID)] = rt
	}
	return rts, nil
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

// answerOK is the handler of a row with no state of its own: it checks the
// request as far as the catalog knows it (a POST's body is a JSON object;
// the row's Keys read it) and answers success.
func answerOK(_ *corp, in *input) (any, *apiError) {
	e := in.endpoint
	if e.Method == http.MethodPost {
		var obj map[string]json.RawMessage
		if err := in.decode(&obj); err != nil {
			return nil, err
		}
	}
	if e.Keys != nil {
		if _, err := e.Keys(in.query, in.body); err != nil {
			return nil, errf(catalog.CodeInvalidParam, "invalid parameter: %v", err)
		}
	}
	return okStatus("ok"), nil
}
