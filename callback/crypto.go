package callback

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"slices"
	"strconv"
)

// padBlock is the block WeCom pads plaintext to with PKCS#7: 32 bytes, not
// AES's 16 (document 91144).
const padBlock = 32

// maxMessage bounds a message Encrypt accepts: the length field is 32 bits.
const maxMessage = 1<<31 - 1

// Crypto is WeCom's message encryption (document/path/91144) for one
// receiver: a token, an EncodingAESKey and the receive id the messages must
// name. It verifies a callback URL, decrypts callbacks and encrypts passive
// replies. A Crypto is safe for concurrent use and needs no wecom.Client.
//
// The receive id is what WeCom appends to every plaintext, and whom the
// message is for:
//   - a corp's own app: the corp id (ww…);
//   - a suite's command URL (suite_ticket, create_auth, …): the POSTs carry
//     the suite id, the URL check the provider's corp id (a Handler takes
//     it with WithURLCheckReceiveID);
//   - a third-party app's data callback URL: the URL check carries the
//     provider's corp id, the POSTs the authorizing corp's id (a Handler
//     takes them with WithReceiveIDs or WithReceiveIDFunc);
//   - some apps of a personal subject: empty.
//
// An empty receive id means "not checked": any receive id is accepted. Give
// one whenever you know it; the check is what stops a message encrypted for
// another receiver that shares your token and key.
type Crypto struct {
	token     string
	key       []byte // 32 bytes; its first 16 are the IV
	block     cipher.Block
	receiveID string
}

// NewCrypto returns the Crypto of an app or suite: its callback token, its
// 43-character EncodingAESKey and the receive id to check (see Crypto). A
// bad key or an empty token is an *Error matching ErrConfig that quotes
// neither.
func NewCrypto(token, encodingAESKey, receiveID string) (*Crypto, error) {
	if token == "" {
		return nil, fail(ErrConfig, "empty token")
	}
	if len(encodingAESKey) != 43 {
		return nil, fail(ErrConfig, "EncodingAESKey must be 43 characters, got "+strconv.Itoa(len(encodingAESKey)))
	}
	key, err := base64.StdEncoding.DecodeString(encodingAESKey + "=")
	if err != nil || len(key) != 32 {
		return nil, fail(ErrConfig, "EncodingAESKey is not base64 of 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil { // cannot happen with 32 bytes; kept as an error, not a panic
		return nil, fail(ErrConfig, "EncodingAESKey: "+err.Error())
	}
	return &Crypto{token: token, key: key, block: block, receiveID: receiveID}, nil
}

// ReceiveID returns the receive id this Crypto checks ("" when it checks none).
func (c *Crypto) ReceiveID() string { return c.receiveID }

// namespace returns a short hash naming this receiver (its receive id,
// token and key) in a shared Deduper: 12 hex digits of a SHA-256, from
// which none of them can be recovered.
func (c *Crypto) namespace() string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte("wecom callback dedupe"), []byte(c.receiveID), []byte(c.token), c.key} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// Sign returns msg_signature for a timestamp, a nonce and a ciphertext: the
// lowercase hex SHA-1 of the token, timestamp, nonce and ciphertext sorted
// and joined.
func (c *Crypto) Sign(timestamp, nonce, encrypted string) string {
	sig := c.sign(timestamp, nonce, []byte(encrypted))
	return string(sig[:])
}

// sign is Sign into an array: the four parts joined in order in one
// buffer (on the stack for a ciphertext of a kilobyte or two) and hashed.
func (c *Crypto) sign(timestamp, nonce string, encrypted []byte) [2 * sha1.Size]byte {
	parts := [3]string{c.token, timestamp, nonce}
	slices.Sort(parts[:])
	var stack [2048]byte
	joined := stack[:0]
	placed := false
	for _, p := range parts {
		if !placed && string(encrypted) < p {
			joined, placed = append(joined, encrypted...), true
		}
		joined = append(joined, p...)
	}
	if !placed {
		joined = append(joined, encrypted...)
	}
	sum := sha1.Sum(joined)
	var sig [2 * sha1.Size]byte
	hex.Encode(sig[:], sum[:])
	return sig
}

// verify compares signature with the expected one in constant time.
func (c *Crypto) verify(signature, timestamp, nonce string, encrypted []byte) error {
	want := c.sign(timestamp, nonce, encrypted)
	if len(signature) != len(want) {
		return fail(ErrSignature, "msg_signature does not match")
	}
	var diff byte
	for i := range want {
		diff |= want[i] ^ signature[i]
	}
	if subtle.ConstantTimeByteEq(diff, 0) != 1 {
		return fail(ErrSignature, "msg_signature does not match")
	}
	return nil
}

// VerifyURL answers WeCom's URL check: it verifies the signature over
// echostr, then decrypts it. The result is what the URL must answer, as is
// (no quotes, no newline). echostr is the query parameter already
// URL-decoded.
func (c *Crypto) VerifyURL(signature, timestamp, nonce, echostr string) ([]byte, error) {
	return c.Decrypt(signature, timestamp, nonce, echostr)
}

// Decrypt checks msg_signature in constant time and only then decrypts
// encrypted (the base64 of the Encrypt element), checking the block size,
// every PKCS#7 pad byte, the length field and the receive id. It returns
// the message: for a POST callback, its XML. Every failure is an *Error
// matching ErrSignature, ErrMalformed or ErrReceiveID; none panics.
func (c *Crypto) Decrypt(signature, timestamp, nonce, encrypted string) ([]byte, error) {
	return c.decryptFor(signature, timestamp, nonce, []byte(encrypted), c.accepts)
}

// decryptFor is Decrypt checking the receive id with accept instead.
// encrypted is only read.
func (c *Crypto) decryptFor(signature, timestamp, nonce string, encrypted []byte, accept func([]byte) bool) ([]byte, error) {
	if err := c.verify(signature, timestamp, nonce, encrypted); err != nil {
		return nil, err
	}
	return c.open(encrypted, accept)
}

// accepts reports whether a message for receive id rid is this Crypto's.
func (c *Crypto) accepts(rid []byte) bool { return c.receiveID == "" || string(rid) == c.receiveID }

// open decrypts a ciphertext whose signature was checked, into a new
// buffer the message returned points into. Its checks need not take
// constant time: only a holder of the token can make a ciphertext reach
// them, so they are no padding oracle to anyone else.
func (c *Crypto) open(encrypted []byte, accept func([]byte) bool) ([]byte, error) {
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(encrypted)))
	n, err := base64.StdEncoding.Decode(buf, encrypted)
	if err != nil {
		return nil, fail(ErrMalformed, "ciphertext is not base64")
	}
	buf = buf[:n]
	// WeCom pads to 32 bytes, so its ciphertexts are whole 32-byte blocks;
	// anything else (including a partial AES block, which CBC cannot take)
	// was not made by WeCom.
	if len(buf) == 0 || len(buf)%padBlock != 0 {
		return nil, fail(ErrMalformed, "ciphertext is not a whole number of 32-byte blocks")
	}
	c.decryptCBC(buf)
	pad := int(buf[len(buf)-1])
	if pad < 1 || pad > padBlock {
		return nil, fail(ErrMalformed, "bad padding")
	}
	for _, b := range buf[len(buf)-pad:] {
		if int(b) != pad {
			return nil, fail(ErrMalformed, "bad padding")
		}
	}
	plain := buf[:len(buf)-pad]
	const head = 16 + 4 // random bytes, then the length
	if len(plain) < head {
		return nil, fail(ErrMalformed, "plaintext shorter than its header")
	}
	size := uint64(binary.BigEndian.Uint32(plain[16:head]))
	if size > uint64(len(plain)-head) {
		return nil, fail(ErrMalformed, "length field past the end")
	}
	msg, rid := plain[head:head+int(size)], plain[head+int(size):]
	if !accept(rid) {
		return nil, fail(ErrReceiveID, "message is for another receiver")
	}
	return msg, nil
}

// decryptCBC decrypts buf (whole AES blocks) in place with AES-256-CBC,
// the IV the key's first 16 bytes: from the last block back, so that each
// block's predecessor is still ciphertext when it is needed, and without
// the allocations of a cipher.BlockMode.
func (c *Crypto) decryptCBC(buf []byte) {
	for i := len(buf) - aes.BlockSize; i >= 0; i -= aes.BlockSize {
		b := buf[i : i+aes.BlockSize]
		c.block.Decrypt(b, b)
		prev := c.key[:aes.BlockSize]
		if i > 0 {
			prev = buf[i-aes.BlockSize : i]
		}
		subtle.XORBytes(b, b, prev)
	}
}

// Encrypt encrypts msg as WeCom does for this Crypto's receive id: 16
// random bytes from crypto/rand, the length, msg and the receive id, padded
// to 32 bytes, AES-256-CBC, base64. A test can post what it returns (with
// Sign) to a Handler, as WeCom would.
func (c *Crypto) Encrypt(msg []byte) (string, error) {
	if len(msg) > maxMessage {
		return "", fail(ErrMalformed, "message too long")
	}
	n := 16 + 4 + len(msg) + len(c.receiveID)
	pad := padBlock - n%padBlock
	buf := make([]byte, n+pad)
	if _, err := rand.Read(buf[:16]); err != nil {
		return "", fail(ErrConfig, "random bytes: "+err.Error())
	}
	binary.BigEndian.PutUint32(buf[16:20], uint32(len(msg)))
	copy(buf[20:], msg)
	copy(buf[20+len(msg):], c.receiveID)
	for i := n; i < len(buf); i++ {
		buf[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(c.block, c.key[:aes.BlockSize]).CryptBlocks(buf, buf)
	return base64.StdEncoding.EncodeToString(buf), nil
}

// EncryptReply encrypts a passive reply (msg is the plaintext reply XML,
// such as <xml><ToUserName>…</xml>) and returns the XML WeCom expects as
// the answer: <xml><Encrypt/><MsgSignature/><TimeStamp/><Nonce/></xml>,
// signed with timestamp and nonce (those of the request answered, or new
// ones).
func (c *Crypto) EncryptReply(msg []byte, timestamp, nonce string) ([]byte, error) {
	if timestamp == "" || nonce == "" {
		return nil, fail(ErrMalformed, "empty timestamp or nonce")
	}
	enc, err := c.Encrypt(msg)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(enc) + 160)
	b.WriteString("<xml><Encrypt><![CDATA[")
	b.WriteString(enc) // base64: nothing to escape
	b.WriteString("]]></Encrypt><MsgSignature><![CDATA[")
	b.WriteString(c.Sign(timestamp, nonce, enc)) // hex
	b.WriteString("]]></MsgSignature><TimeStamp>")
	_ = xml.EscapeText(&b, []byte(timestamp)) // a bytes.Buffer does not fail
	b.WriteString("</TimeStamp><Nonce>")
	_ = xml.EscapeText(&b, []byte(nonce))
	b.WriteString("</Nonce></xml>")
	return b.Bytes(), nil
}
