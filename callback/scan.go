package callback

import (
	"bytes"
	"encoding/xml"
	"unicode/utf8"
)

// element is a child of a flat document's root: its name and its text.
type element struct {
	name, text []byte
}

// maxFlat bounds the children scanFlat reads: more, and it gives up.
const maxFlat = 48

// flat is a document read by scanFlat: the root's children in order.
type flat struct {
	els [maxFlat]element
	n   int
}

// scanFlat reads data as the flat XML WeCom sends: a root element whose
// children hold text only (plain characters or CDATA sections), white
// space between them, nothing before or after. It is a strict subset of
// what encoding/xml reads, and where it says ok, encoding/xml reads the
// same children with the same text (FuzzScanFlat holds it to that). It
// gives up (ok false) on anything else, well-formed or not: a
// declaration, comment or directive, an attribute, a namespace prefix, a
// nested element, an entity or character reference, a carriage return, a
// non-ASCII name, a character XML does not allow, more than maxFlat
// children. The caller then reads data with encoding/xml, which decides.
//
// A child's text points into data, unless it is made of several pieces
// (plain text around a CDATA section), which are copied together.
func scanFlat(data []byte, f *flat) (ok bool) {
	rest := trimSpace(data)
	root, rest, ok := openTag(rest)
	if !ok {
		return false
	}
	f.n = 0
	for {
		rest = trimSpace(rest)
		if after, ok := closeTag(rest, root); ok {
			return len(trimSpace(after)) == 0
		}
		if f.n == maxFlat {
			return false
		}
		e := &f.els[f.n]
		if rest, ok = scanChild(rest, e); !ok {
			return false
		}
		f.n++
	}
}

// scanChild reads one child element from the start of s.
func scanChild(s []byte, e *element) (rest []byte, ok bool) {
	if len(s) > 1 && s[0] == '<' {
		if n := nameLen(s[1:]); n > 0 && len(s) > n+2 && s[n+1] == '/' && s[n+2] == '>' {
			e.name, e.text = s[1:n+1], nil
			return s[n+3:], true
		}
	}
	name, s, ok := openTag(s)
	if !ok {
		return nil, false
	}
	e.name, e.text = name, nil
	pieces := 0
	for {
		if after, ok := closeTag(s, name); ok {
			return after, true
		}
		var piece []byte
		if piece, s, ok = textPiece(s); !ok {
			return nil, false
		}
		switch pieces++; pieces {
		case 1:
			e.text = piece
		case 2:
			e.text = append(append(make([]byte, 0, len(e.text)+len(piece)), e.text...), piece...)
		default:
			e.text = append(e.text, piece...)
		}
	}
}

// textPiece reads plain text up to the next '<', or one CDATA section,
// from the start of s.
func textPiece(s []byte) (piece, rest []byte, ok bool) {
	const cdOpen, cdClose = "<![CDATA[", "]]>"
	if bytes.HasPrefix(s, []byte(cdOpen)) {
		body, rest, found := bytes.Cut(s[len(cdOpen):], []byte(cdClose))
		if !found || !plainChars(body) {
			return nil, nil, false
		}
		return body, rest, true
	}
	end := bytes.IndexByte(s, '<')
	if end <= 0 {
		return nil, nil, false
	}
	piece = s[:end]
	// Plain text may hold no reference and no "]]>"; refusing every '&'
	// and ']' is stricter, and WeCom's plain text (numbers, ids) has none.
	if bytes.ContainsAny(piece, "&]") || !plainChars(piece) {
		return nil, nil, false
	}
	return piece, s[end:], true
}

// plainChars reports whether s is UTF-8 of characters XML allows, with no
// carriage return (which encoding/xml would rewrite).
func plainChars(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r > 0xD7FF && r < 0xE000 || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += size
	}
	return true
}

// openTag reads "<name>" from the start of s.
func openTag(s []byte) (name, rest []byte, ok bool) {
	if len(s) < 3 || s[0] != '<' {
		return nil, nil, false
	}
	n := nameLen(s[1:])
	if n == 0 || len(s) < n+2 || s[n+1] != '>' {
		return nil, nil, false
	}
	return s[1 : n+1], s[n+2:], true
}

// closeTag reads "</name>" from the start of s.
func closeTag(s, name []byte) (rest []byte, ok bool) {
	n := len(name)
	if len(s) < n+3 || s[0] != '<' || s[1] != '/' || s[n+2] != '>' || !bytes.Equal(s[2:n+2], name) {
		return nil, false
	}
	return s[n+3:], true
}

// nameLen is the length of the ASCII XML name at the start of s (letters,
// digits, '_', '-', '.'; not starting with a digit, '-' or '.'), 0 if none.
func nameLen(s []byte) int {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '-' || c == '.'):
		default:
			return i
		}
		i++
	}
	return i
}

// trimSpace drops XML white space (space, tab, newline) from both ends of
// s; a carriage return is left, for the scan to give up on.
func trimSpace(s []byte) []byte {
	return bytes.Trim(s, " \t\n")
}

// encryptOf returns the text of the Encrypt element of a POST's envelope
// (<xml><ToUserName/><AgentID/><Encrypt/></xml>), pointing into body. A
// body that is not XML, or whose root holds no Encrypt child, one with
// empty text, or more than one, is refused (ErrMalformed). The envelope
// is scanned (scanFlat) and, when the scan gives up, read by encoding/xml.
func encryptOf(body []byte) ([]byte, error) {
	var f flat
	if scanFlat(body, &f) {
		var enc []byte
		found := 0
		for _, e := range f.els[:f.n] {
			if string(e.name) == "Encrypt" {
				enc, found = e.text, found+1
			}
		}
		if found == 1 && len(enc) > 0 {
			return enc, nil
		}
	}
	return readEncrypt(body)
}

// readEncrypt is encryptOf by encoding/xml.
func readEncrypt(body []byte) ([]byte, error) {
	var env struct {
		Encrypt []string `xml:"Encrypt"`
	}
	if xml.Unmarshal(body, &env) != nil || len(env.Encrypt) == 0 || env.Encrypt[0] == "" {
		return nil, fail(ErrMalformed, "body is not <xml> with an Encrypt element")
	}
	if len(env.Encrypt) > 1 {
		return nil, fail(ErrMalformed, "body has more than one Encrypt element")
	}
	return []byte(env.Encrypt[0]), nil
}
