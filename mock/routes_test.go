package mock

import (
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

// TestEveryRowRegistered fails for a catalog row that no handler table
// registers (a row with no state of its own registers answerOK), and for a
// registered ID that the catalog does not declare.
func TestEveryRowRegistered(t *testing.T) {
	t.Parallel()
	hs, err := allHandlers()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[catalog.ID]bool{}
	for _, e := range catalog.Endpoints() {
		rows[e.ID] = true
		if _, ok := hs[e.ID]; !ok {
			t.Errorf("%s has no mock handler: register one in its family's file (a handlerSets method)", e.ID)
		}
	}
	for id := range hs {
		if !rows[id] {
			t.Errorf("%s is registered but not in catalog.Endpoints()", id)
		}
	}
}
