package catalog

import (
	"errors"
	"slices"
	"testing"
)

// TestChatKeys: appchat/send's keys name its chat and no member; a
// linked-corp message's name its users, and one to parties, tags or
// everyone lists them as uncounted.
func TestChatKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		keys KeysFunc
		body string
		want Keys
		ok   bool
	}{
		{"a chat", AppChatKeys, `{"chatid":"CHATID","msgtype":"text"}`, Keys{Chat: "CHATID"}, true},
		{"no chat", AppChatKeys, `{"msgtype":"text"}`, Keys{}, false},
		{"not JSON", AppChatKeys, `chatid=1`, Keys{}, false},
		{"linked users", LinkedMessageKeys, `{"touser":["u1","ww1/u2"],"toall":0}`, Keys{Members: []string{"u1", "ww1/u2"}, Weight: 2}, true},
		{"linked party", LinkedMessageKeys, `{"touser":["u1"],"toparty":["ww1/2"]}`, Keys{Members: []string{"u1"}, Weight: 1, Uncounted: []string{"toparty"}}, true},
		{"linked tag", LinkedMessageKeys, `{"touser":["u1"],"totag":["3"]}`, Keys{Members: []string{"u1"}, Weight: 1, Uncounted: []string{"totag"}}, true},
		{"linked to all", LinkedMessageKeys, `{"toall":1}`, Keys{Weight: 1, Uncounted: []string{"toall"}}, true},
		{"linked nobody", LinkedMessageKeys, `{"touser":[]}`, Keys{}, false},
		{"linked empty id", LinkedMessageKeys, `{"touser":["u1",""]}`, Keys{}, false},
		{"linked bar string", LinkedMessageKeys, `{"touser":"u1|u2"}`, Keys{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := tc.keys(nil, []byte(tc.body))
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNoKeys)) {
				t.Fatalf("keys = %v, want ok %t or ErrNoKeys", err, tc.ok)
			}
			if k.Chat != tc.want.Chat || !slices.Equal(k.Members, tc.want.Members) || k.Resource != "" || k.Weight != tc.want.Weight || !slices.Equal(k.Uncounted, tc.want.Uncounted) {
				t.Errorf("keys = %+v, want %+v", k, tc.want)
			}
		})
	}
}
