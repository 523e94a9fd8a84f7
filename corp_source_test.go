package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadCredentials: the file of a company's apps, and what it refuses,
// never naming a secret.
func TestReadCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     CredentialMap // nil: an error
	}{
		{"two corps, one with two apps", `[{"corp_id":"ww1","secret":"s-1"},{"corp_id":"ww2","agent_id":7,"secret":"s-27"},{"corp_id":"ww2","agent_id":8,"secret":"s-28"}]`,
			CredentialMap{{CorpID: "ww1"}: {Secret: "s-1"}, {CorpID: "ww2", AgentID: 7}: {Secret: "s-27"}, {CorpID: "ww2", AgentID: 8}: {Secret: "s-28"}}},
		{"none", `[]`, CredentialMap{}},
		{"no secret", `[{"corp_id":"ww1"}]`, nil},
		{"no corp", `[{"secret":"s-hidden"}]`, nil},
		{"a space in the corp", `[{"corp_id":"w w","secret":"s-hidden"}]`, nil},
		{"negative agent", `[{"corp_id":"ww1","agent_id":-1,"secret":"s-hidden"}]`, nil},
		{"an app twice", `[{"corp_id":"ww1","secret":"s-hidden"},{"corp_id":"ww1","secret":"s-hidden2"}]`, nil},
		{"an unknown field", `[{"corp_id":"ww1","secret":"s-hidden","sekret":"x"}]`, nil},
		{"a secret of the wrong type", `[{"corp_id":"ww1","secret":12345678}]`, nil},
		{"an object", `{"corp_id":"ww1","secret":"s-hidden"}`, nil},
		{"cut short", `[{"corp_id":"ww1","secret":"s-hidden"`, nil},
		{"two values", `[] [{"corp_id":"ww1","secret":"s-hidden"}]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCredentials(strings.NewReader(tc.in))
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidRequest) {
					t.Fatalf("got %v, %v; want ErrInvalidRequest", got, err)
				}
				if strings.Contains(err.Error(), "s-hidden") || strings.Contains(err.Error(), "12345678") {
					t.Errorf("the error names a secret: %v", err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestLoadCredentials reads a file, and names the file it cannot read.
func TestLoadCredentials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "corps.json")
	if err := os.WriteFile(path, []byte(`[{"corp_id":"ww1","agent_id":3,"secret":"s"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := m.Credentials(context.Background(), App{CorpID: "ww1", AgentID: 3})
	if err != nil || cr.Secret != "s" {
		t.Errorf("the app of the file: %+v, %v", cr, err)
	}
	if _, err := m.Credentials(context.Background(), App{CorpID: "ww1"}); !errors.Is(err, ErrUnknownApp) {
		t.Errorf("another app of the corp: %v, want ErrUnknownApp", err)
	}
	if _, err := LoadCredentials(path + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestEnvCredentials: a secret per corp, or per corp and agent, from the
// environment's variables.
func TestEnvCredentials(t *testing.T) {
	t.Parallel()
	env := map[string]string{"WECOM_SECRET_ww1": "s-1", "WECOM_SECRET_ww2_1000002": "s-2", "WECOM_SECRET_ww3": ""}
	src := EnvCredentials{Prefix: "WECOM_SECRET_", Lookup: func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}}
	ctx := context.Background()
	for _, tc := range []struct {
		app  App
		want string // "": ErrUnknownApp
	}{
		{App{CorpID: "ww1"}, "s-1"},
		{App{CorpID: "ww2", AgentID: 1000002}, "s-2"},
		{App{CorpID: "ww2"}, ""},
		{App{CorpID: "ww1", AgentID: 5}, ""},
		{App{CorpID: "ww3"}, ""},
	} {
		cr, err := src.Credentials(ctx, tc.app)
		switch {
		case tc.want == "" && !errors.Is(err, ErrUnknownApp):
			t.Errorf("%s: %+v, %v; want ErrUnknownApp", tc.app, cr, err)
		case tc.want != "" && (err != nil || cr.Secret != tc.want):
			t.Errorf("%s: %+v, %v; want secret %q", tc.app, cr, err, tc.want)
		}
	}
}

// TestEnvCredentialsDefault reads the process's environment by default.
func TestEnvCredentialsDefault(t *testing.T) {
	t.Setenv("WECOM_TEST_SECRET_wwenv", "s-env")
	cr, err := EnvCredentials{Prefix: "WECOM_TEST_SECRET_"}.Credentials(context.Background(), App{CorpID: "wwenv"})
	if err != nil || cr.Secret != "s-env" {
		t.Errorf("%+v, %v", cr, err)
	}
}

// FuzzReadCredentials: whatever the file holds, ReadCredentials returns
// well-formed apps that read back the same, or an error naming no secret
// of the file.
func FuzzReadCredentials(f *testing.F) {
	for _, s := range []string{`[]`, `[{"corp_id":"ww1","secret":"s"}]`, `[{"corp_id":"ww2","agent_id":7,"secret":"s-27"}]`,
		`[{"corp_id":"ww1","secret":"hidden-one"},{"corp_id":"ww1","secret":"hidden-two"}]`, `[{"corp_id":"w|w","secret":"x"}]`, `{`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ReadCredentials(strings.NewReader(in))
		if err != nil {
			var entries []map[string]any
			if json.Unmarshal([]byte(in), &entries) == nil {
				for _, e := range entries {
					if s, ok := e["secret"].(string); ok && len(s) >= 6 && strings.Contains(err.Error(), s) {
						t.Fatalf("the error %q names the secret %q", err, s)
					}
				}
			}
			return
		}
		type entry struct {
			CorpID  string `json:"corp_id"`
			AgentID int    `json:"agent_id"`
			Secret  string `json:"secret"`
		}
		var out []entry
		for app, cr := range m {
			if validID("corp id", app.CorpID) != nil || app.AgentID < 0 || cr.Secret == "" {
				t.Fatalf("a bad app read: %+v %+v", app, cr)
			}
			out = append(out, entry{app.CorpID, app.AgentID, cr.Secret})
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ReadCredentials(strings.NewReader(string(b)))
		if out == nil { // marshalled as null
			again, err = CredentialMap{}, nil
		}
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("read back: %v, %v; want %v", again, err, m)
		}
	})
}
