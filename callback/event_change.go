package callback

// BatchJobEvent is the end of an asynchronous batch job (Event
// batch_job_result).
type BatchJobEvent struct {
	Header
	BatchJob struct {
		JobID   string `xml:"JobId"`
		JobType string `xml:"JobType"` // sync_user, replace_user, invite_user, replace_party
		ErrCode int    `xml:"ErrCode"`
		ErrMsg  string `xml:"ErrMsg"`
	} `xml:"BatchJob"`
}

// The ChangeTypes of a ContactEvent.
const (
	ChangeCreateUser  = "create_user"
	ChangeUpdateUser  = "update_user"
	ChangeDeleteUser  = "delete_user"
	ChangeCreateParty = "create_party"
	ChangeUpdateParty = "update_party"
	ChangeDeleteParty = "delete_party"
	ChangeUpdateTag   = "update_tag"
)

// ContactEvent is a change to the corp's contacts (Event change_contact,
// or InfoType change_contact on a suite's command URL): a member, a
// department or a tag, as ChangeType says. Only the fields of that change
// are set; an update carries only what changed.
type ContactEvent struct {
	Header
	ChangeType string `xml:"ChangeType"`

	// Members (create_user, update_user, delete_user).
	UserID         string `xml:"UserID"`
	NewUserID      string `xml:"NewUserID"` // update_user, when the userid changed
	Name           string `xml:"Name"`      // also a department's name
	Department     string `xml:"Department"`
	MainDepartment string `xml:"MainDepartment"`
	IsLeaderInDept string `xml:"IsLeaderInDept"`
	DirectLeader   string `xml:"DirectLeader"`
	Position       string `xml:"Position"`
	Mobile         string `xml:"Mobile"`
	Gender         string `xml:"Gender"`
	Email          string `xml:"Email"`
	BizMail        string `xml:"BizMail"`
	Status         string `xml:"Status"`
	Avatar         string `xml:"Avatar"`
	Alias          string `xml:"Alias"`
	Telephone      string `xml:"Telephone"`
	Address        string `xml:"Address"`

	// Departments (create_party, update_party, delete_party).
	ID       int64  `xml:"Id"`
	ParentID string `xml:"ParentId"`
	Order    int64  `xml:"Order"`

	// Tags (update_tag): the lists are comma-separated ids.
	TagID         int64  `xml:"TagId"`
	AddUserItems  string `xml:"AddUserItems"`
	DelUserItems  string `xml:"DelUserItems"`
	AddPartyItems string `xml:"AddPartyItems"`
	DelPartyItems string `xml:"DelPartyItems"`
}

// The ChangeTypes of an ExternalContactEvent.
const (
	ChangeAddExternalContact     = "add_external_contact"
	ChangeEditExternalContact    = "edit_external_contact"
	ChangeAddHalfExternalContact = "add_half_external_contact"
	ChangeDelExternalContact     = "del_external_contact"
	ChangeDelFollowUser          = "del_follow_user"
	ChangeTransferFail           = "transfer_fail"
)

// ExternalContactEvent is a change between a member and a customer (Event
// or InfoType change_external_contact), as ChangeType says.
type ExternalContactEvent struct {
	Header
	ChangeType     string `xml:"ChangeType"`
	UserID         string `xml:"UserID"`
	ExternalUserID string `xml:"ExternalUserID"`
	// State is the state of the contact way the customer came through.
	State string `xml:"State"`
	// WelcomeCode (add_external_contact, add_half_external_contact) lets
	// the app send a welcome message, within 20 seconds.
	WelcomeCode string `xml:"WelcomeCode"`
	// Source (del_external_contact) is DELETE_BY_TRANSFER when the
	// customer was moved to another member.
	Source string `xml:"Source"`
	// FailReason (transfer_fail) is customer_refused or
	// customer_limit_exceed.
	FailReason string `xml:"FailReason"`
}

// ExternalChatEvent is a change to a customer group chat (Event or
// InfoType change_external_chat; ChangeType create, update or dismiss).
type ExternalChatEvent struct {
	Header
	ChangeType   string `xml:"ChangeType"`
	ChatID       string `xml:"ChatId"`
	UpdateDetail string `xml:"UpdateDetail"` // add_member, del_member, change_owner, …
	JoinScene    int    `xml:"JoinScene"`
	QuitScene    int    `xml:"QuitScene"`
	MemChangeCnt int    `xml:"MemChangeCnt"`
	// MemChangeList holds the userids or external_userids who joined or left.
	MemChangeList []string `xml:"MemChangeList>Item"`
	LastMemVer    string   `xml:"LastMemVer"`
	CurMemVer     string   `xml:"CurMemVer"`
}

// ExternalTagEvent is a change to a customer tag or tag group (Event or
// InfoType change_external_tag; ChangeType create, update, delete or
// shuffle).
type ExternalTagEvent struct {
	Header
	ChangeType string `xml:"ChangeType"`
	ID         string `xml:"Id"`
	TagType    string `xml:"TagType"` // tag or tag_group
	StrategyID int64  `xml:"StrategyId"`
}

// KfEvent says messages or events wait in a kf account (Event
// kf_msg_or_event): fetch them with kf/sync_msg, passing Token, outside the
// callback (a drain can take longer than WeCom's 5 s).
type KfEvent struct {
	Header
	Token    string `xml:"Token"`
	OpenKfID string `xml:"OpenKfId"`
}

// TemplateCardEvent is a click on a template card's button or a submitted
// choice (Event template_card_event).
type TemplateCardEvent struct {
	Header
	EventKey      string `xml:"EventKey"`
	TaskID        string `xml:"TaskId"`
	CardType      string `xml:"CardType"`
	ResponseCode  string `xml:"ResponseCode"`
	SelectedItems []struct {
		QuestionKey string   `xml:"QuestionKey"`
		OptionIDs   []string `xml:"OptionIds>OptionId"`
	} `xml:"SelectedItems>SelectedItem"`
}

// ApprovalEvent is a change of state of an approval made in WeCom's own
// approval app (Event sys_approval_change). The XML holds the full record
// (SpRecord, Notifyer, Comments).
type ApprovalEvent struct {
	Header
	ApprovalInfo struct {
		SpNo       string `xml:"SpNo"`
		SpName     string `xml:"SpName"`
		SpStatus   int    `xml:"SpStatus"` // 1 pending, 2 approved, 3 rejected, 4 withdrawn, …
		TemplateID string `xml:"TemplateId"`
		ApplyTime  int64  `xml:"ApplyTime"`
		Applyer    struct {
			UserID string `xml:"UserId"`
			Party  string `xml:"Party"`
		} `xml:"Applyer"`
		StatuChangeEvent int `xml:"StatuChangeEvent"`
	} `xml:"ApprovalInfo"`
}

// OpenApprovalEvent is a change of state of an approval made through the
// approval flow engine (Event open_approval_change). The XML holds the
// nodes.
type OpenApprovalEvent struct {
	Header
	ApprovalInfo struct {
		ThirdNo        string `xml:"ThirdNo"`
		OpenSpName     string `xml:"OpenSpName"`
		OpenTemplateID string `xml:"OpenTemplateId"`
		OpenSpStatus   int    `xml:"OpenSpStatus"`
		ApplyTime      int64  `xml:"ApplyTime"`
		ApplyUserName  string `xml:"ApplyUserName"`
		ApplyUserID    string `xml:"ApplyUserId"`
		ApplyUserParty string `xml:"ApplyUserParty"`
		ApproverStep   int    `xml:"approverstep"`
	} `xml:"ApprovalInfo"`
}

// SuiteTicketEvent is the suite_ticket WeCom pushes to a suite's command
// URL every 10 minutes (InfoType suite_ticket). A ticket lives 30 minutes;
// keep the newest.
type SuiteTicketEvent struct {
	Header
	SuiteTicket string `xml:"SuiteTicket"`
}

// AuthEvent is a corp authorizing a suite (InfoType create_auth: AuthCode
// gives the permanent code, once), changing its authorization (change_auth)
// or cancelling it (cancel_auth). AuthCorpID is in the Header.
type AuthEvent struct {
	Header
	AuthCode string `xml:"AuthCode"`
	State    string `xml:"State"`
}
