package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Keys is what one call counts against the rules that count per resource,
// per member or in units: read from the call's request by its endpoint's
// KeysFunc, the same function for the client, Client.Do and the mock.
type Keys struct {
	// Resource is what ScopeResource, ScopeShared and ScopeRobot rules count
	// per (a customer, a robot); empty when the call names none.
	Resource string
	// Members are the members a call reaches, each counted by the
	// ScopeAppMember and ScopeMember rules.
	Members []string
	// Chat is the app group chat a call sends to (appchat/send): the
	// request names the chat, not its members, so Members is empty and the
	// members counted are the chat's, as whoever knows them supplies them
	// (the client's AppChats service, the mock's chats), with as many
	// units as there are members.
	Chat string
	// Weight is the units a call counts against weighted rules (0: 1).
	Weight int
	// Uncounted names the recipients the request reaches that no limit
	// can count from it ("@all", "toparty", "totag"): members WeCom finds
	// behind them are not counted by the per-member rules.
	Uncounted []string
}

// A KeysFunc reads a call's Keys from its request: the query and, for a
// POST, the JSON body. It fails when the request does not say what the
// endpoint's rules count (a customer edit without the customer): such a
// call is never sent.
type KeysFunc func(query url.Values, body []byte) (Keys, error)

// ErrNoKeys matches the errors of a KeysFunc: the request does not say what
// the endpoint's rules count.
var ErrNoKeys = errors.New("the request does not say what its limits count")

// CustomerKeys reads the customer a customer edit names (userid and
// external_userid of its body): the resource of mark_tag and remark.
func CustomerKeys(_ url.Values, body []byte) (Keys, error) {
	var c struct {
		UserID         string `json:"userid"`
		ExternalUserID string `json:"external_userid"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return Keys{}, fmt.Errorf("%w: the customer: %v", ErrNoKeys, err)
	}
	if c.UserID == "" || c.ExternalUserID == "" {
		return Keys{}, fmt.Errorf("%w: the customer: userid and external_userid are required", ErrNoKeys)
	}
	return Keys{Resource: CustomerResource(c.UserID, c.ExternalUserID)}, nil
}

// CustomerResource names the customer externalUserID of member userID as a
// resource.
func CustomerResource(userID, externalUserID string) string {
	return userID + "|" + externalUserID
}

// NeedsKeys reports whether r counts what only a request says: a
// resource, members, or units.
func (r Rule) NeedsKeys() bool {
	return r.Scope.needsResource() || r.Scope == ScopeRobot || r.Scope.countsMembers() || r.Weighted
}

// NeedsKeys reports whether a call of e must say what its rules count, and
// returns the first rule that needs it.
func (e Endpoint) NeedsKeys() (Rule, bool) {
	for _, r := range e.Rules {
		if r.NeedsKeys() {
			return r, true
		}
	}
	return Rule{}, false
}

// Body is how an endpoint's request body is encoded.
type Body int

const (
	// JSONBody: a JSON object (the default).
	JSONBody Body = iota
	// MultipartBody: a multipart/form-data upload of one file (media/upload).
	MultipartBody
)

// Answer is how an endpoint answers a success.
type Answer int

const (
	// JSONAnswer: a JSON object with errcode 0 (the default).
	JSONAnswer Answer = iota
	// FileAnswer: the bytes of a file, streamed, with Range (media/get);
	// an error still answers JSON.
	FileAnswer
)

// MediaKeys reads the media_id of a download's query: the resource of
// media/get, which WeCom refuses with 45033 when fetched again while it
// serves it.
func MediaKeys(q url.Values, _ []byte) (Keys, error) {
	id := q.Get("media_id")
	if id == "" {
		return Keys{}, fmt.Errorf("%w: media_id is required", ErrNoKeys)
	}
	return Keys{Resource: id}, nil
}

// MessageKeys reads the members an app message reaches: the userids of its
// touser ("a|b|c"), its Weight their number (at least 1). A message to
// every member ("@all"), or to parties or tags, reaches members the request
// does not name: they are listed in Uncounted, and only the users named
// are counted.
func MessageKeys(_ url.Values, body []byte) (Keys, error) {
	var m struct {
		ToUser  string `json:"touser"`
		ToParty string `json:"toparty"`
		ToTag   string `json:"totag"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Keys{}, fmt.Errorf("%w: the recipients: %v", ErrNoKeys, err)
	}
	var k Keys
	switch {
	case m.ToUser == "@all":
		k.Uncounted = append(k.Uncounted, "@all")
	case m.ToUser != "":
		k.Members = strings.Split(m.ToUser, "|")
		if slices.Contains(k.Members, "") {
			return Keys{}, fmt.Errorf("%w: an empty userid in touser", ErrNoKeys)
		}
	}
	if m.ToParty != "" {
		k.Uncounted = append(k.Uncounted, "toparty")
	}
	if m.ToTag != "" {
		k.Uncounted = append(k.Uncounted, "totag")
	}
	if len(k.Members) == 0 && len(k.Uncounted) == 0 {
		return Keys{}, fmt.Errorf("%w: no recipient (touser, toparty or totag)", ErrNoKeys)
	}
	k.Weight = max(len(k.Members), 1)
	return k, nil
}

// RobotKeys reads the robot a call of a group robot's endpoint counts on:
// its key, the credential in the query, which the client adds there before
// it reads the keys as the server sees them. The resource is a digest of the
// key, never the key: limiter keys are stored and logged.
func RobotKeys(q url.Values, _ []byte) (Keys, error) {
	key := q.Get(RobotKey.String())
	if key == "" {
		return Keys{}, fmt.Errorf("%w: the robot's key", ErrNoKeys)
	}
	return Keys{Resource: RobotResource(key)}, nil
}

// RobotResource names the robot of a webhook key as a resource: a digest
// of the key, from which the key cannot be read back.
func RobotResource(key string) string {
	sum := sha256.Sum256([]byte("wecom robot\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// sampleRobotKey is the key of the webhook URL in WeCom's own example
// (document/path/91770).
const sampleRobotKey = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"

// SampleRequest returns the query and body of e's Sample: for a GET or a
// multipart upload, the query it holds; for another POST, the JSON body.
// The query of an endpoint that carries a robot's key holds the key of
// WeCom's example, as a call's holds its robot's.
func (e Endpoint) SampleRequest() (url.Values, []byte, error) {
	q, body := url.Values{}, []byte(nil)
	if e.Method == "GET" || e.Body == MultipartBody {
		var err error
		if q, err = url.ParseQuery(e.Sample); err != nil {
			return nil, nil, fmt.Errorf("catalog: endpoint %s: sample query: %w", e.ID, err)
		}
	} else {
		if !json.Valid([]byte(e.Sample)) {
			return nil, nil, fmt.Errorf("catalog: endpoint %s: the sample body is not JSON", e.ID)
		}
		body = []byte(e.Sample)
	}
	if e.Token == RobotKey {
		q.Set(RobotKey.String(), sampleRobotKey)
	}
	return q, body, nil
}
