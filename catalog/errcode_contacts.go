package catalog

// The errcodes of the directory (通讯录) APIs.
const (
	CodeContactAPIClosed       = 48009
	CodeDepartmentNotFound     = 60003
	CodeDepartmentNameExists   = 60008
	CodeUserIDExists           = 60102
	CodeMobileInvalid          = 60103
	CodeMobileExists           = 60104
	CodeEmailInvalid           = 60105
	CodeDepartmentNotEmpty     = 60006
	CodeDepartmentHasMembers   = 60005
	CodeDepartmentParentAbsent = 60004
	CodeInvalidJobID           = 40089
)

// directoryErrcodes are the errcodes of the directory's member and
// department APIs.
func directoryErrcodes() []Errcode {
	return []Errcode{
		{CodeContactAPIClosed, "CodeContactAPIClosed", ClassNone,
			"the API is closed to this caller: since 2022-08-15 the contact-sync secret, called from an IP added after that day, " +
				"may not call user/list, user/simplelist or department/list (walk user/list_id instead)"},
		{CodeDepartmentNotFound, "CodeDepartmentNotFound", ClassNone, "no department has that id"},
		{CodeDepartmentParentAbsent, "CodeDepartmentParentAbsent", ClassNone, "the parent department does not exist"},
		{CodeDepartmentHasMembers, "CodeDepartmentHasMembers", ClassNone, "the department still has members: it cannot be deleted"},
		{CodeDepartmentNotEmpty, "CodeDepartmentNotEmpty", ClassNone, "the department still has sub-departments: it cannot be deleted"},
		{CodeDepartmentNameExists, "CodeDepartmentNameExists", ClassNone, "a department of that name already exists under the parent"},
		{CodeUserIDExists, "CodeUserIDExists", ClassNone, "a member already has that userid"},
		{CodeMobileInvalid, "CodeMobileInvalid", ClassNone, "the mobile number is not valid"},
		{CodeMobileExists, "CodeMobileExists", ClassNone, "a member already has that mobile number"},
		{CodeEmailInvalid, "CodeEmailInvalid", ClassNone, "the email address is not valid"},
		{CodeInvalidJobID, "CodeInvalidJobID", ClassNone,
			"batch/getresult: no result for that jobid: it is unknown, or older than the corp's last five batch jobs, " +
				"the only ones whose results WeCom keeps"},
	}
}
