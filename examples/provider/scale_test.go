package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// scaleEnv runs TestProviderScale when set: it takes minutes of CPU.
const scaleEnv = "WECOM_PROVIDER_SCALE"

// TestProviderScale (run with WECOM_PROVIDER_SCALE=1): 1,000 corps authorized in one
// process; the heap each idle corp's client holds, built lazily with no
// token fetched; then 200 corps tagging at once under the third-party
// per-IP window, each within 5% of its bound (5 marks in flight at the
// mock's latency, in virtual time), one get_corp_token for each corp used
// and none for the others, nothing refused.
func TestProviderScale(t *testing.T) {
	if os.Getenv(scaleEnv) == "" {
		t.Skip("1,000 corps: set " + scaleEnv + "=1 to run")
	}
	synctest.Test(t, func(t *testing.T) {
		const corps, busy = 1000, 200
		cfg := config{corps: corps, customers: 100, ipPerMinute: catalog.ThirdPartyIPPerMinute, latency: 20 * time.Millisecond}
		ctx := context.Background()
		p, err := start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.srv.Close()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range corps {
			if _, err := p.in.Client(ctx, corpID(i)); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perCorp := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / corps
		fetches := func() int { return p.srv.Stats().Calls[catalog.GetCorpToken.Path()] }
		if n := fetches(); n != 0 {
			t.Errorf("%d get_corp_token calls before any call of a corp, want none", n)
		}
		sum := tagAll(ctx, p.in, cfg, firstCorps(busy))
		sum.mock = p.srv.Stats()
		worst := 1.0
		for _, cs := range sum.corps {
			bound := time.Duration((cs.customers+4)/5) * cfg.latency
			worst = min(worst, float64(bound)/float64(cs.end.Sub(cs.marking)))
		}
		t.Logf("%d corps authorized: %d bytes per idle corp's client; %d corps tagging at once: %d marks, the slowest corp at %.1f%% of its bound; get_corp_token %d; 45033 %d, 45009 %d",
			corps, perCorp, busy, sum.mock.Calls[markPath], 100*worst, fetches(), sum.mock.Refusals[codeBusy], sum.mock.Refusals[codeLimit])
		if !sum.ok() {
			t.Errorf("not every customer tagged, or something refused: %v", sum.mock.Refusals)
		}
		if worst < 0.95 {
			t.Errorf("the slowest corp ran at %.1f%% of its bound, want 95%% or more", 100*worst)
		}
		if n := fetches(); n != busy {
			t.Errorf("%d get_corp_token calls for %d corps used, want one each", n, busy)
		}
		if perCorp > 16<<10 {
			t.Errorf("%s bytes per idle corp, want at most 16 KiB", fmt.Sprint(perCorp))
		}
	})
}
