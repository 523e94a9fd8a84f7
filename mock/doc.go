// Package mock is a stateful fake WeCom (企业微信) server for tests and
// examples.
//
// It speaks the WeCom JSON-over-HTTP protocol for every endpoint the
// catalog declares (package catalog: tokens, contact and customer tags,
// customers, group chats, transfers, welcome messages, media, app messages,
// app group chats, group robots), and it enforces the limits the real
// service enforces, each row's rules as the catalog states them, so code
// that talks to WeCom can be tested for its behaviour under throttling
// without a network or an account:
//
//   - GET /cgi-bin/gettoken issues one token per (corp, app secret), reuses it
//     while it is valid and answers 40013, 40001, 41002 or 41004 for bad
//     credentials. Expired tokens answer 42001, unknown or invalidated ones
//     40014, a missing one 41001.
//   - Every other API is limited per (corp, API) by exact sliding rate
//     windows (default 10,000 per minute and 150,000 per hour). Going over
//     answers 45009 and blocks that API for that corp for the window's whole
//     period, as WeCom does.
//   - The APIs the catalog caps in concurrency (the tag APIs: 5 calls in
//     flight per corp; mark_tag and remark: 1 per customer) answer 45033 at
//     once beyond it; the per-member, per-app and per-robot windows answer
//     as WeCom does (45009, or a silent drop where WeCom drops). A count
//     per CST day or month (appchat/create, media/uploadimg) starts again
//     when the next day or month starts in China Standard Time.
//   - Latency (fixed, or spread uniformly around its mean), "system busy"
//     answers, HTTP 502s, truncated JSON and slow answers can be injected,
//     reproducibly from a seed.
//
// The contact tags (/cgi-bin/tag/*) and the customer-contact tags
// (/cgi-bin/externalcontact/{get_corp_tag_list,add_corp_tag,edit_corp_tag,
// del_corp_tag,mark_tag}) keep real state that tests can read back with
// [Server.Tags], [Server.CorpTagGroups] and [Server.Marks].
//
// A Server pushes callbacks to a receiver ([Server.SetCallback]) as WeCom
// does: encrypted and signed with the receiver's token and EncodingAESKey,
// tried again when the answer is not a 200 within 5 s, 3 attempts in all
// ([Server.CallbackDeliveries] records each). The API changes WeCom reports
// are pushed (addtagusers and deltagusers, add/edit/del_corp_tag, remark);
// [Server.AddExternalContact] makes a customer add a member and pushes
// add_external_contact with its welcome code; [Server.PushCallback] pushes
// any message or event.
//
// The directory's batch jobs (batch/syncuser, replaceuser, replaceparty)
// run the CSV a media_id names on the Server's clock, queued, running, then
// done after [JobDuration]: they change the directory, record a result per
// row, keep the results of a corp's last [JobResultsKept] jobs (40089 for
// older ones) and push batch_job_result ([Server.BatchJobs] lists them).
//
// Third-party suites ([Server.AddSuite]) get a suite_ticket pushed to
// their command URL ([Server.SetSuiteCallback]) at once and every
// [SuiteTicketInterval] of the Server's clock, each accepted for
// [SuiteTicketLifetime] (40085 after); a corp installs one with
// [Server.Authorize] (an auth code spent once for a permanent code,
// create_auth pushed), and get_corp_token issues the corp's access token
// for the suite. A token of one kind (a corp's, a suite's, a provider's)
// sent where another is due is refused: 40082 for a suite's API, 40014
// elsewhere. The id translations (open_corpid, open_userid, the new
// external_userid) answer the same ids every time.
//
// A Server can be served three ways: [Server.Handler] for any HTTP server,
// [Server.Start] for an [net/http/httptest.Server], and [Server.Responder] or
// [Server.Register] for github.com/jarcoal/httpmock.
//
// # Answers where WeCom's documentation is silent
//
// Every error is an HTTP 200 answer {"errcode":N,"errmsg":"..."} whose errmsg
// has WeCom's shape ("..., hint: [...], from ip: ..., more info at ..."),
// except -1 which is exactly "system busy". Where the documentation names no
// code, this package answers:
//
//   - 41002 / 41004: gettoken without corpid / corpsecret.
//   - 41017: a contact-tag call without tagid (absent or 0); 40068 for a
//     tagid that is not a number, is negative, or names no tag.
//   - 45024: creating a contact tag when the corp already has 3,000.
//   - 40070 / 40031: addtagusers / deltagusers with both lists empty (as if
//     every member were invalid).
//   - 40072: a customer-contact tag or group name that is empty or longer
//     than 30 characters (40071 is kept for names already taken).
//   - 40068: add_corp_tag with neither group_id nor group_name,
//     edit_corp_tag without id, del_corp_tag and mark_tag with both lists
//     empty.
//   - 40058: add_corp_tag without any tag.
//   - 41009 / 40096: mark_tag without userid / external_userid.
//   - 40058 / 60111: transfer_customer or resigned/transfer_customer with
//     more than 100 customers or a transfer_success_msg over 200 characters
//     / from a member marked resigned ([Server.Resign]; on-job transfers
//     only), or to one. The other transfer codes (40096, 40097, 40128 to
//     40131) are WeCom's own.
//   - 47001: a body that is not valid JSON of the expected shape (including
//     an empty body, except for get_corp_tag_list, which treats it as {}).
//   - 40058: a batch job's file without the template's header row (帐号,
//     or 部门名称, 部门ID and 父部门ID), or a callback whose URL, token
//     or EncodingAESKey is not valid; in a job's rows, 40058 for a new
//     member without a name or a department row that does not parse.
//   - 40058: message/recall of a msgid the app did not send, already
//     recalled, or sent 24 hours ago or more; get_statistics with a
//     time_type other than 0 or 1.
//   - 41051: send_welcome_msg with a welcome_code unknown, used or past
//     its 20 seconds (WeCom documents 41051 for a code another app used
//     first).
//   - 60140: update_template_card with a response_code not issued to the
//     app, used, or 72 hours old or more (the code an app was seen to get;
//     undocumented). 81013 when none of its recipients is known, and
//     40058 with neither button.replace_name nor a template_card.
//
// A Server is safe for use by any number of goroutines. It holds no
// goroutines of its own but those delivering callbacks and the timers that
// end batch jobs, which [Server.Close] stops (and waits for).
package mock
