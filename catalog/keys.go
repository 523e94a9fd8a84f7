package catalog

import (
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
// touser ("a|b|c"). A message to every member ("@all"), or to parties or
// tags, names no member the limits can count, and is refused: the limits
// per member would not hold.
func MessageKeys(_ url.Values, body []byte) (Keys, error) {
	var m struct {
		ToUser  string `json:"touser"`
		ToParty string `json:"toparty"`
		ToTag   string `json:"totag"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Keys{}, fmt.Errorf("%w: the recipients: %v", ErrNoKeys, err)
	}
	switch {
	case m.ToUser == "@all" || m.ToParty != "" || m.ToTag != "":
		return Keys{}, fmt.Errorf("%w: a message to @all, parties or tags reaches members the limits cannot count from the request: name the users", ErrNoKeys)
	case m.ToUser == "":
		return Keys{}, fmt.Errorf("%w: no recipient (touser)", ErrNoKeys)
	}
	users := strings.Split(m.ToUser, "|")
	if slices.Contains(users, "") {
		return Keys{}, fmt.Errorf("%w: an empty userid in touser", ErrNoKeys)
	}
	return Keys{Members: users}, nil
}

// SampleRequest returns the query and body of e's Sample: for a GET or a
// multipart upload, the query it holds; for another POST, the JSON body.
func (e Endpoint) SampleRequest() (url.Values, []byte, error) {
	if e.Method == "GET" || e.Body == MultipartBody {
		q, err := url.ParseQuery(e.Sample)
		if err != nil {
			return nil, nil, fmt.Errorf("catalog: endpoint %s: sample query: %w", e.ID, err)
		}
		return q, nil, nil
	}
	if !json.Valid([]byte(e.Sample)) {
		return nil, nil, fmt.Errorf("catalog: endpoint %s: the sample body is not JSON", e.ID)
	}
	return url.Values{}, []byte(e.Sample), nil
}
