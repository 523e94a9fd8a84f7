package catalog

// commonErrcodes are the errcodes any API may answer, and those of the
// credential, media, message and robot APIs.
func commonErrcodes() []Errcode {
	return []Errcode{
		{CodeSystemBusy, "CodeSystemBusy", ClassBusy, "system busy; WeCom advises retrying at most 3 times"},
		{CodeOK, "CodeOK", ClassNone, "success"},
		{CodeDataVersionConflict, "CodeDataVersionConflict", ClassBusy, "data version conflict; retry later"},
		{CodeInvalidSecret, "CodeInvalidSecret", ClassCredential, "invalid secret (not an invalid token)"},
		{CodeInvalidMediaType, "CodeInvalidMediaType", ClassNone, "invalid media type"},
		{CodeInvalidFileSize, "CodeInvalidFileSize", ClassNone, "invalid file size"},
		{CodeInvalidMediaID, "CodeInvalidMediaID", ClassNone, "invalid media_id"},
		{CodeInvalidMsgType, "CodeInvalidMsgType", ClassNone, "invalid message type"},
		{CodeInvalidImageSize, "CodeInvalidImageSize", ClassNone, "invalid image size"},
		{CodeInvalidCorpID, "CodeInvalidCorpID", ClassCredential, "invalid corpid"},
		{CodeInvalidAccessToken, "CodeInvalidAccessToken", ClassToken, "invalid access_token"},
		{CodeInvalidOAuthCode, "CodeInvalidOAuthCode", ClassNone,
			"invalid code: a sign-in code that is unknown, used, or over its 5 minutes (auth/getuserinfo, document/path/91023)"},
		{CodeGroupChatNotFound, "CodeGroupChatNotFound", ClassNone, "no customer group chat has that chat_id"},
		{CodeInvalidAgentID, "CodeInvalidAgentID", ClassNone, "invalid agentid"},
		{CodeInvalidParam, "CodeInvalidParam", ClassNone, "a parameter is missing or invalid"},
		{CodeSecretOfOtherCorp, "CodeSecretOfOtherCorp", ClassCredential, "the secret belongs to another corp"},
		{CodeAccessTokenMissing, "CodeAccessTokenMissing", ClassToken, "access_token missing (a bug)"},
		{CodeCorpIDMissing, "CodeCorpIDMissing", ClassNone, "corpid missing"},
		{CodeSecretMissing, "CodeSecretMissing", ClassNone, "corpsecret missing"},
		{CodeUserIDMissing, "CodeUserIDMissing", ClassNone, "userid missing"},
		{CodeTagIDMissing, "CodeTagIDMissing", ClassNone, "tagid missing"},
		{CodeExternalIDMissing, "CodeExternalIDMissing", ClassNone, "external_userid missing"},
		{CodeInvalidWelcomeCode, "CodeInvalidWelcomeCode", ClassNone, "the welcome_code is invalid, expired or used"},
		{CodeAccessTokenExpired, "CodeAccessTokenExpired", ClassToken, "access_token expired"},
		{CodeRequireGET, "CodeRequireGET", ClassNone, "the API requires the GET method"},
		{CodeRequirePOST, "CodeRequirePOST", ClassNone, "the API requires the POST method"},
		{CodeEmptyMedia, "CodeEmptyMedia", ClassNone, "the uploaded media is empty"},
		{CodeEmptyContent, "CodeEmptyContent", ClassNone, "the message content is empty"},
		{CodeFrequencyLimited, "CodeFrequencyLimited", ClassRate, "call frequency over the limit; the API is blocked for the rest of the window"},
		{CodeCountLimited, "CodeCountLimited", ClassNone, "a count is over its limit (such as the corp's customer tags)"},
		{CodeConcurrencyLimited, "CodeConcurrencyLimited", ClassConcurrency, "too many calls in flight at once"},
		{CodeUserNotFound, "CodeUserNotFound", ClassNone, "no member has that userid"},
		{CodeDataFormat, "CodeDataFormat", ClassNone, "the request body is not valid JSON of the API's shape"},
		{CodeAPINotAllowed, "CodeAPINotAllowed", ClassNone, "the API is not allowed for this app"},
		{CodeNoPrivilege, "CodeNoPrivilege", ClassNone, "no privilege on the member, department or tag"},
		{CodeIPNotTrusted, "CodeIPNotTrusted", ClassNone, "the calling IP is not trusted"},
		{CodeNoSuchUserID, "CodeNoSuchUserID", ClassNone, "the userid is not in the directory"},
		{CodeInvalidResponseCode, "CodeInvalidResponseCode", ClassNone,
			"update_template_card: the response_code was never issued to the app, was used, or is over 72 hours old " +
				"(WeCom documents no code; 60140 is the one seen for an expired or used one)"},
		{CodeInvalidWebhook, "CodeInvalidWebhook", ClassCredential, "the robot's webhook key is not valid, or the robot was removed from its group"},
		{CodeTokenOfOtherApp, "CodeTokenOfOtherApp", ClassNone, "the token belongs to another app"},
		{CodeRangeRequired, "CodeRangeRequired", ClassNone, "the file is over 20 MB: download it in ranges"},
	}
}

// contactErrcodes are the errcodes of the tag, customer, transfer and
// customer group chat APIs, and of the suite and provider credentials.
func contactErrcodes() []Errcode {
	return []Errcode{
		{CodeInvalidTagID, "CodeInvalidTagID", ClassNone, "invalid tag id or tag group id"},
		{CodeAllTagUsersInvalid, "CodeAllTagUsersInvalid", ClassNone, "addtagusers: every user and party is invalid"},
		{CodeTagNameExists, "CodeTagNameExists", ClassNone, "the tag name already exists"},
		{CodeTagNameLength, "CodeTagNameLength", ClassNone, "tag name length invalid (1 to 32 characters)"},
		{CodeAllDelTagUsersInvalid, "CodeAllDelTagUsersInvalid", ClassNone, "deltagusers: every user and party is invalid"},
		{CodeTooManyCorpTags, "CodeTooManyCorpTags", ClassNone, "the corp has the maximum of 3,000 customer tags"},
		{CodeTagNotOwned, "CodeTagNotOwned", ClassNone, "the app may not operate this tag"},
		{CodeAllRecipientsInvalid, "CodeAllRecipientsInvalid", ClassNone, "every user, party and tag a message names is invalid"},
		{CodeTooManyTagUsers, "CodeTooManyTagUsers", ClassNone, "too many users or parties in one call"},
		{CodeGroupChatOwnerFilterRequired, "CodeGroupChatOwnerFilterRequired", ClassNone,
			"groupchat/list without an owner filter, for an app that sees over 1,000 members"},
		{CodeChatOwnerNotResigned, "CodeChatOwnerNotResigned", ClassNone,
			"groupchat/transfer: the group's owner has not left the corp, so the group cannot be handed over"},
		{CodeNoCustomers, "CodeNoCustomers", ClassNone, "the member has no customers (externalcontact/list)"},
		{CodeInvalidExternalUserID, "CodeInvalidExternalUserID", ClassNone, "invalid external_userid"},
		{CodeNotResigned, "CodeNotResigned", ClassNone, "the member has not resigned"},
		{CodeTakeoverFull, "CodeTakeoverFull", ClassNone, "the takeover member has the most customers allowed"},
		{CodeTransferTooOften, "CodeTransferTooOften", ClassNone,
			"the customer was transferred too often (an on-job member's customer at most twice in 90 days)"},
		{CodeTransferPending, "CodeTransferPending", ClassNone, "the customer is being transferred already"},
		{CodeSameHandover, "CodeSameHandover", ClassNone, "the handover and takeover members are the same"},
		{CodeNotFollower, "CodeNotFollower", ClassNone, "the handover member does not follow the customer"},
		{CodeInvalidAuthCode, "CodeInvalidAuthCode", ClassNone, "the auth_code of an installation is not valid (spent, or older than 10 minutes)"},
		{CodeInvalidPermanentCode, "CodeInvalidPermanentCode", ClassCredential, "the permanent_code is not the corp's (wrong, or the corp cancelled the installation)"},
		{CodeInvalidSuiteToken, "CodeInvalidSuiteToken", ClassToken, "the suite_access_token is not valid"},
		{CodeInvalidSuiteID, "CodeInvalidSuiteID", ClassCredential, "no such suite, or a wrong suite_secret"},
		{CodeInvalidSuiteTicket, "CodeInvalidSuiteTicket", ClassNone,
			"the suite_ticket is not valid (a stale one: WeCom pushes a new one every 10 minutes)"},
		{CodeSuiteTokenExpired, "CodeSuiteTokenExpired", ClassToken, "the suite_access_token expired"},
	}
}

// chatErrcodes are the errcodes of the app group chat APIs.
func chatErrcodes() []Errcode {
	return []Errcode{
		{CodeInvalidChatID, "CodeInvalidChatID", ClassNone, "invalid chatid"},
		{CodeChatNotFound, "CodeChatNotFound", ClassNone, "no app group chat has that chatid"},
		{CodeChatMemberCount, "CodeChatMemberCount", ClassNone, "a chat would have too many or too few members (2 to 2,000)"},
		{CodeChatNotOwned, "CodeChatNotOwned", ClassNone, "the chat was created by another app"},
		{CodeChatOwnerNotMember, "CodeChatOwnerNotMember", ClassNone, "the chat's owner is not among its members"},
		{CodeChatIDExists, "CodeChatIDExists", ClassNone, "a chat already has that chatid"},
		{CodeInvalidChatMember, "CodeInvalidChatMember", ClassNone,
			"a member to add is not in the directory, or one to remove is not in the chat"},
	}
}
