package wecom

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

// idleCorpCost builds n clients of n corps through a registry and returns
// the allocations of one build and the heap each idle client holds.
func idleCorpCost(t testing.TB, n int) (allocs float64, bytes uint64) {
	src := CredentialSourceFunc(func(_ context.Context, app App) (Credentials, error) {
		return Credentials{Secret: "secret-of-" + app.CorpID}, nil
	})
	r, err := NewRegistry(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	apps := make([]App, n+1001)
	for i := range apps {
		apps[i] = App{CorpID: fmt.Sprintf("wwcost%06d", i)}
	}
	next := n
	allocs = testing.AllocsPerRun(1000, func() {
		if _, err := r.Client(ctx, apps[next]); err != nil {
			t.Fatal(err)
		}
		next++
	})
	r2, err := NewRegistry(src)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, app := range apps[:n] {
		if _, err := r2.Client(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r2)
	return allocs, (after.HeapAlloc - before.HeapAlloc) / uint64(n)
}

// TestIdleCorpCost: a corp's client built by a registry costs a few
// kilobytes and a few dozen allocations, its limits and transport shared.
func TestIdleCorpCost(t *testing.T) {
	allocs, bytes := idleCorpCost(t, 1000)
	t.Logf("per idle corp of 1,000: %.0f allocations to build, %d bytes held", allocs, bytes)
	if allocs > 100 || bytes > 16<<10 {
		t.Errorf("per idle corp: %.0f allocations, %d bytes: want at most 100 and 16 KiB", allocs, bytes)
	}
}
