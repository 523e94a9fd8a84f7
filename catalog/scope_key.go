package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Need is what a scope's key needs from a call besides its corp, app and
// API.
type Need int

// What a scope may need.
const (
	// NeedNothing: the corp, the app and the API name the key.
	NeedNothing Need = iota
	// NeedResource: the resource the call edits, as the endpoint's Keys
	// read it (ScopeResource, ScopeShared).
	NeedResource
	// NeedMembers: the members the call reaches; the key counts once per
	// member (ScopeAppMember, ScopeMember).
	NeedMembers
	// NeedEgress: the source IP the calls leave from, which the client
	// knows only when told (ScopeIP).
	NeedEgress
	// NeedRobot: the robot's webhook key (ScopeRobot).
	NeedRobot
)

// Need returns what a call must say for a rule of scope s to count it.
func (s Scope) Need() Need {
	switch s {
	case ScopeResource, ScopeShared:
		return NeedResource
	case ScopeAppMember, ScopeMember:
		return NeedMembers
	case ScopeIP:
		return NeedEgress
	case ScopeRobot:
		return NeedRobot
	}
	return NeedNothing
}

// KeyInput is what a call's limiter keys are formed from.
type KeyInput struct {
	// Corp is the corp id; API the endpoint's path.
	Corp, API string
	// App names the calling app within its corp: its agent id, or another
	// name no other app of the corp has.
	App string
	// Resource is the resource the call edits (NeedResource), or the
	// robot's webhook key (NeedRobot).
	Resource string
	// Members reports that the call names the members it reaches
	// (NeedMembers); the limiter counts the key once per member.
	Members bool
	// Egress is the source IP of the calls (NeedEgress).
	Egress string
	// Now is when the call is made: the key of a Day or Month rule names
	// its day or month in China Standard Time.
	Now time.Time
}

// Key returns the limiter key r counts a call on, or "" and what the call
// lacks of what r's scope needs: r does not count it then. Within a corp a
// key starts with the corp id in braces, a Redis Cluster hash tag, so that
// one corp's keys share a slot; a robot's key holds a digest of its webhook
// key, which is a credential. Rules of one scope and Group count on one
// key, apart from their units (Weighted) and their calendar periods (a
// Day rule's key ends "~day:20261127", a Month rule's "~month:202611").
func (r Rule) Key(in KeyInput) (key string, lacks Need) {
	need := r.Scope.Need()
	switch {
	case need == NeedResource && in.Resource == "",
		need == NeedRobot && in.Resource == "",
		need == NeedMembers && !in.Members,
		need == NeedEgress && in.Egress == "":
		return "", need
	}
	corp := "{" + in.Corp + "}"
	shared := r.Group
	if shared == "" {
		shared = in.API
	}
	switch r.Scope {
	case ScopeAPI:
		key = corp + in.API
	case ScopeResource:
		key = corp + in.API + "|" + in.Resource
	case ScopeShared:
		key = corp + "@" + r.Group + "|" + in.Resource
	case ScopeApp, ScopeAppMember:
		key = corp + "#" + in.App + "@" + shared
	case ScopeMember:
		key = corp + "@" + shared
	case ScopeIP:
		key = "ip:" + in.Egress + in.API
	case ScopeRobot:
		sum := sha256.Sum256([]byte(in.Resource))
		key = "robot:" + hex.EncodeToString(sum[:8])
	}
	if r.Weighted {
		key += "~units"
	}
	if r.Per.Calendar() {
		key += "~" + r.Per.name(in.Now)
	}
	return key, NeedNothing
}
