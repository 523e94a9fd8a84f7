package wecom

import (
	"context"
	"errors"
	"testing"
)

// The signature of WeCom's documented example (document/path/90506).
func TestJSSDKSignatureDocumented(t *testing.T) {
	t.Parallel()
	got := jssdkSignature("sM4AOVdWfPE4DxkXGEs8VMCPGGVi4C3VM0P37wVUCFvkVAy_90u5h9nbSlYy3-Sl-HhTdfl2fzFy1AOcHKP7qg",
		"Wm3WZYTPz0wzccnW", 1414587457, "http://mp.weixin.qq.com?params=value")
	if got != "0f9de62fce790f9a083d5c99e95740ceb90c27ed" {
		t.Errorf("signature %s", got)
	}
}

// A page URL is signed without its fragment; a relative one is refused,
// and wx.agentConfig needs the app's id.
func TestJSSDKSignatureRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.respond("GET", "/cgi-bin/get_jsapi_ticket", `{"errcode":0,"errmsg":"ok","ticket":"TICKET-1","expires_in":7200}`)
	s, err := f.c.JSSDKConfig(context.Background(), "https://example.com/page?a=1#section")
	if err != nil {
		t.Fatal(err)
	}
	if want := jssdkSignature("TICKET-1", s.NonceStr, s.Timestamp, "https://example.com/page?a=1"); s.Signature != want || s.CorpID != testCorp || len(s.NonceStr) != 16 {
		t.Errorf("JSSDKConfig = %+v, want the signature of the URL without its fragment", s)
	}
	if _, err := f.c.JSSDKConfig(context.Background(), "/page"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("a relative URL: %v", err)
	}
	if _, err := f.c.JSSDKAgentConfig(context.Background(), "https://example.com/page"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("wx.agentConfig without an agent id: %v", err)
	}
}
