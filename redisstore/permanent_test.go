package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/redisstore"
)

// The Redis permanent code store, on a node and a cluster, beside the one
// in memory: a kept installation read back (by another store on the same
// Redis, as another process), none for a corp never kept or deleted, the
// suites apart, and bad input refused.
func TestPermanentCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, b := range redisBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.connect(t)
			prefix := redistest.Prefix(t, rdb)
			stores := map[string]wecom.PermanentCodeStore{"memory": &wecom.MemoryPermanentCodes{}}
			for _, name := range []string{"redis", "redis again"} {
				s, err := redisstore.NewPermanentCodes(rdb, prefix, "wwsuite1")
				if err != nil {
					t.Fatal(err)
				}
				stores[name] = s
			}
			other, err := redisstore.NewPermanentCodes(rdb, prefix, "wwsuite2")
			if err != nil {
				t.Fatal(err)
			}
			want := wecom.Installation{PermanentCode: "pc-secret", AgentID: 1000001}
			for _, w := range []string{"memory", "redis"} {
				if err := stores[w].Set(ctx, "wwcorp1", want); err != nil {
					t.Fatal(err)
				}
			}
			for name, s := range stores {
				if got, err := s.Get(ctx, "wwcorp1"); err != nil || got != want {
					t.Errorf("%s: Get = %+v, %v; want %+v", name, got, err, want)
				}
				if _, err := s.Get(ctx, "wwcorp2"); !errors.Is(err, wecom.ErrUnknownApp) {
					t.Errorf("%s: a corp never kept: %v, want ErrUnknownApp", name, err)
				}
				if err := s.Set(ctx, "wwcorp1", wecom.Installation{AgentID: 1}); !errors.Is(err, wecom.ErrInvalidRequest) {
					t.Errorf("%s: an empty code: %v, want ErrInvalidRequest", name, err)
				}
			}
			if _, err := other.Get(ctx, "wwcorp1"); !errors.Is(err, wecom.ErrUnknownApp) {
				t.Errorf("another suite reads the installation: %v", err)
			}
			if err := stores["redis again"].Delete(ctx, "wwcorp1"); err != nil {
				t.Fatal(err)
			}
			if _, err := stores["redis"].Get(ctx, "wwcorp1"); !errors.Is(err, wecom.ErrUnknownApp) {
				t.Errorf("after Delete by another process: %v, want ErrUnknownApp", err)
			}
		})
	}
	if _, err := redisstore.NewPermanentCodes(nil, "", "wwsuite"); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("a nil client: %v", err)
	}
}
