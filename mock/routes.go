package mock

import (
	"encoding/json"
	"net/http"

	"github.com/wecomkit/wecom/catalog"
)

// route is one API as the Server serves it: its catalog entry, its handler,
// and its limits, taken from the catalog's rules unless Config overrides
// them.
type route struct {
	catalog.Endpoint
	// apply is nil for gettoken, which has its own path through serve.
	apply func(c *corp, in *input) (any, *apiError)
	// limits are its rules as the Server enforces them (see admission.go).
	limits []limit
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
		catalog.SendWelcomeMsg: (*corp).sendWelcome,

		catalog.GroupChatList:     (*corp).groupChatList,
		catalog.GroupChatGet:      (*corp).groupChatGet,
		catalog.GroupChatTransfer: (*corp).groupChatTransfer,

		// Customer transfer (客户继承).
		catalog.TransferCustomer:         (*corp).transferCustomer,
		catalog.TransferResult:           (*corp).transferResult,
		catalog.ResignedTransferCustomer: (*corp).resignedTransferCustomer,
		catalog.ResignedTransferResult:   (*corp).resignedTransferResult,

		catalog.JSAPITicket:      (*corp).jsapiTicket,
		catalog.AgentTicket:      (*corp).jsapiTicket,
		catalog.GetSuiteToken:    nil,
		catalog.GetPreAuthCode:   (*corp).preAuthCode,
		catalog.GetProviderToken: nil,
		catalog.GetLoginInfo:     (*corp).loginInfo,

		catalog.MediaUpload: (*corp).mediaUpload,
		catalog.MediaGet:    (*corp).mediaGet,

		catalog.MessageSend:       (*corp).messageSend,
		catalog.MessageRecall:     (*corp).messageRecall,
		catalog.MessageUpdateCard: (*corp).messageUpdateCard,
		catalog.MessageStatistics: (*corp).messageStatistics,

		catalog.WebhookSend:       (*corp).robotSend,
		catalog.WebhookUpload:     (*corp).robotUpload,
		catalog.LinkedMessageSend: (*corp).linkedMessageSend,

		catalog.AppChatCreate: (*corp).appChatCreate,
		catalog.AppChatUpdate: (*corp).appChatUpdate,
		catalog.AppChatGet:    (*corp).appChatGet,
		catalog.AppChatSend:   (*corp).appChatSend,
	}
}

// newRoutes builds a route for every endpoint of the catalog, by path. An
// endpoint without a handler of its own gets answerOK's: the mock serves
// every row, and enforces its limits, the day it is declared.
func newRoutes(cfg Config) (map[string]*route, error) {
	hs := handlers()
	rts := make(map[string]*route)
	for _, e := range catalog.Endpoints() {
		h, ok := hs[e.ID]
		if !ok {
			h = answerOK(e)
		}
		rt := &route{Endpoint: e, apply: h}
		if h != nil { // transfers due complete before any API is served
			rt.apply = settlingTransfers(h)
		}
		if h != nil { // gettoken is not limited
			rt.limits = limits(e.Rules, cfg)
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

// answerOK returns the handler of a row with no state of its own: it
// checks the request as far as the catalog knows it (a POST's body is a
// JSON object; the row's Keys read it) and answers success.
func answerOK(e catalog.Endpoint) func(c *corp, in *input) (any, *apiError) {
	return func(_ *corp, in *input) (any, *apiError) {
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
}
