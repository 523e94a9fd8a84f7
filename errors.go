package wecom

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// WeCom error codes (errcode) the SDK knows by name. The meanings are those of the
// official error code page; codes not listed here still come back as *APIError.
// Each is package catalog's constant of the same name: its Errcodes table
// says which sentinel below matches a code, and the mock answers from it.
const (
	// CodeSystemBusy (-1): system busy; WeCom advises retrying at most 3 times.
	CodeSystemBusy = catalog.CodeSystemBusy
	// CodeOK (0): success.
	CodeOK = catalog.CodeOK
	// CodeDataVersionConflict (6000): data version conflict; retry later.
	CodeDataVersionConflict = catalog.CodeDataVersionConflict
	// CodeInvalidSecret (40001): invalid secret (not an invalid token).
	CodeInvalidSecret = catalog.CodeInvalidSecret
	// CodeInvalidCorpID (40013): invalid corpid.
	CodeInvalidCorpID = catalog.CodeInvalidCorpID
	// CodeInvalidOAuthCode (40029): the sign-in code is unknown, used or
	// over its five minutes (Auth.SignIn): send the browser to sign in
	// again.
	CodeInvalidOAuthCode = catalog.CodeInvalidOAuthCode
	// CodeInvalidAccessToken (40014): invalid access_token.
	CodeInvalidAccessToken = catalog.CodeInvalidAccessToken
	// CodeInvalidTagID (40068): invalid tag id or tag group id.
	CodeInvalidTagID = catalog.CodeInvalidTagID
	// CodeAllTagUsersInvalid (40070): addtagusers: every user and party is invalid.
	CodeAllTagUsersInvalid = catalog.CodeAllTagUsersInvalid
	// CodeTagNameExists (40071): the tag name already exists.
	CodeTagNameExists = catalog.CodeTagNameExists
	// CodeTagNameLength (40072): tag name length invalid (1 to 32 characters).
	CodeTagNameLength = catalog.CodeTagNameLength
	// CodeAllDelTagUsersInvalid (40031): deltagusers: every user and party is invalid.
	CodeAllDelTagUsersInvalid = catalog.CodeAllDelTagUsersInvalid
	// CodeSecretOfOtherCorp (40091): the secret belongs to another corp.
	CodeSecretOfOtherCorp = catalog.CodeSecretOfOtherCorp
	// CodeTooManyCorpTags (40126): the corp has the maximum of 3,000 customer tags.
	CodeTooManyCorpTags = catalog.CodeTooManyCorpTags
	// CodeAccessTokenMissing (41001): access_token missing (a bug).
	CodeAccessTokenMissing = catalog.CodeAccessTokenMissing
	// CodeAccessTokenExpired (42001): access_token expired.
	CodeAccessTokenExpired = catalog.CodeAccessTokenExpired
	// CodeFrequencyLimited (45009): call frequency over the limit; the API is
	// blocked for the rest of the window.
	CodeFrequencyLimited = catalog.CodeFrequencyLimited
	// CodeConcurrencyLimited (45033): too many calls in flight at once.
	CodeConcurrencyLimited = catalog.CodeConcurrencyLimited
	// CodeInvalidAuthCode (40078): the auth_code of an installation is not
	// valid (spent, or older than 10 minutes).
	CodeInvalidAuthCode = catalog.CodeInvalidAuthCode
	// CodeInvalidPermanentCode (40084): the permanent_code is not the
	// corp's (wrong, or the corp cancelled the installation).
	CodeInvalidPermanentCode = catalog.CodeInvalidPermanentCode
	// CodeInvalidSuiteToken (40082): the suite_access_token is not valid.
	CodeInvalidSuiteToken = catalog.CodeInvalidSuiteToken
	// CodeInvalidSuiteID (40083): no such suite, or a wrong suite_secret.
	CodeInvalidSuiteID = catalog.CodeInvalidSuiteID
	// CodeInvalidSuiteTicket (40085): the suite_ticket is not valid (a
	// stale one: WeCom pushes a new one every 10 minutes).
	CodeInvalidSuiteTicket = catalog.CodeInvalidSuiteTicket
	// CodeSuiteTokenExpired (42009): the suite_access_token expired.
	CodeSuiteTokenExpired = catalog.CodeSuiteTokenExpired
	// CodeInvalidWebhook (93000): the robot's webhook key is not valid, or
	// the robot was removed from its group.
	CodeInvalidWebhook = catalog.CodeInvalidWebhook
	// CodeAPINotAllowed (48002): the API is not allowed for this app.
	CodeAPINotAllowed = catalog.CodeAPINotAllowed
	// CodeNoPrivilege (60011): no privilege on the member, department or tag.
	CodeNoPrivilege = catalog.CodeNoPrivilege
	// CodeIPNotTrusted (60020): the calling IP is not trusted.
	CodeIPNotTrusted = catalog.CodeIPNotTrusted
	// CodeTagNotOwned (81011): the app may not operate this tag.
	CodeTagNotOwned = catalog.CodeTagNotOwned
	// CodeTooManyTagUsers (81014): too many users or parties in one call.
	CodeTooManyTagUsers = catalog.CodeTooManyTagUsers
	// CodeGroupChatOwnerFilterRequired (81017): groupchat/list without an
	// owner filter, for an app that sees over 1,000 members; list by owner
	// (GroupChatListRequest.OwnerUserIDs) instead.
	CodeGroupChatOwnerFilterRequired = catalog.CodeGroupChatOwnerFilterRequired
	// CodeChatOwnerNotResigned (90500): groupchat/transfer: the group's
	// owner has not left the corp, so the group cannot be handed over
	// (answered per group in the failures).
	CodeChatOwnerNotResigned = catalog.CodeChatOwnerNotResigned
	// CodeNoCustomers (84061): the member has no customers
	// (externalcontact/list); Customers.List answers an empty list instead.
	CodeNoCustomers = catalog.CodeNoCustomers
	// CodeInvalidExternalUserID (40096): invalid external_userid; a transfer
	// answers it for a customer WeCom does not know.
	CodeInvalidExternalUserID = catalog.CodeInvalidExternalUserID
	// CodeNotResigned (40097): the member has not resigned (a resigned
	// transfer of an on-job member's customers).
	CodeNotResigned = catalog.CodeNotResigned
	// CodeTakeoverFull (40099): the takeover member has the most customers
	// allowed.
	CodeTakeoverFull = catalog.CodeTakeoverFull
	// CodeTransferTooOften (40128): the customer was transferred too often
	// (an on-job member's customer at most twice in 90 days).
	CodeTransferTooOften = catalog.CodeTransferTooOften
	// CodeTransferPending (40129): the customer is being transferred already.
	CodeTransferPending = catalog.CodeTransferPending
	// CodeSameHandover (40130): the handover and takeover members are the
	// same.
	CodeSameHandover = catalog.CodeSameHandover
	// CodeNotFollower (40131): the handover member does not follow the
	// customer.
	CodeNotFollower = catalog.CodeNotFollower
	// CodeTokenOfOtherApp (301002): the token belongs to another app.
	CodeTokenOfOtherApp = catalog.CodeTokenOfOtherApp

	// CodeChatNotFound (86003): no app group chat has that chatid.
	CodeChatNotFound = catalog.CodeChatNotFound
	// CodeChatMemberCount (86006): a chat would have too many or too few
	// members (2 to 2,000).
	CodeChatMemberCount = catalog.CodeChatMemberCount
	// CodeChatNotOwned (86008): the chat was created by another app.
	CodeChatNotOwned = catalog.CodeChatNotOwned
	// CodeChatIDExists (86215): a chat already has that chatid.
	CodeChatIDExists = catalog.CodeChatIDExists
	// CodeInvalidChatMember (86216): a member to add is not in the
	// directory, or one to remove is not in the chat.
	CodeInvalidChatMember = catalog.CodeInvalidChatMember

	// CodeContactAPIClosed (48009): the API is closed to this caller: since
	// 2022-08-15 the contact-sync secret, called from an IP added after
	// that day, may not call user/list, user/simplelist or department/list
	// (Users.IDs walks the directory instead).
	CodeContactAPIClosed = catalog.CodeContactAPIClosed
	// CodeDepartmentNotFound (60003): no department has that id.
	CodeDepartmentNotFound = catalog.CodeDepartmentNotFound
	// CodeDepartmentNameExists (60008): a department of that name already
	// exists under the parent.
	CodeDepartmentNameExists = catalog.CodeDepartmentNameExists
	// CodeUserNotFound (46004): no member has that mobile, email or
	// openid (user/getuserid and the like).
	CodeUserNotFound = catalog.CodeUserNotFound
	// CodeNoSuchUserID (60111): no member of the directory has that
	// userid.
	CodeNoSuchUserID = catalog.CodeNoSuchUserID
	// CodeUserIDExists (60102): a member already has that userid.
	CodeUserIDExists = catalog.CodeUserIDExists
	// CodeMobileExists (60104): a member already has that mobile number.
	CodeMobileExists = catalog.CodeMobileExists
	// CodeDepartmentParentAbsent (60004): the parent department does not
	// exist (a department's row of ReplaceDepartments, say).
	CodeDepartmentParentAbsent = catalog.CodeDepartmentParentAbsent
	// CodeInvalidJobID (40089): batch/getresult has no result for the
	// jobid: it is unknown, or older than the corp's last five batch jobs,
	// the only ones whose results WeCom keeps. Jobs.Result and Job.Wait
	// return it as a *JobGoneError.
	CodeInvalidJobID = catalog.CodeInvalidJobID
)

// Sentinels for the classes of failure a caller branches on. Match them with
// errors.Is; the errors that match carry the details (errors.As to *APIError or
// *RateLimitError).
var (
	// ErrConcurrencyLimited: WeCom answered 45033, after the SDK's retries.
	ErrConcurrencyLimited = errors.New("wecom: concurrency limited")
	// ErrRateLimited: WeCom answered 45009, or the API is cooling down after one
	// (then no request was sent). The error is a *RateLimitError.
	ErrRateLimited = errors.New("wecom: rate limited")
	// ErrTokenInvalid: WeCom rejected the access token (40014, 42001, 41001) even
	// after one refetch.
	ErrTokenInvalid = errors.New("wecom: access token invalid")
	// ErrBadCredentials: gettoken refused the corp id or secret (40001, 40013,
	// 40091), get_corp_token a permanent code (40084: wrong, or the corp
	// cancelled the installation), or WeCom a robot's webhook key (93000).
	// The SDK does not ask for a token again for a while (see
	// WithBadCredentialsBackoff).
	ErrBadCredentials = errors.New("wecom: bad credentials")
	// ErrSystemBusy: WeCom answered -1 or 6000, after the retries that were safe.
	ErrSystemBusy = errors.New("wecom: system busy")
	// ErrInvalidRequest: the SDK refused a request before sending it, for input
	// WeCom would reject. The error is a *ValidationError.
	ErrInvalidRequest = errors.New("wecom: invalid request")
	// ErrTransport: no answer came: the connection was refused or broke, DNS
	// or TLS failed, or the attempt timed out. The error is a
	// *TransportError; its Sent field says whether WeCom may have got the
	// request.
	ErrTransport = errors.New("wecom: transport failure")
	// ErrAttemptTimeout: an attempt got no answer within the client's attempt
	// timeout (WithAttemptTimeout). It is a *TransportError that does not
	// match context.DeadlineExceeded, which is kept for the caller's own
	// deadline.
	ErrAttemptTimeout = errors.New("wecom: attempt timed out")
	// ErrMaybeDone: the request may have reached WeCom, but no clear answer
	// came back (WeCom's -1, an HTTP 5xx, an answer that is not WeCom's, a
	// connection broken after the request was written, an attempt
	// timeout), so WeCom may have done the call. A call that is not safe to
	// repeat is not repeated after it, and its error says so: a message
	// sent without a duplicate check may have been delivered.
	ErrMaybeDone = errors.New("wecom: may have been done")
)

// APIError is a non-zero errcode answered by WeCom.
type APIError struct {
	Code    int
	Message string
	// Path is the API path called, such as "/cgi-bin/tag/create".
	Path string
	// CorpID is the corp the call was made for, and AgentID its app when
	// the client knows it (WithAgentID), so that a service serving several
	// corps can tell whose secret or permission is wrong.
	CorpID  string
	AgentID int
}

// Error describes the answer.
func (e *APIError) Error() string {
	return fmt.Sprintf("wecom: %s: %s: errcode %d: %s", e.who(), e.Path, e.Code, e.Message)
}

func (e *APIError) who() string {
	switch {
	case e.CorpID == "" && strings.HasPrefix(e.Path, "/cgi-bin/webhook/"):
		return "robot"
	case e.CorpID == "":
		return "corp ?"
	case e.AgentID != 0:
		return fmt.Sprintf("corp %s agent %d", e.CorpID, e.AgentID)
	}
	return "corp " + e.CorpID
}

// Is matches the class sentinels: errors.Is(err, ErrConcurrencyLimited) and so on.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrConcurrencyLimited:
		return catalog.ClassOf(e.Code) == catalog.ClassConcurrency
	case ErrRateLimited:
		return catalog.ClassOf(e.Code) == catalog.ClassRate
	case ErrTokenInvalid:
		return catalog.ClassOf(e.Code) == catalog.ClassToken
	case ErrBadCredentials:
		return isCredentialCode(e.Code)
	case ErrSystemBusy:
		return catalog.ClassOf(e.Code) == catalog.ClassBusy
	case ErrMaybeDone:
		return e.Code == CodeSystemBusy
	}
	return false
}

func isTokenCode(code int) bool {
	return code == CodeInvalidAccessToken || code == CodeAccessTokenExpired || isSuiteTokenCode(code)
}

// isSuiteTokenCode reports a refused suite_access_token.
func isSuiteTokenCode(code int) bool {
	return code == CodeInvalidSuiteToken || code == CodeSuiteTokenExpired
}

func isCredentialCode(code int) bool { return catalog.ClassOf(code) == catalog.ClassCredential }

// RateLimitError reports that an API may not be called until RetryAfter has
// passed: WeCom answered 45009, or the API is cooling down after one. It matches
// ErrRateLimited and unwraps to the *APIError when there was an answer.
type RateLimitError struct {
	Path       string
	RetryAfter time.Duration
	// Err is the *APIError that started the block, or the *throttle.LimitError
	// when the call was refused locally (during the block, because the
	// limiter could not admit it before the context's deadline, or because
	// a daily count is spent until the next midnight in China Standard Time).
	Err error
	// Members are, when a per-member window refused the call (a message's
	// recipients, say), the members without room: they have it again after
	// RetryAfter. Nothing was sent to any member.
	Members []string
	// calendar: a daily or monthly count (catalog.Day, catalog.Month)
	// refused the call; 0 for another limit.
	calendar catalog.Period
}

// Error describes the block, saying each thing once.
func (e *RateLimitError) Error() string {
	var ae *APIError
	if errors.As(e.Err, &ae) {
		return fmt.Sprintf("%v (the API is blocked: retry after %s)", ae, e.RetryAfter)
	}
	return fmt.Sprintf("wecom: %s: rate limited (%s), retry after %s", e.Path, e.reason(), e.RetryAfter)
}

// reason says which local limit refused the call.
func (e *RateLimitError) reason() string {
	var le *throttle.LimitError
	if errors.As(e.Err, &le) {
		switch le.Reason {
		case throttle.ReasonCooldown:
			return "cooling down after a 45009"
		case throttle.ReasonRate:
			switch e.calendar {
			case catalog.Day:
				return "the daily count is spent until midnight CST"
			case catalog.Month:
				return "the monthly count is spent until the next month starts, CST"
			}
			if len(e.Members) > 0 {
				return fmt.Sprintf("the windows of %d member(s) are full until after the deadline, nothing sent", len(e.Members))
			}
			return "the rate window is full until after the deadline"
		case throttle.ReasonConcurrency:
			return "no slot before the deadline"
		case throttle.ReasonReserve:
			return "the rate window holds a reserve after the limiter's Redis lost its state"
		}
	}
	return "cooling down"
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Unwrap returns the answer that started the block, if any.
func (e *RateLimitError) Unwrap() error { return e.Err }

// ValidationError is a request the SDK refused to send. It matches
// ErrInvalidRequest.
type ValidationError struct {
	Field  string
	Reason string
	// Err is the cause, when another package found the problem (a
	// catalog.KeysFunc's error, matching catalog.ErrNoKeys).
	Err error
}

// Error describes the problem.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("wecom: invalid request: %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidRequest }

// Unwrap returns the cause, if any.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ErrJobGone: WeCom no longer holds a batch job's result (40089): the
// job is older than the corp's last five, or the jobid is not one of its.
// Asking again will not bring it back. The error is a *JobGoneError.
var ErrJobGone = errors.New("wecom: the batch job's result is gone")

// JobGoneError is a batch/getresult that answered 40089: WeCom keeps the
// results of a corp's last five batch jobs only, so an older job's (or an
// unknown jobid's) result is gone. Whether the job ran is not known from
// it: read the directory. It matches ErrJobGone and unwraps to the
// *APIError.
type JobGoneError struct {
	JobID string
	Err   error
}

// Error says that the result is gone, and why it may be.
func (e *JobGoneError) Error() string {
	return fmt.Sprintf("wecom: batch job %s: its result is gone (WeCom keeps only the last five batch jobs' results; "+
		"a later job pushed it out, or the jobid is not this corp's): %v", e.JobID, e.Err)
}

// Is makes errors.Is(err, ErrJobGone) true.
func (e *JobGoneError) Is(target error) bool { return target == ErrJobGone }

// Unwrap returns WeCom's answer.
func (e *JobGoneError) Unwrap() error { return e.Err }

// JobError is a batch job that WeCom ended in failure as a whole, as its
// batch_job_result callback said (a non-zero ErrCode): the rows of a job
// that ran have their own errcodes in JobResult.Rows instead.
type JobError struct {
	JobID   string
	Type    JobType
	Code    int
	Message string
}

// Error describes the failure.
func (e *JobError) Error() string {
	return fmt.Sprintf("wecom: batch job %s (%s) failed: errcode %d: %s", e.JobID, e.Type, e.Code, e.Message)
}

// TransportError is an attempt that got no answer. It matches ErrTransport,
// and ErrAttemptTimeout when the attempt timeout fired.
type TransportError struct {
	Path string
	// Sent reports that the request may have reached WeCom (it was written
	// to a connection), so the call may have been done.
	Sent bool
	// Timeout reports that the attempt timeout fired.
	Timeout bool
	// Err is the cause, free of secrets. For a timeout it is not returned
	// by Unwrap, so that the error does not match context.DeadlineExceeded.
	Err error
}

// Error describes the failure.
func (e *TransportError) Error() string {
	sent := "the request never left"
	if e.Sent {
		sent = "the request was sent: WeCom may have done it"
	}
	if e.Timeout {
		return fmt.Sprintf("wecom: %s: no answer within the attempt timeout (%s)", e.Path, sent)
	}
	return fmt.Sprintf("wecom: %s: %v (%s)", e.Path, e.Err, sent)
}

// Is matches ErrTransport, ErrAttemptTimeout for a timeout and ErrMaybeDone
// when the request was sent.
func (e *TransportError) Is(target error) bool {
	return target == ErrTransport || (e.Timeout && target == ErrAttemptTimeout) || (e.Sent && target == ErrMaybeDone)
}

// Unwrap returns the cause, except for an attempt timeout.
func (e *TransportError) Unwrap() error {
	if e.Timeout {
		return nil
	}
	return e.Err
}

// ResponseError is an answer that is not a WeCom answer: an HTTP status other
// than 200, or a body that is not the expected JSON.
type ResponseError struct {
	Path       string
	StatusCode int
	// Err is the decoding error, if the status was 200.
	Err error
	// shape: the body was JSON but did not fit the answer type.
	shape bool
}

// Error describes the answer.
func (e *ResponseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("wecom: %s: HTTP %d: malformed answer: %v", e.Path, e.StatusCode, e.Err)
	}
	return fmt.Sprintf("wecom: %s: HTTP %d", e.Path, e.StatusCode)
}

// Unwrap returns the decoding error.
func (e *ResponseError) Unwrap() error { return e.Err }

// Is matches ErrMaybeDone for an HTTP 5xx or an HTTP 200 that is not
// WeCom's answer: the request may have reached WeCom behind it.
func (e *ResponseError) Is(target error) bool {
	return target == ErrMaybeDone && (e.StatusCode >= 500 || e.StatusCode == 200)
}

// ErrNoSuiteTicket: a suite has no suite_ticket to fetch its token with:
// none arrived in the last 30 minutes (Suite.SetTicket, Suite.ReceiveTicket
// keep them), or WeCom refused the newest (40085). The fetch is not tried
// again with the ticket WeCom refused: the next one pushed is used as it
// arrives. The error is a *SuiteTicketError.
var ErrNoSuiteTicket = errors.New("wecom: no valid suite ticket")

// SuiteTicketError says why a suite has no ticket to fetch its token with.
// It matches ErrNoSuiteTicket; it never holds a ticket.
type SuiteTicketError struct {
	SuiteID string
	Reason  string
	// Err is WeCom's refusal (an *APIError with CodeInvalidSuiteTicket),
	// when it refused the ticket.
	Err error
}

// Error describes the problem.
func (e *SuiteTicketError) Error() string {
	s := "wecom: suite " + e.SuiteID + ": no valid suite ticket: " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrNoSuiteTicket) true.
func (e *SuiteTicketError) Is(target error) bool { return target == ErrNoSuiteTicket }

// Unwrap returns WeCom's refusal, if any.
func (e *SuiteTicketError) Unwrap() error { return e.Err }

// TokenKindError: a call of an endpoint carrying one kind of token
// (Needs) from a client that holds another (a Client the corp's
// access_token, a Suite its suite_access_token, a Provider its
// provider_access_token, a Robot its key), refused before anything is
// sent: WeCom would answer 40014 or 40082. It matches ErrInvalidRequest.
type TokenKindError struct {
	Path  string
	Needs catalog.Token
	Holds catalog.Token
}

// Error describes the problem.
func (e *TokenKindError) Error() string {
	return fmt.Sprintf("wecom: invalid request: %s carries a %s; this client holds a %s (%s)", e.Path, e.Needs, e.Holds, holderOf(e.Needs))
}

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *TokenKindError) Is(target error) bool { return target == ErrInvalidRequest }

// holderOf names what holds a token of kind t.
func holderOf(t catalog.Token) string {
	switch t {
	case catalog.SuiteToken:
		return "call it from a Suite: NewSuite"
	case catalog.ProviderToken:
		return "call it from a Provider: NewProvider"
	case catalog.RobotKey:
		return "call it from a Robot: NewRobot"
	}
	return "call it from a Client: New"
}
