package wecom

import (
	"encoding/json"
	"errors"
	"net/url"
	"sort"
	"strings"
)

// minRedactLen is the shortest secret or token replaced by value (see
// redactor for why there is one).
const minRedactLen = 8

// redactKeyList names the keys whose values are credentials, longest first
// so that a key is matched whole.
const redactKeyList = "provider_access_token,suite_access_token,provider_secret," +
	"permanent_code,access_token,suite_secret,user_ticket,corpsecret,auth_code,secret,code,key"

// maxRedactDepth bounds the walk down an error chain.
const maxRedactDepth = 32

// redactor cleans every text the SDK did not write itself (WeCom's or a
// proxy's errmsg, transport errors and the URLs in them, bodies) before it
// reaches an error or a log line, in two passes:
//
//   - by value: the client's secret and every access token it has held (the
//     last maxHeldTokens), in the forms they take in a URL (query- and
//     path-escaped, escaped twice, upper- or lower-case hex) and in JSON, are
//     replaced wherever they stand as a whole token: the characters on either
//     side are not [A-Za-z0-9_-] (an escape such as %26 or \u0026 counts as a
//     separator). So a secret "s" never turns "https" into "httpREDACTED", and
//     a value inside a longer word is not one of ours.
//     Values shorter than minRedactLen are not replaced by value at all: a
//     short value is an ordinary word ("s" stands alone in "it's", "ok" or
//     "test" in any sentence), so replacing it would garble the text that
//     explains the failure; WeCom's secrets (43 characters) and tokens (64
//     and more) are far longer, and a short value is still removed where it
//     stands as a credential, by the structured pass.
//   - by structure: the value of every credential key (redactKeyList, any
//     case) in a query (k=v, up to &, a space or a quote, escaped once or
//     twice), in JSON ("k":"v", "k": "v", also escaped inside another JSON
//     string) and in "k: v" text, whatever the value is.
//
// A redactor is immutable, so safe for concurrent use. The zero value
// redacts by structure only.
type redactor struct {
	// forms of the values to replace, longest first.
	forms []string
}

// newRedactor returns a redactor of values; empty values and values shorter
// than minRedactLen are left to the structured pass.
func newRedactor(values ...string) *redactor {
	seen := make(map[string]bool)
	var forms []string
	for _, v := range values {
		if len(v) < minRedactLen {
			continue
		}
		for _, f := range valueForms(v) {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return &redactor{forms: forms}
}

// valueForms returns v as it may appear in outside text: raw, escaped for a
// URL once or twice (with upper- and lower-case hex), and escaped in JSON.
func valueForms(v string) []string {
	q := url.QueryEscape(v)
	forms := []string{v, q, url.PathEscape(v), url.QueryEscape(q), strings.ReplaceAll(q, "+", "%20")}
	for _, f := range forms[1:] {
		forms = append(forms, lowerHex(f))
	}
	if b, err := json.Marshal(v); err == nil {
		j := string(b[1 : len(b)-1])
		forms = append(forms, j, strings.ReplaceAll(j, "/", `\/`))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSuffix(sb.String(), "\n")
		forms = append(forms, j[1:len(j)-1])
	}
	return forms
}

// lowerHex lower-cases the hex digits of the %XX escapes in s.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && isHex(b[i+1]) && isHex(b[i+2]) {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
			i += 2
		}
	}
	return string(b)
}

// text returns s free of the values and of credential keys' values.
func (r *redactor) text(s string) string {
	for _, f := range r.forms {
		s = replaceWhole(s, f)
	}
	return redactStructured(s)
}

// replaceWhole replaces each occurrence of v in s that stands as a whole
// token.
func replaceWhole(s, v string) string {
	var b strings.Builder
	last, pos := 0, 0
	for {
		i := strings.Index(s[pos:], v)
		if i < 0 {
			break
		}
		i += pos
		end := i + len(v)
		if (!isWordChar(v[0]) || boundaryBefore(s, i, true)) && (!isWordChar(v[len(v)-1]) || end == len(s) || !isWordChar(s[end])) {
			b.WriteString(s[last:i])
			b.WriteString(redactedToken)
			last, pos = end, end
			continue
		}
		pos = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// boundaryBefore reports whether position i of s starts a token: it is the
// start, follows a separator, or follows an escape (%XX, \uXXXX, \n and the
// like). dash says whether '-' is a word character.
func boundaryBefore(s string, i int, dash bool) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	if !isWordChar(c) || (!dash && c == '-') {
		return true
	}
	if i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(c) {
		return true
	}
	if i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && isHex(s[i-4]) && isHex(s[i-3]) && isHex(s[i-2]) && isHex(c) {
		return true
	}
	return i >= 2 && s[i-2] == '\\' && strings.IndexByte("nrtbf", c) >= 0
}

// redactStructured replaces the value of every credential key in s.
func redactStructured(s string) string {
	lower := lowerString(s)
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if c := lower[i]; c != 'a' && c != 'c' && c != 'p' && c != 's' && c != 'k' && c != 'u' { // the keys' initials
			i++
			continue
		}
		vs, ve := credentialAt(s, lower, i)
		if ve <= vs {
			i++
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(redactedToken)
		last, i = ve, ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// credentialAt returns the bounds of the value when a credential key starts
// at i of s (lower is s in lower case), or an empty range.
func credentialAt(s, lower string, i int) (vs, ve int) {
	var key string
	for rest := redactKeyList; rest != "" && key == ""; {
		var k string
		k, rest, _ = strings.Cut(rest, ",")
		if strings.HasPrefix(lower[i:], k) {
			key = k
		}
	}
	if key == "" || !boundaryBefore(s, i, false) {
		return 0, 0
	}
	j := i + len(key)
	j = skipPrefix(lower, j, `\"`, `"`, `'`, "%22")
	j = skipSpaces(s, j)
	n := j
	j = skipPrefix(lower, j, "%253d", "%3d", "=", ":")
	if j == n {
		return 0, 0
	}
	j = skipSpaces(s, j)
	vs = j
	switch {
	case strings.HasPrefix(s[j:], `\"`):
		vs = j + 2
		ve = indexFrom(s, vs, `\"`)
	case strings.HasPrefix(s[j:], `"`):
		vs = j + 1
		ve = quotedEnd(s, vs)
	case strings.HasPrefix(s[j:], `'`):
		vs = j + 1
		ve = indexFrom(s, vs, `'`)
	case strings.HasPrefix(lower[j:], "%22"):
		vs = j + 3
		ve = indexFrom(lower, vs, "%22")
	default:
		ve = bareEnd(s, vs)
	}
	return vs, ve
}

// quotedEnd returns where the JSON string starting at i ends (its closing
// quote, or the end of s).
func quotedEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '"':
			return i
		case '\\':
			i++
		}
		i++
	}
	return len(s)
}

// bareEnd returns where an unquoted value starting at i ends: at a space, a
// quote, a delimiter, a backslash escape other than \/, or an escaped
// (once or twice) delimiter.
func bareEnd(s string, i int) int {
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(" \t\r\n&\"',;<>()[]{}#`|", c) >= 0:
			return i
		case c == '\\' && (i+1 >= len(s) || s[i+1] != '/'):
			return i
		case c == '%' && escapedDelimiter(s[i+1:]):
			return i
		}
	}
	return i
}

// escapedDelimiter reports whether s, following a '%', escapes a delimiter,
// once or twice (%26, %2526).
func escapedDelimiter(s string) bool {
	if len(s) >= 4 && s[:2] == "25" {
		s = s[2:]
	}
	if len(s) < 2 || !isHex(s[0]) || !isHex(s[1]) {
		return false
	}
	switch strings.ToUpper(s[:2]) {
	case "09", "0A", "0D", "20", "22", "23", "26", "27", "2C", "3B", "3C", "3E", "5C":
		return true
	}
	return false
}

func skipPrefix(s string, i int, prefixes ...string) int {
	for _, p := range prefixes {
		if strings.HasPrefix(s[i:], p) {
			return i + len(p)
		}
	}
	return i
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// indexFrom returns the index of sub in s at or after i, or len(s).
func indexFrom(s string, i int, sub string) int {
	if k := strings.Index(s[i:], sub); k >= 0 {
		return i + k
	}
	return len(s)
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lowerString lower-cases the ASCII letters of s, byte for byte, so that
// indexes in the result are indexes in s.
func lowerString(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] = lowerASCII(b[i])
	}
	return string(b)
}

// err returns err, or, when any text in its chain holds a value or a
// credential, an error with the same shape and clean texts: a *url.Error
// stays a *url.Error (sanitized URL, cleaned cause), the SDK's own error
// types keep their type, and any other error becomes a scrubbedError that
// unwraps to its cleaned causes, so that errors.Is and errors.As keep working
// (context.DeadlineExceeded, net.Error timeouts, *net.OpError) without the
// original text being reachable.
func (r *redactor) err(err error) error {
	return r.errDepth(err, 0)
}

func (r *redactor) errDepth(err error, depth int) error {
	if err == nil || !r.dirty(err, depth) {
		return err
	}
	if depth >= maxRedactDepth {
		return &scrubbedError{msg: r.text(err.Error()), err: err}
	}
	next := func(e error) error { return r.errDepth(e, depth+1) }
	switch e := err.(type) {
	case *url.Error:
		return &url.Error{Op: e.Op, URL: r.url(e.URL), Err: next(e.Err)}
	case *APIError:
		c := *e
		c.Message, c.Path = r.text(e.Message), r.text(e.Path)
		return &c
	case *ResponseError:
		c := *e
		c.Path, c.Err = r.text(e.Path), next(e.Err)
		return &c
	case *RateLimitError:
		c := *e
		c.Path, c.Err = r.text(e.Path), next(e.Err)
		return &c
	case *TransportError:
		c := *e
		c.Path, c.Err = r.text(e.Path), next(e.Err)
		return &c
	}
	s := &scrubbedError{msg: r.text(err.Error()), err: err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if in := u.Unwrap(); in != nil {
			s.causes = []error{next(in)}
		}
	case interface{ Unwrap() []error }:
		for _, in := range u.Unwrap() {
			if in != nil {
				s.causes = append(s.causes, next(in))
			}
		}
	}
	return s
}

// url returns the URL of a *url.Error, redacted; one that does not parse is
// replaced whole, as where its parts start and end is unknown.
func (r *redactor) url(u string) string {
	if _, err := url.Parse(u); err != nil {
		return redactedToken
	}
	return r.text(u)
}

// dirty reports whether the text of err, or of any error in its chain, or
// any URL in a *url.Error of it, holds something to redact.
func (r *redactor) dirty(err error, depth int) bool {
	if err == nil {
		return false
	}
	if s := err.Error(); r.text(s) != s {
		return true
	}
	if depth >= maxRedactDepth {
		return false
	}
	if ue, ok := err.(*url.Error); ok && r.url(ue.URL) != ue.URL {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return r.dirty(u.Unwrap(), depth+1)
	case interface{ Unwrap() []error }:
		for _, in := range u.Unwrap() {
			if r.dirty(in, depth+1) {
				return true
			}
		}
	}
	return false
}

// redactedToken replaces secrets in URLs that reach errors and logs.
const redactedToken = "REDACTED"

// scrubbedError is an error whose text held a secret or a token: it reads
// clean, unwraps to its causes cleaned the same way (so that errors.As finds
// a *url.Error, a *net.OpError or context.DeadlineExceeded in them), and
// answers errors.Is as the original did. The original, whose text held the
// secret, is never returned.
type scrubbedError struct {
	msg    string
	err    error
	causes []error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

func (e *scrubbedError) Unwrap() []error { return e.causes }
