package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A sender written apart from the SDK, from WeCom's documentation of its
// message encryption (document/path/91144), to check the receiver against:
// nothing here uses the callback package.

const (
	testToken = "QDG6eK"
	testKey   = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	testCorp  = "wx5823bf96d3bd56c7"
)

// wecomSender encrypts and signs as WeCom does.
type wecomSender struct {
	token, corpID string
	key           []byte
}

func newSender(t *testing.T, token, encodingAESKey, corpID string) *wecomSender {
	t.Helper()
	// "AESKey = Base64_Decode(EncodingAESKey + "=")", 32 bytes.
	key, err := base64.StdEncoding.DecodeString(encodingAESKey + "=")
	if err != nil || len(key) != 32 {
		t.Fatalf("EncodingAESKey: %v", err)
	}
	return &wecomSender{token: token, corpID: corpID, key: key}
}

// encrypt: random(16B) + msg_len(4B, network order) + msg + receiveid,
// PKCS#7-padded to a multiple of 32 bytes, AES-256-CBC with IV = the key's
// first 16 bytes, base64.
func (s *wecomSender) encrypt(t *testing.T, msg string) string {
	t.Helper()
	var plain bytes.Buffer
	random := make([]byte, 16)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	plain.Write(random)
	_ = binary.Write(&plain, binary.BigEndian, uint32(len(msg)))
	plain.WriteString(msg)
	plain.WriteString(s.corpID)
	pad := 32 - plain.Len()%32
	plain.Write(bytes.Repeat([]byte{byte(pad)}, pad))
	block, err := aes.NewCipher(s.key)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, plain.Len())
	cipher.NewCBCEncrypter(block, s.key[:16]).CryptBlocks(out, plain.Bytes())
	return base64.StdEncoding.EncodeToString(out)
}

// signature: SHA-1 of token, timestamp, nonce and the ciphertext, sorted
// as strings and joined, in lowercase hex.
func (s *wecomSender) signature(timestamp, nonce, encrypted string) string {
	parts := []string{s.token, timestamp, nonce, encrypted}
	sort.Strings(parts)
	return fmt.Sprintf("%x", sha1.Sum([]byte(strings.Join(parts, ""))))
}

// post sends msg as WeCom posts a callback; sign may spoil the signature.
func (s *wecomSender) post(t *testing.T, base, msg string, spoil bool) int {
	t.Helper()
	enc := s.encrypt(t, msg)
	ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), "1372623149"
	sig := s.signature(ts, nonce, enc)
	if spoil {
		sig = s.signature(ts, nonce+"0", enc)
	}
	q := url.Values{"msg_signature": {sig}, "timestamp": {ts}, "nonce": {nonce}}
	body := "<xml><ToUserName><![CDATA[" + s.corpID + "]]></ToUserName><Encrypt><![CDATA[" + enc + "]]></Encrypt><AgentID><![CDATA[218]]></AgentID></xml>"
	resp, err := http.Post(base+"/any/path?"+q.Encode(), "text/xml", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestReceiver: the receiver answers WeCom's URL check with the echostr,
// prints a text message and an event posted by the sender above as JSON
// lines keyed by WeCom's element names (a retry once), and sends what it
// refuses to stderr, never stdout.
func TestReceiver(t *testing.T) {
	var stdout, stderr syncBuffer
	h, err := newReceiver(config{token: testToken, aesKey: testKey, corpID: testCorp}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	s := newSender(t, testToken, testKey, testCorp)

	// The URL check: a GET whose echostr is encrypted and signed.
	echo := s.encrypt(t, "1616140317555161061")
	ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), "1597212914"
	q := url.Values{"msg_signature": {s.signature(ts, nonce, echo)}, "timestamp": {ts}, "nonce": {nonce}, "echostr": {echo}}
	resp, err := http.Get(hs.URL + "/wecom?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "1616140317555161061" {
		t.Errorf("URL check: %d %q, want 200 and the echostr", resp.StatusCode, got)
	}

	now := strconv.FormatInt(time.Now().Unix(), 10)
	text := `<xml><ToUserName><![CDATA[` + testCorp + `]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>` + now +
		`</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[this is a test]]></Content><MsgId>1234567890123456</MsgId><AgentID>218</AgentID></xml>`
	event := `<xml><ToUserName><![CDATA[` + testCorp + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>` + now +
		`</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_contact]]></Event><ChangeType>update_tag</ChangeType>` +
		`<TagId>1</TagId><AddUserItems><![CDATA[zhangsan,lisi]]></AddUserItems></xml>`
	for i, msg := range []string{text, text, event} { // the text twice: a retry
		if code := s.post(t, hs.URL, msg, false); code != 200 {
			t.Fatalf("post %d: HTTP %d; stderr:\n%s", i, code, stderr.String())
		}
	}
	if code := s.post(t, hs.URL, text, true); code != http.StatusForbidden {
		t.Errorf("bad signature: HTTP %d, want 403", code)
	}

	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	want := []map[string]any{
		{"ToUserName": testCorp, "FromUserName": "zhangsan", "CreateTime": now, "MsgType": "text", "Content": "this is a test", "MsgId": "1234567890123456", "AgentID": "218"},
		{"ToUserName": testCorp, "FromUserName": "sys", "CreateTime": now, "MsgType": "event", "Event": "change_contact", "ChangeType": "update_tag", "TagId": "1", "AddUserItems": "zhangsan,lisi"},
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(want), stdout.String())
	}
	for i, line := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		if fmt.Sprint(obj) != fmt.Sprint(want[i]) {
			t.Errorf("line %d: %v, want %v", i, obj, want[i])
		}
	}
	if !strings.Contains(stderr.String(), "status=403") || !strings.Contains(stderr.String(), "bad signature") {
		t.Errorf("stderr does not tell of the bad signature:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), testToken) || strings.Contains(stderr.String(), testKey) {
		t.Errorf("stderr quotes a secret:\n%s", stderr.String())
	}
}

// TestJSONLine: nested elements are objects, repeated ones arrays.
func TestJSONLine(t *testing.T) {
	in := `<xml><MsgType>event</MsgType><SelectedItems><SelectedItem><QuestionKey>q1</QuestionKey></SelectedItem>` +
		`<SelectedItem><QuestionKey>q2</QuestionKey></SelectedItem></SelectedItems><Empty></Empty></xml>`
	got, err := jsonLine([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Empty":"","MsgType":"event","SelectedItems":{"SelectedItem":[{"QuestionKey":"q1"},{"QuestionKey":"q2"}]}}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := jsonLine([]byte("<xml><open>")); err == nil {
		t.Error("truncated XML: no error")
	}
}
