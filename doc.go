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
// them; LIMITS.md at the module's root is their table). WithLimits changes a
// limit and keeps the others, NoLimit removes one, and WithRule adds any rule
// WeCom documents: per app, per member, per source IP (WithEgress), per
// natural day in China Standard Time, weighted. Each call takes a lease from a
// throttle.Backend before it is sent and gives it back when the answer
// arrives, so that every goroutine, and with a shared backend every process,
// stays under the limits together. When WeCom gives the corp fewer calls in
// flight than configured (another system shares the budget), the first 45033s
// lower the limit for every process, and quiet minutes raise it back
// (WithAdaptiveLimits).
//
// # Calls
//
// A Client serves one app of one corp:
//
//	c, err := wecom.New(corpID, secret, wecom.WithAgentID(1000002))
//	id, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "VIP"})
//	err = c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmXXX", AddTags: []string{"etXXX"}})
//
// Its services, one per family of APIs:
//
//   - Tags: the contact tags (通讯录标签) and their members.
//   - CustomerTags: the corp's customer tags (企业客户标签), and Mark, which
//     puts them on a customer, one edit of a customer at a time.
//   - Customers: the customers (客户联系). ByMembers walks every (member,
//     customer) pair of any number of members as an iter.Seq2, page after
//     page as the loop asks, never losing or repeating a page; Get reads a
//     customer with every follower; Remark edits one; GroupChats,
//     GroupChat and TransferGroupChats cover the customer group chats;
//     Transfer and TransferResigned hand customers over with an outcome
//     per customer; Welcome sends the welcome message of an
//     add_external_contact event's WelcomeCode.
//   - Media: files up and down (素材), streamed: Upload sends any io.Reader
//     as multipart, Download writes to any io.Writer in Range chunks,
//     resumed where a cut answer stopped; UploadImage (a permanent URL,
//     under its CST day and month quotas), UploadByURL (a job) and
//     DownloadVoice.
//   - Messages: app messages (应用消息) of every type, template cards
//     included, counted on each member they name against WeCom's 30 a
//     minute and 1,000 an hour, over which WeCom drops a message without an
//     error; Recall, UpdateTemplateCard and Statistics manage them, and
//     SendLinked reaches the members of linked corps.
//   - AppChats: app group chats (应用群聊), whose messages are counted on
//     each member of the chat.
//   - Users and Departments: the directory (通讯录). Users.IDs walks
//     user/list_id and yields each member once with all its departments;
//     Users.Get reads one (a field WeCom withholds from newer apps is nil);
//     lookups by mobile, email and openid, and the writes.
//   - Auth: sign-in (身份验证): SignIn reads a code as a member or a
//     visitor, never both; PrivateInfo reads a member's sensitive fields;
//     AuthorizeURL and WebLoginURL build the sign-in pages' URLs.
//   - Jobs: the directory's batch jobs (异步批量接口), members or
//     departments from a CSV in WeCom's template (UsersCSV,
//     DepartmentsCSV), uploaded and started in one call; the Job returned
//     is waited on by polling, by the batch_job_result callback, or both.
//
// # Many corps
//
// A Registry serves the apps of many corps from one process: a service
// provider's authorizing corps, or a company's several corps. It builds an
// app's Client on first use from a CredentialSource (a CredentialMap, the
// environment with EnvCredentials, a file with LoadCredentials, or a
// provider's permanent codes), shares one limiter, one token store, one
// transport and the resolved limits among them, keeps a corp's own limits
// (WithCorpOptions), and drops a client left idle, running no goroutine
// for it. WeCom also limits each API per source IP, summed over every corp
// served from it: WithEgress names the IP the fleet sends from, and the
// per-IP windows (WithIPLimits for a third-party app's) then hold across
// the corps of the process, and of every process sharing the limiter.
// When a second corp is answered 45009 on the same IP and API within the
// first one's block, WeCom blocked the IP, not a corp: the API cools for
// every corp sent from it.
//
// A service provider's suite serves its authorizing corps through
// Installations (NewInstallations): Installations.Handle takes the suite's
// command URL (a callback.Handler), keeping each suite_ticket, spending
// create_auth's auth code for the corp's permanent code, kept in a
// PermanentCodeStore (MemoryPermanentCodes, redisstore.PermanentCodes),
// and on cancel_auth dropping the corp's client, tokens and code; every
// authorization callback then reaches the caller's function. Its Registry
// builds each corp's client on first use, running on the corp's token
// from get_corp_token, fetched once per corp for the fleet.
//
// A group robot (群机器人) needs only its webhook key: NewRobot returns a
// Robot whose Send waits for room in the robot's 20 messages a minute.
//
// APIs the SDK does not wrap yet go through Client.Do, with the same limits,
// token handling, retries and errors; WithKeys tells Do how to read what a
// rule counts (a resource, members, units) from their requests.
//
// # Tokens and other credentials
//
// The access token is fetched once for any number of callers, cached per
// (corp, app) under a key that holds a hash of the secret, refreshed ahead of
// expiry while callers go on with the current one, and refetched exactly once
// when WeCom rejects it. Share tokens with WithTokenStore, or take them from a
// central service with WithTokenSource. The JS-SDK tickets (JSAPITicket,
// AgentTicket, signed for a page by JSSDKConfig and JSSDKAgentConfig), a
// third-party suite's token (a Suite, from NewSuite, fetched with the
// newest suite_ticket its token store holds: Suite.ReceiveTicket) and a
// service provider's token (a Provider, from NewProvider) are kept the same
// way, and each endpoint carries the credential its catalog row names: a
// Client, a Suite, a Provider and a Robot each hold one kind, and a call
// needing another fails with a *TokenKindError before it is sent.
//
// # Goroutines
//
// A Client is safe for concurrent use. Creating one starts no goroutine, so
// clients are cheap; while it works, it runs goroutines of its own. A call sent is in flight at WeCom until WeCom answers, whatever
// the caller does: when the caller's context can end, the attempt runs in a
// goroutine of its own, and a caller whose context ends returns at once while
// the attempt goes on in the background, under the attempt timeout
// (WithAttemptTimeout), and gives its leases back when the answer comes;
// Client.Drain waits for such attempts at shutdown. An attempt that gets no
// answer keeps its slots for WithAbandonedHold; a request that never left
// gives them back at once. A token or ticket is fetched in a goroutine that
// its waiting callers share, detached from their cancellation, which is also
// how a refresh ahead of expiry runs in the background. A call that holds its
// leases longer than half their TTL renews them from a timer.
//
// # Errors
//
// Failures are *APIError (WeCom's errcode), *RateLimitError (45009 or the
// cooldown after one), *ValidationError (refused before sending),
// *ResponseError (not a WeCom answer: no errcode, not a JSON object, a
// success without what it must carry) or *TransportError (no answer). Branch
// with errors.Is on ErrConcurrencyLimited, ErrRateLimited, ErrTokenInvalid,
// ErrBadCredentials, ErrSystemBusy, ErrInvalidRequest, ErrTransport,
// ErrAttemptTimeout and ErrMaybeDone (the call may have been done). No error
// or log line holds an access token or a secret: text from outside is
// scrubbed of both.
//
// # Retries
//
// 45033 is retried with jittered backoff. -1, 6000, HTTP 5xx and transport
// errors are retried only for calls that are safe to repeat. 45009 puts the API
// into a cooldown for its block window: later calls fail at once without
// touching the network, or wait, with WithWaitOnRateLimit.
//
// # Other packages
//
//   - catalog declares every wrapped endpoint and its limits.
//   - throttle is the limiter, usable on its own: throttle.NewMemory in one
//     process, and throttle/redis for a fleet on Redis (single node,
//     Sentinel or Cluster).
//   - redisstore is the token store on Redis, shared by a fleet
//     (WithTokenStore).
//   - callback receives WeCom's callbacks (crypto, an http.Handler, typed
//     events, delivered once) and needs no Client; callback/redisdedupe
//     shares its de-duplication between replicas on Redis.
//   - mock is a fake WeCom that enforces the limits as WeCom answers them,
//     for tests and examples.
//
// Only throttle/redis, redisstore and callback/redisdedupe link go-redis, so
// that a program on the in-process limiter does not.
package wecom
