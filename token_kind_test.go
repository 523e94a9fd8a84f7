package wecom

import (
	"context"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

// A row that declares a token the client cannot fetch yet (a suite's or a
// provider's) fails its calls before sending: the corp's access_token is
// never sent in its place.
func TestRowTokenTheClientCannotFetch(t *testing.T) {
	for _, kind := range []catalog.Token{catalog.SuiteToken, catalog.ProviderToken} {
		t.Run(kind.String(), func(t *testing.T) {
			f := setup(t)
			const path = "/cgi-bin/service/made_up"
			f.c.p.endpoints[path] = &endpointLimits{ep: catalog.Endpoint{ID: path, Method: "POST", Token: kind}, rules: catalog.Generic()}
			f.respond("POST", path, `{"errcode":0,"errmsg":"ok"}`)
			err := f.c.p.perform(context.Background(), &call{id: catalog.ID(path), body: map[string]int{"x": 1}})
			if err == nil || !strings.Contains(err.Error(), kind.String()) {
				t.Errorf("call = %v, want an error naming the %s", err, kind)
			}
			if n := f.calls("POST", path); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
