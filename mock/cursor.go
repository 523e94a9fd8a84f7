package mock

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// Cursors are opaque, as WeCom's are: a cursor names a position in one
// listing (scope: the API and what the request filtered on), so one reused
// with another filter, or made up, is refused rather than read as an offset
// somewhere else.

// cursorLen is the length of a cursor before encoding: 8 bytes of digest of
// the scope, 4 of offset.
const cursorLen = 12

// makeCursor returns the cursor of offset in the listing named by scope.
func makeCursor(scope string, offset int) string {
	var b [cursorLen]byte
	sum := sha256.Sum256([]byte(scope))
	copy(b[:8], sum[:8])
	binary.BigEndian.PutUint32(b[8:], uint32(offset))
	for i := 8; i < cursorLen; i++ {
		b[i] ^= sum[i+4] // the offset does not read as a number
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// readCursor returns the offset a cursor of scope names; ok is false for a
// cursor of another scope, or one the Server did not make. "" is offset 0.
func readCursor(scope, cursor string) (offset int, ok bool) {
	if cursor == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) != cursorLen {
		return 0, false
	}
	sum := sha256.Sum256([]byte(scope))
	for i := range 8 {
		if b[i] != sum[i] {
			return 0, false
		}
	}
	for i := 8; i < cursorLen; i++ {
		b[i] ^= sum[i+4]
	}
	return int(binary.BigEndian.Uint32(b[8:])), true
}
