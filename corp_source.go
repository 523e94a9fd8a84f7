// Where a Registry finds a corp's credentials: the CredentialSource
// interface, and the sources for a company with several corps (a map, the
// environment, a file).

package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// App names one app of one corp: what a Registry keeps a client for.
type App struct {
	// CorpID is the corp's id (for a service provider, the authorizing
	// corp's).
	CorpID string
	// AgentID is the app's agent id; 0 names the corp's one app, for a
	// source that keeps one per corp.
	AgentID int
}

// String returns the app as "corpid/agentid", or the corp id alone for
// AgentID 0. A corp id and an agent id are no secrets.
func (a App) String() string {
	if a.AgentID == 0 {
		return a.CorpID
	}
	return a.CorpID + "/" + strconv.Itoa(a.AgentID)
}

// Credentials are what a client of one app needs to get its access
// tokens: the app's secret, for gettoken, or a TokenSource.
type Credentials struct {
	// Secret is the app's secret (empty with Source).
	Secret string
	// Source hands out the app's access tokens instead of gettoken; the
	// client keeps them in the registry's token store, shared by the fleet,
	// as it keeps those of gettoken.
	Source TokenSource
	// AgentID is the app's agent id, when the App asked for does not say
	// it (AgentID 0). A Source needs one: it names the app's tokens in the
	// store.
	AgentID int
}

// CredentialSource finds the credentials of an app, for a Registry that
// builds the app's client on first use. It is asked once per client built:
// again only after the registry dropped the client (idle, or Drop). It
// returns an error matching ErrUnknownApp for an app it does not know.
// Implementations are safe for concurrent use.
//
// A service provider (服务商) serving authorizing corps plugs its
// permanent codes in here: its source looks up the corp's permanent code
// and agent id (kept when create_auth came) and returns Credentials whose
// Source fetches the corp's token with service/get_corp_token (the suite
// token, the corp id and the permanent code). The registry's clients then
// keep those corp tokens as they keep access tokens: once per corp and app
// for the whole fleet, in the shared token store, lazily, refreshed ahead
// of expiry and refetched when WeCom refuses one.
type CredentialSource interface {
	Credentials(ctx context.Context, app App) (Credentials, error)
}

// CredentialSourceFunc adapts a function to CredentialSource.
type CredentialSourceFunc func(ctx context.Context, app App) (Credentials, error)

// Credentials calls f.
func (f CredentialSourceFunc) Credentials(ctx context.Context, app App) (Credentials, error) {
	return f(ctx, app)
}

// ErrUnknownApp matches the errors of a CredentialSource that does not
// know the app asked for.
var ErrUnknownApp = errors.New("wecom: no credentials for the app")

// CredentialMap is a static CredentialSource: the credentials of each app.
type CredentialMap map[App]Credentials

// Credentials implements CredentialSource.
func (m CredentialMap) Credentials(_ context.Context, app App) (Credentials, error) {
	cr, ok := m[app]
	if !ok {
		return Credentials{}, fmt.Errorf("%w %s", ErrUnknownApp, app)
	}
	return cr, nil
}

// EnvCredentials is a CredentialSource reading each app's secret from the
// environment, when its client is built: the variable named Prefix, the
// corp id, and for an app with an agent id an underscore and that id
// ("WECOM_SECRET_ww0a1b2c3d_1000002" with Prefix "WECOM_SECRET_").
type EnvCredentials struct {
	// Prefix starts the name of every variable.
	Prefix string
	// Lookup reads a variable (default os.LookupEnv).
	Lookup func(name string) (string, bool)
}

// Credentials implements CredentialSource.
func (e EnvCredentials) Credentials(_ context.Context, app App) (Credentials, error) {
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	name := e.Prefix + app.CorpID
	if app.AgentID != 0 {
		name += "_" + strconv.Itoa(app.AgentID)
	}
	secret, ok := lookup(name)
	if !ok || secret == "" {
		return Credentials{}, fmt.Errorf("%w %s: $%s is not set", ErrUnknownApp, app, name)
	}
	return Credentials{Secret: secret}, nil
}

// maxCredentialFile bounds the file ReadCredentials reads (a million apps'
// worth of lines is far less).
const maxCredentialFile = 64 << 20

// ReadCredentials reads the apps of a company with several corps from r,
// a JSON array of {"corp_id": "ww…", "agent_id": 1000002, "secret": "…"}
// (agent_id may be left out: the corp's one app). Every entry needs a
// corp id and a secret, and names an app once. Its errors never hold a
// secret.
func ReadCredentials(r io.Reader) (CredentialMap, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCredentialFile+1))
	if err != nil {
		return nil, fmt.Errorf("wecom: reading credentials: %w", err)
	}
	if len(data) > maxCredentialFile {
		return nil, invalid("credentials", "more than %d bytes", maxCredentialFile)
	}
	var entries []struct {
		CorpID  string `json:"corp_id"`
		AgentID int    `json:"agent_id"`
		Secret  string `json:"secret"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return nil, invalid("credentials", "not a JSON array of {corp_id, agent_id, secret}: %s", jsonWhere(err))
	}
	if dec.More() {
		return nil, invalid("credentials", "more than one JSON value")
	}
	m := make(CredentialMap, len(entries))
	for i, e := range entries {
		app := App{CorpID: e.CorpID, AgentID: e.AgentID}
		switch _, dup := m[app]; {
		case validID("corp id", e.CorpID) != nil:
			return nil, invalid("credentials", "entry %d: corp id %q is empty or holds a space, brace or bar", i, e.CorpID)
		case e.AgentID < 0:
			return nil, invalid("credentials", "entry %d (%s): negative agent id", i, e.CorpID)
		case e.Secret == "":
			return nil, invalid("credentials", "entry %d (%s): no secret", i, app)
		case dup:
			return nil, invalid("credentials", "entry %d: app %s named twice", i, app)
		}
		m[app] = Credentials{Secret: e.Secret}
	}
	return m, nil
}

// jsonWhere says where a JSON decoding error is, without the text
// decoded, which may hold a secret.
func jsonWhere(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q holds a JSON %s at byte %d", typ.Field, typ.Value, typ.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return "a field other than corp_id, agent_id and secret"
	}
	return "not the expected shape"
}

// LoadCredentials reads the file at path with ReadCredentials.
func LoadCredentials(path string) (CredentialMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wecom: credentials: %w", err)
	}
	defer f.Close()
	m, err := ReadCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
