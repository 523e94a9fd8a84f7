package wecom_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
)

// BenchmarkMark measures the pipeline's own cost per call (limits, token,
// send, decode) against an httpmock answer that takes no time: with a
// context that cannot end, and with one that can, as a caller's usually can.
func BenchmarkMark(b *testing.B) {
	for _, cancellable := range []bool{false, true} {
		b.Run(fmt.Sprintf("cancellable=%t", cancellable), func(b *testing.B) {
			mt := httpmock.NewMockTransport()
			mt.RegisterResponder(http.MethodGet, "https://wecom.bench/cgi-bin/gettoken",
				httpmock.NewStringResponder(200, `{"errcode":0,"errmsg":"ok","access_token":"TOKEN-bench","expires_in":7200}`))
			mt.RegisterResponder(http.MethodPost, "https://wecom.bench/cgi-bin/externalcontact/mark_tag",
				httpmock.NewStringResponder(200, `{"errcode":0,"errmsg":"ok"}`))
			c, err := wecom.New("wwbench", "bench-secret", wecom.WithBaseURL("https://wecom.bench"), wecom.WithTransport(mt),
				wecom.WithLimits("/cgi-bin/externalcontact/mark_tag", wecom.Limits{Concurrency: 64, PerMinute: wecom.NoLimit, PerHour: wecom.NoLimit}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if cancellable {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := wecom.MarkTagRequest{UserID: "u", ExternalUserID: "wm" + strconv.FormatInt(n.Add(1), 10), AddTags: []string{"et"}}
					if err := c.CustomerTags.Mark(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
