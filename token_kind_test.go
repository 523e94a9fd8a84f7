package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

// A call of a row carrying one kind of token, from a pipeline holding
// another (a Client's, a Suite's, a Provider's, a Robot's), fails with a
// *TokenKindError before anything is sent, for every pair of kinds.
func TestTokenKindRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	rows := map[catalog.Token]catalog.ID{
		catalog.CorpToken:     catalog.UserIDToOpenUserID,
		catalog.SuiteToken:    catalog.GetPermanentCodeV2,
		catalog.ProviderToken: catalog.CorpIDToOpenCorpID,
		catalog.RobotKey:      catalog.WebhookSend,
	}
	f := setup(t)
	pipelines := map[catalog.Token]func() (*pipeline, error){
		catalog.CorpToken: func() (*pipeline, error) { return f.c.p, nil },
		catalog.SuiteToken: func() (*pipeline, error) {
			s, err := NewSuite("wwsuite", "suite-secret", WithBaseURL(testBaseURL), WithTransport(f.mt))
			if err != nil {
				return nil, err
			}
			return s.p, nil
		},
		catalog.ProviderToken: func() (*pipeline, error) {
			p, err := NewProvider("wwprovider", "provider-secret", WithBaseURL(testBaseURL), WithTransport(f.mt))
			if err != nil {
				return nil, err
			}
			return p.p, nil
		},
		catalog.RobotKey: func() (*pipeline, error) {
			r, err := NewRobot("robot-key", WithBaseURL(testBaseURL), WithTransport(f.mt))
			if err != nil {
				return nil, err
			}
			return r.p, nil
		},
	}
	for holds, mk := range pipelines {
		p, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		for needs, id := range rows {
			if needs == holds {
				continue
			}
			t.Run(holds.String()+" calls "+needs.String(), func(t *testing.T) {
				e, _ := catalog.Lookup(id.Path())
				q, body, err := e.SampleRequest()
				if err != nil {
					t.Fatal(err)
				}
				before := f.mt.GetTotalCallCount()
				err = p.perform(context.Background(), &call{id: id, query: q, body: json.RawMessage(body)})
				var tk *TokenKindError
				if !errors.As(err, &tk) || tk.Needs != needs || tk.Holds != holds || tk.Path != id.Path() || !errors.Is(err, ErrInvalidRequest) {
					t.Errorf("call = %v, want a *TokenKindError (needs %s, holds %s)", err, needs, holds)
				}
				if n := f.mt.GetTotalCallCount() - before; n != 0 {
					t.Errorf("%d requests sent", n)
				}
			})
		}
	}
}
