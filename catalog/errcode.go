package catalog

import "slices"

// The errcodes the client names (package wecom defines its Code
// constants from these) or the mock answers. Errcodes says what each
// means, and only there; a test fails on a constant it does not declare.
const (
	CodeSystemBusy          = -1
	CodeOK                  = 0
	CodeDataVersionConflict = 6000
	CodeInvalidSecret       = 40001
	CodeInvalidMediaType    = 40004
	CodeInvalidFileSize     = 40006
	CodeInvalidMediaID      = 40007
	CodeInvalidMsgType      = 40008
	CodeInvalidImageSize    = 40009
	CodeInvalidCorpID       = 40013
	CodeInvalidAccessToken  = 40014
	CodeInvalidOAuthCode    = 40029
	CodeGroupChatNotFound   = 40050
	CodeInvalidAgentID      = 40056
	CodeInvalidParam        = 40058
	CodeSecretOfOtherCorp   = 40091
	CodeAccessTokenMissing  = 41001
	CodeCorpIDMissing       = 41002
	CodeSecretMissing       = 41004
	CodeUserIDMissing       = 41009
	CodeTagIDMissing        = 41017
	CodeExternalIDMissing   = 41035
	CodeInvalidWelcomeCode  = 41051
	CodeAccessTokenExpired  = 42001
	CodeRequireGET          = 43001
	CodeRequirePOST         = 43002
	CodeEmptyMedia          = 44001
	CodeEmptyContent        = 44004
	CodeFrequencyLimited    = 45009
	CodeCountLimited        = 45024
	CodeConcurrencyLimited  = 45033
	CodeUserNotFound        = 46004
	CodeDataFormat          = 47001
	CodeAPINotAllowed       = 48002
	CodeNoPrivilege         = 60011
	CodeIPNotTrusted        = 60020
	CodeNoSuchUserID        = 60111
	CodeInvalidResponseCode = 60140
	CodeInvalidWebhook      = 93000
	CodeTokenOfOtherApp     = 301002
	CodeRangeRequired       = 830002
)

// The errcodes of the tag, customer, transfer and group chat APIs.
const (
	CodeInvalidTagID                 = 40068
	CodeAllTagUsersInvalid           = 40070
	CodeTagNameExists                = 40071
	CodeTagNameLength                = 40072
	CodeAllDelTagUsersInvalid        = 40031
	CodeTooManyCorpTags              = 40126
	CodeTagNotOwned                  = 81011
	CodeAllRecipientsInvalid         = 81013
	CodeTooManyTagUsers              = 81014
	CodeGroupChatOwnerFilterRequired = 81017
	CodeChatOwnerNotResigned         = 90500
	CodeNoCustomers                  = 84061
	CodeInvalidExternalUserID        = 40096
	CodeNotResigned                  = 40097
	CodeTakeoverFull                 = 40099
	CodeTransferTooOften             = 40128
	CodeTransferPending              = 40129
	CodeSameHandover                 = 40130
	CodeNotFollower                  = 40131
)

// The errcodes of the credential endpoints of suites and providers.
const (
	CodeInvalidAuthCode      = 40078
	CodeInvalidPermanentCode = 40084
	CodeInvalidSuiteToken    = 40082
	CodeInvalidSuiteID       = 40083
	CodeInvalidSuiteTicket   = 40085
	CodeSuiteTokenExpired    = 42009
)

// The errcodes of the app group chat (群聊会话) APIs.
const (
	CodeInvalidChatID      = 86001
	CodeChatNotFound       = 86003
	CodeChatMemberCount    = 86006
	CodeChatNotOwned       = 86008
	CodeChatOwnerNotMember = 86207
	CodeChatIDExists       = 86215
	CodeInvalidChatMember  = 86216
)

// Class is the class of failure an errcode falls in: the client's
// sentinel errors (wecom.ErrSystemBusy and the others) match by class.
type Class int

// The classes of errcodes.
const (
	// ClassNone: a caller reads the code itself.
	ClassNone Class = iota
	// ClassBusy: WeCom was busy or in conflict; trying later may work.
	ClassBusy
	// ClassRate: a rate limit; the API is blocked for the rest of the
	// window.
	ClassRate
	// ClassConcurrency: too many calls in flight at once.
	ClassConcurrency
	// ClassToken: WeCom refused the call's token (invalid, expired or
	// missing).
	ClassToken
	// ClassCredential: WeCom refused what a token is asked with (the corp
	// id, a secret, a suite, a permanent code) or a robot's webhook key.
	ClassCredential
)

// Errcode is one WeCom errcode, as the client and the mock know it.
type Errcode struct {
	// Code is the errcode.
	Code int
	// Name is the name of its constant in this package, such as
	// "CodeFrequencyLimited".
	Name string
	// Class is the class of failure it falls in.
	Class Class
	// Meaning is what it means, as WeCom's error code page and the
	// SDK's experience say.
	Meaning string
}

// Errcodes returns every errcode the package names, in a new slice the
// caller may keep or change.
func Errcodes() []Errcode {
	return slices.Concat(commonErrcodes(), contactErrcodes(), chatErrcodes(), directoryErrcodes())
}

// LookupErrcode returns the errcode code, if the package names it.
func LookupErrcode(code int) (Errcode, bool) {
	for _, e := range Errcodes() {
		if e.Code == code {
			return e, true
		}
	}
	return Errcode{}, false
}

// ClassOf returns the class of code: ClassNone for a code the package
// does not name.
func ClassOf(code int) Class {
	e, _ := LookupErrcode(code)
	return e.Class
}
