package wecom

import (
	"github.com/wecomkit/wecom/catalog"
)

// pipeline is what calls go through: the configuration, the credentials,
// the endpoints' limits and the state the steps keep between calls.
type pipeline struct {
	cfg *config
	// creds are the credentials calls carry, by the token kind of their
	// endpoint; tickets are those a caller signs with (JS-SDK).
	creds   map[catalog.Token]carried
	tickets tickets
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
