package wecom

import (
	"errors"
	"strings"
	"testing"
)

// decode reads answers from outside: it must never panic, and must classify
// every body as success, *APIError or *ResponseError.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"errcode":0,"errmsg":"ok","invalidlist":"a|b","invalidparty":[1]}`,
		`{"errcode":45033,"errmsg":"api concurrent out of limit"}`,
		`{"invalidlist":""}`, `{}`, `{not json`, `[]`, `null`, `{"errcode":"1"}`, `{"errcode":1e40}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var out tagMembersAnswer
		err := decode("/p", raw, &out)
		var ae *APIError
		var re *ResponseError
		if err != nil && !errors.As(err, &ae) && !errors.As(err, &re) {
			t.Fatalf("decode(%q) = %T %v", raw, err, err)
		}
		if ae != nil && ae.Code == 0 {
			t.Fatalf("decode(%q): an APIError with code 0", raw)
		}
		for _, u := range splitInvalidList(out.InvalidList) {
			if u == "" || strings.Contains(u, "|") {
				t.Fatalf("splitInvalidList(%q) gave %q", out.InvalidList, u)
			}
		}
	})
}

func TestSplitInvalidList(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{"": nil, "a": {"a"}, "a|b": {"a", "b"}, "|a||b|": {"a", "b"}, " a | b ": {"a", "b"}}
	for in, want := range cases {
		got := splitInvalidList(in)
		if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != len(want) {
			t.Errorf("splitInvalidList(%q) = %q, want %q", in, got, want)
		}
	}
}
