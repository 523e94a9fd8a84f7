package callback_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/callback"
)

// The example of WeCom's document/path/91144 and its sample code
// (WXBizMsgCrypt): token, EncodingAESKey and corp id, a URL check and a
// message.
const (
	docToken  = "QDG6eK"
	docKey    = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	docCorpID = "wx5823bf96d3bd56c7"

	docURLSignature = "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
	docURLTimestamp = "1409659589"
	docURLNonce     = "263014780"
	docEchoStr      = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	docEchoPlain    = "1616140317555161061"

	docMsgSignature = "477715d11cdb4164915debcba66cb864d751f3e6"
	docMsgTimestamp = "1409659813"
	docMsgNonce     = "1372623149"
	docMsgEncrypt   = "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q=="
)

// docCrypto returns the Crypto of the documented example.
func docCrypto(t testing.TB) *callback.Crypto {
	t.Helper()
	c, err := callback.NewCrypto(docToken, docKey, docCorpID)
	if err != nil {
		t.Fatalf("NewCrypto: %v", err)
	}
	return c
}

func TestDocumentedVectors(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	echo, err := c.VerifyURL(docURLSignature, docURLTimestamp, docURLNonce, docEchoStr)
	if err != nil || string(echo) != docEchoPlain {
		t.Fatalf("VerifyURL = %q, %v; want %q", echo, err, docEchoPlain)
	}
	if got := c.Sign(docMsgTimestamp, docMsgNonce, docMsgEncrypt); got != docMsgSignature {
		t.Fatalf("Sign = %s, want the documented %s", got, docMsgSignature)
	}
	msg, err := c.Decrypt(docMsgSignature, docMsgTimestamp, docMsgNonce, docMsgEncrypt)
	if err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	for _, want := range []string{"<ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName>", "<Content><![CDATA[hello]]></Content>", "<MsgId>4561255354251345929</MsgId>", "<AgentID>218</AgentID>"} {
		if !bytes.Contains(msg, []byte(want)) {
			t.Errorf("decrypted message lacks %s:\n%s", want, msg)
		}
	}
}

func TestNewCryptoRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, token, key string }{
		{"empty token", "", docKey},
		{"short key", docToken, docKey[:42]},
		{"long key", docToken, docKey + "A"},
		{"empty key", docToken, ""},
		{"not base64", docToken, "!" + docKey[1:]},
	} {
		c, err := callback.NewCrypto(tc.token, tc.key, docCorpID)
		var ce *callback.Error
		if c != nil || !errors.Is(err, callback.ErrConfig) || !errors.As(err, &ce) {
			t.Errorf("%s: NewCrypto = %v, %v; want an *Error matching ErrConfig", tc.name, c, err)
			continue
		}
		if tc.key != "" && strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error quotes the key: %v", tc.name, err)
		}
	}
}

// randomKey returns a random valid EncodingAESKey.
func randomKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:43]
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for i := range 100 {
		key := randomKey(t)
		rid := []string{"", "ww0123456789", "suite-x"}[i%3]
		c, err := callback.NewCrypto("tok", key, rid)
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, i*7)
		_, _ = rand.Read(msg)
		enc, err := c.Encrypt(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decrypt(c.Sign("1700000000", "n", enc), "1700000000", "n", enc)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round trip %d: %v; got %d bytes, want %d", i, err, len(got), len(msg))
		}
	}
}

func TestEncryptReply(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	reply := []byte("<xml><Content><![CDATA[测试 this is a test]]></Content></xml>")
	out, err := c.EncryptReply(reply, docMsgTimestamp, "a<b")
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Encrypt, MsgSignature, TimeStamp, Nonce string
	}
	if err := xmlUnmarshal(out, &env); err != nil {
		t.Fatalf("reply is not XML: %v\n%s", err, out)
	}
	if env.TimeStamp != docMsgTimestamp || env.Nonce != "a<b" {
		t.Fatalf("reply timestamp %q nonce %q", env.TimeStamp, env.Nonce)
	}
	got, err := c.Decrypt(env.MsgSignature, env.TimeStamp, env.Nonce, env.Encrypt)
	if err != nil || !bytes.Equal(got, reply) {
		t.Fatalf("reply decrypts to %q, %v", got, err)
	}
	if _, err := c.EncryptReply(reply, "", "n"); !errors.Is(err, callback.ErrMalformed) {
		t.Fatalf("empty timestamp: %v", err)
	}
}

func TestDecryptRejects(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	other, _ := callback.NewCrypto(docToken, docKey, "ww-other-corp")
	anyID, _ := callback.NewCrypto(docToken, docKey, "")
	// sealed signs a ciphertext with the right token, so that the checks
	// after the signature are reached.
	sealed := func(raw []byte) (sig, enc string) {
		enc = base64.StdEncoding.EncodeToString(raw)
		return c.Sign("1", "n", enc), enc
	}
	rawDoc, _ := base64.StdEncoding.DecodeString(docMsgEncrypt)
	for _, tc := range []struct {
		name string
		c    *callback.Crypto
		sig  string
		enc  string
		want error
	}{
		{"bad signature", c, strings.Repeat("0", 40), docMsgEncrypt, callback.ErrSignature},
		{"signature uppercase", c, strings.ToUpper(docMsgSignature), docMsgEncrypt, callback.ErrSignature},
		{"empty signature", c, "", docMsgEncrypt, callback.ErrSignature},
		{"wrong receive id", other, docMsgSignature, docMsgEncrypt, callback.ErrReceiveID},
		{"not base64", c, c.Sign("1", "n", "%%%"), "%%%", callback.ErrMalformed},
		{"empty", c, c.Sign("1", "n", ""), "", callback.ErrMalformed},
	} {
		ts, nonce := "1", "n"
		if tc.enc == docMsgEncrypt {
			ts, nonce = docMsgTimestamp, docMsgNonce
		}
		if _, err := tc.c.Decrypt(tc.sig, ts, nonce, tc.enc); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Not a whole number of blocks: 1 to 47 bytes short of or past a 32-byte multiple.
	for _, n := range []int{1, 15, 16, 17, 31, 33, 48, len(rawDoc) - 1, len(rawDoc) - 16} {
		sig, enc := sealed(rawDoc[:n])
		if _, err := c.Decrypt(sig, "1", "n", enc); !errors.Is(err, callback.ErrMalformed) {
			t.Errorf("%d bytes: %v, want ErrMalformed", n, err)
		}
	}
	// The receive id is checked exactly, not as a prefix; an empty one checks nothing.
	if _, err := anyID.Decrypt(docMsgSignature, docMsgTimestamp, docMsgNonce, docMsgEncrypt); err != nil {
		t.Errorf("empty receive id: %v", err)
	}
	prefix, _ := callback.NewCrypto(docToken, docKey, docCorpID[:5])
	if _, err := prefix.Decrypt(docMsgSignature, docMsgTimestamp, docMsgNonce, docMsgEncrypt); !errors.Is(err, callback.ErrReceiveID) {
		t.Errorf("prefix receive id: %v", err)
	}
}

// TestPaddingEveryByte checks that every PKCS#7 pad byte is checked, not
// only the last. CBC decrypts a prefix of whole blocks to the prefix of the
// plaintext, so a message ending in a fake pad, encrypted and cut before
// the real pad block, decrypts to that fake pad.
func TestPaddingEveryByte(t *testing.T) {
	t.Parallel()
	c, err := callback.NewCrypto("tok", randomKey(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for wrong := -1; wrong < 8; wrong++ {
		// 16 random + 4 length + 44 bytes = 64: Encrypt adds a whole block
		// of 32 pad bytes, which the cut drops.
		body := append(bytes.Repeat([]byte{'y'}, 36), bytes.Repeat([]byte{8}, 8)...)
		if wrong >= 0 {
			body[36+wrong] = 9
		}
		enc, err := c.Encrypt(body)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(enc)
		if len(raw) != 96 {
			t.Fatalf("ciphertext of %d bytes, want 96", len(raw))
		}
		cut := base64.StdEncoding.EncodeToString(raw[:64])
		_, err = c.Decrypt(c.Sign("1", "n", cut), "1", "n", cut)
		var ce *callback.Error
		if !errors.As(err, &ce) || !errors.Is(err, callback.ErrMalformed) {
			t.Fatalf("pad byte %d wrong: %v, want ErrMalformed", wrong, err)
		}
		// With every pad byte right the padding passes and the length
		// field (44, past the 36 bytes left) is what fails.
		want := "padding"
		if wrong < 0 {
			want = "length"
		}
		if !strings.Contains(ce.Reason, want) {
			t.Errorf("pad byte %d wrong: %q, want a failure of the %s", wrong, ce.Reason, want)
		}
	}
}

// TestWrongKey decrypts the documented message with 200 random keys (the
// right token, so the signature passes): every one is an error, none a
// panic (a peer SDK panicked in 200 of 200).
func TestWrongKey(t *testing.T) {
	t.Parallel()
	for i := range 200 {
		for _, rid := range []string{docCorpID, ""} {
			c, err := callback.NewCrypto(docToken, randomKey(t), rid)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := c.Decrypt(docMsgSignature, docMsgTimestamp, docMsgNonce, docMsgEncrypt)
			if err == nil {
				t.Fatalf("trial %d (receive id %q): wrong key decrypted to %d bytes", i, rid, len(msg))
			}
			if !errors.Is(err, callback.ErrMalformed) && !errors.Is(err, callback.ErrReceiveID) {
				t.Fatalf("trial %d: %v", i, err)
			}
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	c := docCrypto(f)
	raw, _ := base64.StdEncoding.DecodeString(docMsgEncrypt)
	f.Add(raw, false)
	f.Add(raw[:32], false)
	f.Add([]byte{}, true)
	f.Add(bytes.Repeat([]byte{32}, 64), false)
	f.Fuzz(func(t *testing.T, data []byte, asText bool) {
		enc := base64.StdEncoding.EncodeToString(data)
		if asText {
			enc = string(data)
		}
		// Signed with the right token, so the checks after the signature run.
		msg, err := c.Decrypt(c.Sign("1", "n", enc), "1", "n", enc)
		if err != nil {
			var ce *callback.Error
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if len(msg) > len(data) {
			t.Fatalf("message of %d bytes from %d bytes of input", len(msg), len(data))
		}
	})
}
