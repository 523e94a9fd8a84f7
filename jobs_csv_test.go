package wecom_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wecomkit/wecom"
)

// The header rows of WeCom's templates, as the files
// batch_user_sample.csv and batch_party_sample.csv have them (the members'
// one for syncuser and replaceuser alike; its last column only explains
// the one before it).
const (
	documentedUsersHeader       = "姓名,帐号,手机号,邮箱,所在部门,职位,性别,是否部门内领导,排序,别名,地址,座机,禁用,禁用项说明：(0-启用;1-禁用)"
	documentedDepartmentsHeader = "部门名称,部门ID,父部门ID,排序"
)

func TestUsersCSV(t *testing.T) {
	t.Parallel()
	got, err := wecom.UsersCSV(
		wecom.UserRow{Name: "张三", UserID: "zhangsan", Mobile: "13800000000", Email: "zhangsan@gzdev.com", Departments: []int{1, 2},
			Position: "产品经理", Gender: wecom.GenderMale, IsLeaderInDept: []int{0, 1}, Order: []int{0, 100},
			Alias: "Sam", Address: "广州市", Telephone: "020-123456"},
		wecom.UserRow{Name: "李四", UserID: "lisi", Departments: []int{2}, Gender: wecom.GenderFemale, Disabled: true},
		wecom.UserRow{Name: "Wang, \"Five\"", UserID: "wangwu"},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := documentedUsersHeader + "\n" +
		"张三,zhangsan,13800000000,zhangsan@gzdev.com,1;2,产品经理,男,0;1,0;100,Sam,广州市,020-123456,0,\n" +
		"李四,lisi,,,2,,女,,,,,,1,\n" +
		"\"Wang, \"\"Five\"\"\",wangwu,,,,,,,,,,,0,\n"
	if string(got) != want {
		t.Errorf("UsersCSV:\n%s\nwant:\n%s", got, want)
	}
	if h := strings.Join(wecom.UsersHeader(), ","); h != documentedUsersHeader {
		t.Errorf("UsersHeader %q, want the template's %q", h, documentedUsersHeader)
	}
	// Every row has a cell per column of the header, the gender included
	// (a peer's builder left it out and shifted every later column).
	recs, err := csv.NewReader(bytes.NewReader(got)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		if len(rec) != len(wecom.UsersHeader()) {
			t.Errorf("record %d has %d cells, want %d", i, len(rec), len(wecom.UsersHeader()))
		}
	}
	if recs[3][0] != `Wang, "Five"` {
		t.Errorf("a name with a comma and quotes reads back %q", recs[3][0])
	}
}

func TestUsersCSVRefuses(t *testing.T) {
	t.Parallel()
	for _, r := range []wecom.UserRow{
		{Name: "No id"},
		{Name: "Long", UserID: strings.Repeat("u", 65)},
		{UserID: "noname"},
		{Name: "Leader", UserID: "leader", Departments: []int{1, 2}, IsLeaderInDept: []int{1}},
		{Name: "Order", UserID: "order", Departments: []int{1}, Order: []int{1, 2}},
		{Name: "Gender", UserID: "gender", Gender: "m"},
	} {
		_, err := wecom.UsersCSV(wecom.UserRow{Name: "Fine", UserID: "fine"}, r)
		var ve *wecom.ValidationError
		if !errors.As(err, &ve) || !strings.HasPrefix(ve.Field, "row 2 ") {
			t.Errorf("%+v: err = %v, want a ValidationError of row 2", r, err)
		}
	}
}

func TestDepartmentsCSV(t *testing.T) {
	t.Parallel()
	got, err := wecom.DepartmentsCSV(
		wecom.DepartmentRow{Name: "广州研发中心", ID: 1, ParentID: 0, Order: 1},
		wecom.DepartmentRow{Name: "测试组", ID: 2, ParentID: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := documentedDepartmentsHeader + "\n广州研发中心,1,0,1\n测试组,2,1,\n"
	if string(got) != want {
		t.Errorf("DepartmentsCSV:\n%s\nwant:\n%s", got, want)
	}
	if h := wecom.DepartmentsHeader(); !slices.Equal(h, strings.Split(documentedDepartmentsHeader, ",")) {
		t.Errorf("DepartmentsHeader %q, want the template's", h)
	}
	for _, r := range []wecom.DepartmentRow{{ID: 2, ParentID: 1}, {Name: "x", ParentID: 1}, {Name: "x", ID: 2, ParentID: -1}, {Name: "x", ID: 2, Order: -1}} {
		if _, err := wecom.DepartmentsCSV(r); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", r, err)
		}
	}
}
