package catalog

// The caps WeCom documents on what one call takes or answers: how many ids a
// call names, how long a text may be, how many items a page holds. Each is
// declared here once, with its source; the SDK's exported limits
// (wecom.MaxBatchUsers, ...) and the mock server both read them.
//
// Lengths are in characters (Unicode code points), not bytes.

// Caps of externalcontact/get (CustomerGet, document/path/92114).
const (
	// CustomerGetFollowers is the most follow_user entries one answer
	// holds; the others come on the next pages (next_cursor).
	CustomerGetFollowers = 500
)

// Caps of externalcontact/batch/get_by_user (CustomerBatch,
// document/path/96316).
const (
	// BatchUserIDs is the most members one call names (userid_list).
	BatchUserIDs = 100
	// BatchLimit is the most customer-member pairs one call answers (the
	// greatest limit).
	BatchLimit = 100
	// BatchDefaultLimit is how many pairs a call answers when it gives no
	// limit.
	BatchDefaultLimit = 50
)

// Caps of externalcontact/remark (CustomerRemark, document/path/96317).
const (
	// RemarkLen is the longest remark.
	RemarkLen = 20
	// RemarkDescriptionLen is the longest description.
	RemarkDescriptionLen = 150
	// RemarkCompanyLen is the longest remark_company.
	RemarkCompanyLen = 20
)

// Caps of externalcontact/transfer_customer (TransferCustomer,
// document/path/92125) and externalcontact/resigned/transfer_customer
// (ResignedTransferCustomer, document/path/94081).
const (
	// TransferCustomerIDs is the most customers one call hands over
	// (external_userid).
	TransferCustomerIDs = 100
	// TransferSuccessMsgLen is the longest transfer_success_msg (on-job
	// transfers only).
	TransferSuccessMsgLen = 200
)

// Caps of externalcontact/transfer_result (TransferResult,
// document/path/94088) and externalcontact/resigned/transfer_result
// (ResignedTransferResult, document/path/94082).
const (
	// TransferResultPage is the most customers one page answers; the call
	// takes no limit, so WeCom chooses the page size up to this.
	TransferResultPage = 1000
)

// Caps of externalcontact/groupchat/list (GroupChatList,
// document/path/93414).
const (
	// GroupChatListLimit is the greatest limit: the most groups one call
	// answers. WeCom requires a limit of at least 1.
	GroupChatListLimit = 1000
	// GroupChatListOwners is the most owners one call filters on
	// (owner_filter.userid_list).
	GroupChatListOwners = 100
)

// Caps of externalcontact/groupchat/transfer (GroupChatTransfer,
// document/path/92127).
const (
	// GroupChatTransferIDs is the most groups one call hands over
	// (chat_id_list).
	GroupChatTransferIDs = 100
)

// Caps of media/upload (MediaUpload, document/path/90253 and 96484) and
// media/get (MediaGet, document/path/90254).
const (
	// MediaMinBytes: a file must be larger than this.
	MediaMinBytes = 5
	// MediaImageBytes, MediaVoiceBytes, MediaVideoBytes and MediaFileBytes
	// are the largest uploads of each type (older pages say 2 MB for
	// images).
	MediaImageBytes = 10 << 20
	MediaVoiceBytes = 2 << 20
	MediaVideoBytes = 10 << 20
	MediaFileBytes  = 20 << 20
	// MediaChunkBytes is the largest Range one media/get may ask; a file
	// larger than it fetched without Range answers 830002.
	MediaChunkBytes = 20 << 20
)

// Caps of media/uploadimg (MediaUploadImage, document/path/90256) and
// media/upload_by_url (MediaUploadByURL, document/path/96219).
const (
	// MediaUploadImageBytes is the largest image uploadimg takes (jpg or
	// png, over MediaMinBytes).
	MediaUploadImageBytes = 2 << 20
	// UploadByURLBytes is the largest file an upload_by_url job fetches.
	UploadByURLBytes = 200 << 20
	// UploadByURLScene is the one scene upload_by_url takes: material of
	// customer group welcome messages (入群欢迎语素材).
	UploadByURLScene = 1
	// UploadByURLTypeBytes, UploadByURLFilenameBytes, UploadByURLURLBytes
	// and UploadByURLMD5Bytes are the longest type, filename, url and md5
	// of a job.
	UploadByURLTypeBytes     = 32
	UploadByURLFilenameBytes = 128
	UploadByURLURLBytes      = 1024
	UploadByURLMD5Bytes      = 32
)

// Caps of the group robot's webhook/send (WebhookSend) and
// webhook/upload_media (WebhookUpload), document/path/91770.
const (
	// RobotTextBytes is the longest text content.
	RobotTextBytes = 2048
	// RobotMarkdownBytes is the longest markdown or markdown_v2 content.
	RobotMarkdownBytes = 4096
	// RobotImageBytes is the largest image, before base64.
	RobotImageBytes = 2 << 20
	// RobotArticles is the most articles of a news message.
	RobotArticles = 8
	// RobotArticleTitleBytes and RobotArticleDescriptionBytes are the
	// longest title and description of an article (WeCom cuts longer
	// ones).
	RobotArticleTitleBytes       = 128
	RobotArticleDescriptionBytes = 512
	// RobotFileBytes and RobotVoiceBytes are the largest uploads of a file
	// and of a voice (AMR, at most 60 s); both must be over MediaMinBytes.
	RobotFileBytes  = 20 << 20
	RobotVoiceBytes = 2 << 20
)

// Caps of appchat/create and appchat/update (AppChatCreate,
// document/path/90245; AppChatUpdate, document/path/90246).
const (
	// AppChatMinMembers and AppChatMaxMembers bound a chat's members
	// (userlist, the owner among them).
	AppChatMinMembers = 2
	AppChatMaxMembers = 2000
	// AppChatIDLen is the longest chatid a caller may choose (0-9, a-z,
	// A-Z).
	AppChatIDLen = 32
	// AppChatNameLen is the longest name; WeCom cuts a longer one.
	AppChatNameLen = 50
)

// Caps of linkedcorp/message/send (LinkedMessageSend,
// document/path/90250).
const (
	// LinkedMessageUsers, LinkedMessageParties and LinkedMessageTags are
	// the most members, parties and tags one message names.
	LinkedMessageUsers   = 1000
	LinkedMessageParties = 100
	LinkedMessageTags    = 100
)
