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
		err := decode("/p", false, raw, &out)
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

// The redactor: a secret or a token (at least minRedactLen long) placed
// anywhere as a whole token, in any of its forms, never survives; a short
// secret is removed where it is a credential's value; text that holds neither
// a value nor a credential key comes out unchanged.
func FuzzRedact(f *testing.F) {
	f.Add(`Get "https://q/cgi-bin/gettoken?corpid=c&corpsecret=`, `": dial tcp: connection refused`, uint8(0), uint8(3))
	f.Add(`{"errmsg":"echo `, `","errcode":40014}`, uint8(2), uint8(0))
	f.Add("next=https%3A%2F%2Fq%3Fcorpsecret%3D", "%26x%3D1", uint8(1), uint8(7))
	f.Add("it's s, https", "refused", uint8(5), uint8(200))
	f.Fuzz(func(t *testing.T, a, b string, which, seps uint8) {
		r := newRedactor(longSecret, longToken, "s")
		forms := append(valueForms(longSecret), valueForms(longToken)...)
		for _, s := range []string{a, b} {
			if !holdsAny(s, forms) {
				if got := r.text(s); got != s {
					t.Fatalf("clean text changed: %q -> %q", s, got)
				}
			}
		}
		const sep = " &=\"':/,;[]{}()\n\t<>"
		v := forms[int(which)%len(forms)]
		in := a + sep[int(seps%16)%len(sep):][:1] + v + sep[int(seps/16)%len(sep):][:1] + b
		out := r.text(in)
		for _, f := range forms {
			for i := 0; ; i++ {
				k := strings.Index(out[i:], f)
				if k < 0 {
					break
				}
				i += k
				end := i + len(f)
				if (i == 0 || !isWordChar(out[i-1])) && (end == len(out) || !isWordChar(out[end])) {
					t.Fatalf("%q survives in %q (from %q)", f, out, in)
				}
			}
		}
		if holdsAny(a+b, nil) {
			return
		}
		in = a + " corpsecret=s&" + b
		if out := r.text(in); !strings.Contains(out, " corpsecret=REDACTED&") {
			t.Fatalf("short secret kept by structure: %q -> %q", in, out)
		}
	})
}

// holdsAny reports whether s holds a credential key (any case) or one of forms.
func holdsAny(s string, forms []string) bool {
	l := strings.ToLower(s)
	for _, k := range strings.Split(redactKeyList, ",") {
		if strings.Contains(l, k) {
			return true
		}
	}
	for _, f := range forms {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// contentRange reads a header from outside: it never panics, and a range
// it accepts starts at or after 0 and within its size when one is said.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/300", "bytes 200-299/*", "bytes */300", "bytes 5-1/3", "bytes -1-2/3", "", "bytes 9223372036854775807-0/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		start, total, err := contentRange(v)
		if err != nil {
			return
		}
		if start < 0 || total >= 0 && total < start {
			t.Errorf("contentRange(%q) = %d, %d", v, start, total)
		}
	})
}
