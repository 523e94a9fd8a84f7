package mock_test

import (
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// TestIPWindowsAcrossCorps: the per-IP window counts the calls of every
// corp from one source IP together, per API: once three corps have made
// its 3 calls of tag/list, a fourth corp's is refused with 45009, and so
// is every corp's until the window's period has passed; another API and
// the per-corp windows are untouched.
func TestIPWindowsAcrossCorps(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{IPWindows: []mock.Window{{Limit: 3, Period: time.Minute}}}, func(t *testing.T, e env) {
		corps := []string{"wwip1", "wwip2", "wwip3", "wwip4"}
		toks := make(map[string]string)
		for _, c := range corps {
			e.srv.AddApp(c, "secret-"+c)
			a := e.c.getToken(c, "secret-"+c)
			wantCode(t, "gettoken "+c, a, 0)
			toks[c] = a.str("access_token")
		}
		for _, c := range corps[:3] {
			wantCode(t, "tag/list of "+c, e.c.get(toks[c], pathList, nil), 0)
		}
		wantCode(t, "a fourth corp's tag/list", e.c.get(toks["wwip4"], pathList, nil), catalog.CodeFrequencyLimited)
		wantCode(t, "a first corp's tag/list in the block", e.c.get(toks["wwip1"], pathList, nil), catalog.CodeFrequencyLimited)
		wantCode(t, "another API", e.c.post(toks["wwip4"], pathCreate, `{"tagname":"a"}`), 0)
		e.clock.Advance(time.Minute + time.Second)
		wantCode(t, "tag/list after the block", e.c.get(toks["wwip4"], pathList, nil), 0)
		if got := e.srv.Stats().Refusals[catalog.CodeFrequencyLimited]; got != 2 {
			t.Errorf("45009 answered %d times, want 2", got)
		}
	})
}
