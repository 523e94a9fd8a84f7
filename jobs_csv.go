package wecom

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"unicode/utf8"
)

// UsersHeader returns the header row of WeCom's members' template
// (batch_user_sample.csv), the file of SyncUsers and ReplaceUsers alike
// (document/path/90980, 90981): name, userid, mobile, email, departments,
// position, gender, leader in each department, order in each department,
// alias, address, telephone, disabled, and a last column that only
// explains the one before it (0 enabled, 1 disabled).
func UsersHeader() []string {
	return []string{"姓名", "帐号", "手机号", "邮箱", "所在部门", "职位", "性别", "是否部门内领导", "排序", "别名", "地址", "座机", "禁用", "禁用项说明：(0-启用;1-禁用)"}
}

// DepartmentsHeader returns the header row of WeCom's departments' template
// (batch_party_sample.csv), the file of ReplaceDepartments
// (document/path/90982): name, id, parent id, order.
func DepartmentsHeader() []string {
	return []string{"部门名称", "部门ID", "父部门ID", "排序"}
}

// UserRow is a member as a row of the members' template. Name and UserID
// are required; an empty field is an empty cell, which SyncUsers leaves
// as it is in the directory.
type UserRow struct {
	Name     string
	UserID   string
	Mobile   string
	Email    string
	Position string
	// Departments are the member's department ids; IsLeaderInDept (0 or
	// 1) and Order, when given, hold one entry per department, in the
	// same order. Each is written joined with semicolons, as the template
	// asks.
	Departments    []int
	IsLeaderInDept []int
	Order          []int
	// Gender is written 男 or 女, as the template has it (GenderUnset: an
	// empty cell).
	Gender    Gender
	Alias     string
	Address   string
	Telephone string
	// Disabled writes 1 in the 禁用 column, else 0.
	Disabled bool
}

// DepartmentRow is a department as a row of the departments' template:
// Name, ID and ParentID are required (the root department is 1, its parent
// 0); Order 0 leaves a department's order as it is.
type DepartmentRow struct {
	Name     string
	ID       int
	ParentID int
	Order    int
}

// UsersCSV writes rows as a members' file in WeCom's template (UsersHeader
// first), for Jobs.SyncUsers and Jobs.ReplaceUsers. It refuses a row
// WeCom would: no name, a userid that is empty or over 64 bytes, leader
// flags or orders that are not one per department, or a gender that is not
// one of WeCom's.
func UsersCSV(rows ...UserRow) ([]byte, error) {
	recs := make([][]string, 0, len(rows))
	for i, r := range rows {
		rec, err := r.record(i + 1)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return writeCSV(UsersHeader(), recs)
}

// record returns the row's cells, or why row n is refused.
func (r UserRow) record(n int) ([]string, error) {
	row := "row " + strconv.Itoa(n) + " "
	gender, ok := map[Gender]string{"": "", GenderUnset: "", GenderMale: "男", GenderFemale: "女"}[r.Gender]
	switch {
	case r.UserID == "" || len(r.UserID) > MaxUserIDLen:
		return nil, invalid(row+"userid", "%d bytes, want 1 to %d", len(r.UserID), MaxUserIDLen)
	case r.Name == "" || utf8.RuneCountInString(r.Name) > 64:
		return nil, invalid(row+"name", "%s: empty or over 64 characters", r.UserID)
	case len(r.IsLeaderInDept) > 0 && len(r.IsLeaderInDept) != len(r.Departments),
		len(r.Order) > 0 && len(r.Order) != len(r.Departments):
		return nil, invalid(row+"department", "%s: leader flags and orders, when given, have one entry per department", r.UserID)
	case !ok:
		return nil, invalid(row+"gender", "%s: %q is not GenderMale, GenderFemale or GenderUnset", r.UserID, r.Gender)
	}
	disabled := "0"
	if r.Disabled {
		disabled = "1"
	}
	return []string{r.Name, r.UserID, r.Mobile, r.Email, semicolons(r.Departments), r.Position, gender,
		semicolons(r.IsLeaderInDept), semicolons(r.Order), r.Alias, r.Address, r.Telephone, disabled, ""}, nil
}

// DepartmentsCSV writes rows as a departments' file in WeCom's template
// (DepartmentsHeader first), for Jobs.ReplaceDepartments. It refuses a row
// without a name, an id that is not positive or a negative parent or
// order.
func DepartmentsCSV(rows ...DepartmentRow) ([]byte, error) {
	recs := make([][]string, 0, len(rows))
	for i, r := range rows {
		switch {
		case r.Name == "":
			return nil, invalid("row "+strconv.Itoa(i+1), "department %d has no name", r.ID)
		case r.ID <= 0 || r.ParentID < 0 || r.Order < 0:
			return nil, invalid("row "+strconv.Itoa(i+1), "id %d, parent %d, order %d: the id is positive, the others not negative", r.ID, r.ParentID, r.Order)
		}
		order := ""
		if r.Order > 0 {
			order = strconv.Itoa(r.Order)
		}
		recs = append(recs, []string{r.Name, strconv.Itoa(r.ID), strconv.Itoa(r.ParentID), order})
	}
	return writeCSV(DepartmentsHeader(), recs)
}

// writeCSV writes the header and the records, UTF-8, a line each.
func writeCSV(header []string, recs [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(recs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// semicolons joins ids with semicolons, as the template's lists are.
func semicolons(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ";")
}
