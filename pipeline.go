// The pipeline every call goes through, and the state its steps keep
// between calls.

package wecom

import (
	"sync"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// pipeline is what calls go through: the configuration, the credentials,
// the endpoints' limits and the state the steps keep between calls.
type pipeline struct {
	cfg *config
	// creds are the credentials calls carry, by the token kind of their
	// endpoint; tickets are those a caller signs with (JS-SDK).
	creds   map[catalog.Token]carried
	tickets tickets
	// app names the app in limiter keys (appID).
	app string
	// endpoints are the catalog's endpoints and the overridden paths, with
	// their rules after the overrides; generic limits any other path.
	endpoints map[string]*endpointLimits
	generic   *endpointLimits
	near      nearCache
	learner   learner
	blocks    blockLog
	stalls    stallLog
	// background counts the attempts that outlived their callers (Drain).
	background tracker
}

// service is what a family's service holds: the pipeline its calls go
// through.
type service struct{ p *pipeline }

// blockLog remembers, per (corp, API), the last block after a 45009.
type blockLog struct {
	mu   sync.Mutex
	last map[string]lastBlock
}

type lastBlock struct {
	level int // index in the API's periods
	end   time.Time
}

// nearCache remembers nearEndpoint's verdict per path Do was called with,
// as Do is on the call path; at most nearCacheSize paths.
type nearCache struct {
	mu    sync.Mutex
	paths map[string]string
}

// leaseRequest is one acquisition of a call.
type leaseRequest struct {
	throttle.Request
	// calendar: the key counts a CST day or month (catalog.Day,
	// catalog.Month; 0 for none). It is taken without waiting; when full,
	// it opens when the next day or month starts there.
	calendar catalog.Period
	// order: scarcer keys first, so that no API slot is held while the call
	// waits for a busy customer.
	order int
}
