package wecom

import (
	"context"
	"testing"

	"github.com/jarcoal/httpmock"
)

// BenchmarkDoPrecheck is the cost of Do on an unwrapped path through the
// pipeline, against an in-process answer: its checks against the catalog
// included.
func BenchmarkDoPrecheck(b *testing.B) {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("GET", testBaseURL+"/cgi-bin/gettoken", httpmock.NewStringResponder(200, `{"errcode":0,"errmsg":"ok","access_token":"T","expires_in":7200}`))
	mt.RegisterResponder("GET", testBaseURL+"/cgi-bin/user/get", httpmock.NewStringResponder(200, `{"errcode":0,"errmsg":"ok"}`))
	c, _ := New(testCorp, testSecret, WithBaseURL(testBaseURL), WithTransport(mt), WithoutAdaptiveLimits())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(ctx, "GET", "/cgi-bin/user/get", nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
