package wecom

import (
	"net/url"

	"github.com/wecomkit/wecom/catalog"
)

// newPipeline builds the pipeline of cfg: its credentials (a robot's key,
// or the corp's token and tickets and what WithSuite and WithProvider
// give), its limits and its learner.
func newPipeline(cfg *config) (*pipeline, error) {
	p := &pipeline{cfg: cfg, creds: make(map[catalog.Token]carried)}
	switch {
	case cfg.robotKey != "": // the corp's options do nothing here
		p.creds[catalog.RobotKey] = givenKey{name: "robot key", param: catalog.RobotKey.String(), value: cfg.robotKey}
	default:
		p.creds[catalog.CorpToken] = p.corpCredential()
		p.tickets = tickets{jsapi: p.ticket("jsapi ticket", catalog.JSAPITicket, nil, "jsapi"),
			agent: p.ticket("agent ticket", catalog.AgentTicket, url.Values{"type": {"agent_config"}}, "agent")}
		if cfg.suite != nil {
			p.creds[catalog.SuiteToken] = p.suiteCredential()
		}
		if cfg.provider != nil {
			p.creds[catalog.ProviderToken] = p.providerCredential()
		}
	}
	p.learner = p.newLearner()
	if err := p.resolveLimits(); err != nil {
		return nil, err
	}
	return p, nil
}
