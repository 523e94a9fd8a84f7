package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The main job end to end on the embedded mock: every mark succeeds and the
// mock never answers 45033 or 45009.
func TestBulkTagOnEmbeddedMock(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := config{corpID: "wwtest", secret: "s", userID: "zhangsan", customers: 200, repeat: 3, workers: 24, latency: 2 * time.Millisecond}
	ok, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil || !ok {
		t.Fatalf("run = %v, %v\n%s", ok, err, out.String())
	}
	for _, want := range []string{"600 requested, 600 done, 600 ok, 0 failed", "max in flight 5,", "45033 answered 0, 45009 answered 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBulkTagRejectsBadFlags(t *testing.T) {
	for _, cfg := range []config{
		{customers: 0, repeat: 1, workers: 1},
		{customers: 1, repeat: 1, workers: 1, redis: "127.0.0.1:1"}, // nothing listens there
	} {
		if _, err := run(context.Background(), cfg, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%+v) succeeded", cfg)
		}
	}
}
