// Package wecom is a client for the WeCom (企业微信) server API that throttles
// itself, so that a busy program runs as close to WeCom's limits as they allow
// and never over them.
//
// WeCom enforces two kinds of limit, and a program that tags thousands of
// users or customers meets both:
//
//   - a frequency limit (限频): 10,000 calls a minute and 150,000 an hour per
//     corp per API. Going over answers 45009 and blocks the API for the whole
//     window.
//   - a concurrency limit (限流): about 5 calls in flight at once per corp for
//     the tag APIs and remark, and one edit at a time per customer across
//     mark_tag and remark. Going over answers 45033.
//
// "5 at a time" is not "5 a second": with 20 ms calls it allows 250 a second.
// Every typed method of this package carries its API's documented limits,
// declared once in package catalog with their sources (DefaultLimits returns
// them). WithLimits changes a limit and keeps the others, NoLimit removes
// one, and WithRule adds any rule WeCom documents: per app, per member, per
// source IP (WithEgress), per natural day in China Standard Time, weighted.
// Each call takes a
// lease from a throttle.Backend before it is sent and gives it back when the
// answer arrives, so that every goroutine, and with a shared backend every
// process, stays under the limits together. When WeCom gives the corp fewer
// calls in flight than configured (another system shares the budget), the
// first 45033s lower the limit for every process, and quiet minutes raise it
// back (WithAdaptiveLimits).
//
// A call sent is in flight at WeCom until WeCom answers, whatever the caller
// does: a caller whose context ends returns at once, while the attempt goes on
// in the background and gives its leases back when the answer comes
// (Client.Drain waits for such attempts at shutdown); an attempt that gets no
// answer keeps its slots for WithAbandonedHold. A request that never left
// gives them back at once.
//
// # Calls
//
// A Client serves one app of one corp:
//
//	c, err := wecom.New(corpID, secret, wecom.WithAgentID(1000002))
//	id, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "VIP"})
//	err = c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmXXX", AddTags: []string{"etXXX"}})
//
// Customers are found and read with Customers: ByMembers walks every
// (member, customer) pair of any number of members as an iter.Seq2, page
// after page as the loop asks, never losing or repeating a page; Get reads a
// customer with every follower; GroupChats walks the customer group chats;
// Transfer hands customers over with an outcome per customer:
//
//	for mc, err := range c.Customers.ByMembers(ctx, userIDs) {
//		if err != nil { ... }
//		err = c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: mc.Follow.UserID, ExternalUserID: mc.Contact.ExternalUserID, AddTags: tags})
//	}
//
// Files go up and down with Media, streamed: Upload sends any io.Reader
// as multipart, Download writes to any io.Writer in Range chunks, resumed
// where a cut answer stopped.
//
// APIs the SDK does not wrap yet go through Client.Do, with the same limits,
// token handling, retries and errors; WithKeys tells Do how to read what a
// rule counts (a resource, members, units) from their requests.
//
// # Tokens and other credentials
//
// The access token is fetched once, cached per (corp, app) under a key that
// holds a hash of the secret, refreshed ahead of expiry by one caller while the
// others go on, and refetched exactly once when WeCom rejects it. Share tokens
// with WithTokenStore (package redisstore for a fleet), or take them from a
// central service with WithTokenSource. The JS-SDK tickets (JSAPITicket,
// AgentTicket, signed for a page by JSSDKConfig and JSSDKAgentConfig), a
// suite's token (WithSuite) and a provider's token (WithProvider) are kept
// the same way, and each endpoint carries the credential its catalog row
// names.
//
// # Errors
//
// Failures are *APIError (WeCom's errcode), *RateLimitError (45009 or the
// cooldown after one), *ValidationError (refused before sending),
// *ResponseError (not a WeCom answer: no errcode, not a JSON object, a
// success without what it must carry) or *TransportError (no answer). Branch
// with errors.Is on ErrConcurrencyLimited, ErrRateLimited, ErrTokenInvalid,
// ErrBadCredentials, ErrSystemBusy, ErrInvalidRequest, ErrTransport and
// ErrAttemptTimeout. No error or log line holds an access token or a secret:
// text from outside is scrubbed of both.
//
// # Retries
//
// 45033 is retried with jittered backoff. -1, 6000, HTTP 5xx and transport
// errors are retried only for calls that are safe to repeat. 45009 puts the API
// into a cooldown for its block window: later calls fail at once without
// touching the network, or wait, with WithWaitOnRateLimit.
package wecom
