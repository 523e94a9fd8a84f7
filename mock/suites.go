package mock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// A suite's life with WeCom: the suite_tickets pushed to its command URL
// on the Server's clock, the corps that install it (an auth code spent
// once for a permanent code, which get_corp_token and get_auth_info
// take), and the ids a third party sees (open_corpid, open_userid, the
// new external_userid), derived from the real ones so that they answer
// the same every time.

// SuiteTicketInterval is how often WeCom pushes a suite a new
// suite_ticket, and SuiteTicketLifetime how long each is valid
// (document/path/97162).
const (
	SuiteTicketInterval = 10 * time.Minute
	SuiteTicketLifetime = 30 * time.Minute
)

// tickets are the suite_tickets get_suite_token accepts, each until its
// expiry (zero: for as long as the Server runs), and when the next is
// pushed (zero: no command URL).
type tickets struct {
	accepted map[string]time.Time
	nextPush time.Time
}

// set makes ticket the only one accepted, for ever ("" none).
func (t *tickets) set(ticket string) {
	t.accepted = make(map[string]time.Time)
	if ticket != "" {
		t.accepted[ticket] = time.Time{}
	}
}

// accepts reports whether ticket is valid at now.
func (t *tickets) accepts(ticket string, now time.Time) bool {
	exp, ok := t.accepted[ticket]
	return ok && ticket != "" && (exp.IsZero() || now.Before(exp))
}

// suiteTarget is the callback target of a suite's command URL.
func suiteTarget(suiteID string) string { return "suite:" + suiteID }

// SetSuiteCallback makes the Server push suite suiteID's command callbacks
// (InfoType suite_ticket, create_auth) to cb.URL, encrypted for
// cb.ReceiveID (default: the suite id): a suite_ticket at once, then one
// every SuiteTicketInterval of the Server's clock (Config.Now), pushed by
// the first call the Server serves once it is due. It fails for a suite
// not added, or as SetCallback does.
func (s *Server) SetSuiteCallback(suiteID string, cb CallbackConfig) error {
	if cb.ReceiveID == "" {
		cb.ReceiveID = suiteID
	}
	s.mu.Lock()
	ok := s.suites.issuers[suiteID] != nil
	s.mu.Unlock()
	if !ok {
		return errors.New("mock: no suite " + suiteID)
	}
	if err := s.SetCallback(suiteTarget(suiteID), cb); err != nil {
		return err
	}
	_, err := s.PushSuiteTicket(suiteID)
	return err
}

// PushSuiteTicket pushes suite suiteID a new suite_ticket now, valid
// SuiteTicketLifetime, and returns it; the next is due
// SuiteTicketInterval later. It fails for a suite without a command URL
// (SetSuiteCallback).
func (s *Server) PushSuiteTicket(suiteID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.suites.issuers[suiteID]
	if st == nil || !s.hasTarget(suiteTarget(suiteID)) {
		return "", errors.New("mock: no command callback set for suite " + suiteID)
	}
	return s.pushTicketLocked(st, s.now()), nil
}

// hasTarget reports whether a callback is set for target.
func (s *Server) hasTarget(target string) bool {
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	return s.push.targets[target] != nil
}

// pushTicketLocked makes st a new ticket and pushes it. s.mu is held.
func (s *Server) pushTicketLocked(st *issuer, now time.Time) string {
	ticket := "st" + newTokenValue()[:40]
	if st.accepted == nil {
		st.accepted = make(map[string]time.Time)
	}
	for t, exp := range st.accepted { // the expired go
		if !exp.IsZero() && !now.Before(exp) {
			delete(st.accepted, t)
		}
	}
	st.accepted[ticket] = now.Add(SuiteTicketLifetime)
	st.nextPush = now.Add(SuiteTicketInterval)
	s.pushCommandLocked(st.id, now, "suite_ticket", "SuiteTicket", ticket)
	return ticket
}

// pushSuiteTicketsLocked pushes the suite_tickets due at now. s.mu is
// held.
func (s *Server) pushSuiteTicketsLocked(now time.Time) {
	for _, st := range s.suites.issuers {
		if !st.nextPush.IsZero() && !now.Before(st.nextPush) {
			s.pushTicketLocked(st, now)
		}
	}
}

// pushCommandLocked pushes a command callback of InfoType info to suite
// suiteID's command URL, if it has one, with field holding value. s.mu is
// held.
func (s *Server) pushCommandLocked(suiteID string, now time.Time, info, field, value string, more ...xmlField) {
	s.push.mu.Lock()
	defer s.push.mu.Unlock()
	t := s.push.targets[suiteTarget(suiteID)]
	if t == nil {
		return
	}
	var b bytes.Buffer
	b.WriteString("<xml>")
	writeCDATA(&b, "SuiteId", suiteID)
	writeCDATA(&b, "InfoType", info)
	b.WriteString("<TimeStamp>" + strconv.FormatInt(now.Unix(), 10) + "</TimeStamp>")
	writeCDATA(&b, field, value)
	for _, f := range more {
		writeCDATA(&b, f.name, f.value)
	}
	b.WriteString("</xml>")
	s.startPushLocked(t, &delivery{corpID: suiteTarget(suiteID), event: info, command: true, xml: b.Bytes()})
}

// suiteBook is a suite's installations, kept in its corp (suite:<id>).
type suiteBook struct {
	id        string
	authCodes map[string]authCode // auth code → the installation, spent once
	permanent map[string]string   // corp id → its permanent code
	// corpToken issues the access token of an installed corp for the
	// suite; s.mu is held.
	corpToken func(corpID string, now time.Time) *token
}

type authCode struct {
	corp    string
	expires time.Time
}

// suiteBookLocked returns suite suiteID's book, made if need be. s.mu is
// held.
func (s *Server) suiteBookLocked(suiteID string) *suiteBook {
	c := s.corpLocked(suiteTarget(suiteID))
	if c.suite == nil {
		app := suiteTarget(suiteID)
		c.suite = &suiteBook{id: suiteID, authCodes: make(map[string]authCode), permanent: make(map[string]string),
			corpToken: func(corpID string, now time.Time) *token {
				cc := s.corpLocked(corpID)
				tok := cc.apps[app]
				if tok == nil || !now.Before(tok.expires) {
					tok = &token{value: newTokenValue(), corp: corpID, app: app, expires: now.Add(s.tokenTTL)}
					s.tokens[tok.value] = tok
					cc.apps[app] = tok
				}
				return tok
			}}
	}
	return c.suite
}

// Authorize makes corp corpID install suite suiteID, as its admin would:
// it returns the installation's auth code, which get_permanent_code spends
// once within 10 minutes, and pushes create_auth to the suite's command
// URL, if it has one. It fails for a suite not added.
func (s *Server) Authorize(suiteID, corpID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suites.issuers[suiteID] == nil {
		return "", errors.New("mock: no suite " + suiteID)
	}
	now := s.now()
	b := s.suiteBookLocked(suiteID)
	code := "ac" + newTokenValue()[:32]
	b.authCodes[code] = authCode{corp: corpID, expires: now.Add(10 * time.Minute)}
	s.corpLocked(corpID)
	s.pushCommandLocked(suiteID, now, "create_auth", "AuthCode", code, xmlField{name: "AuthCorpId", value: corpID})
	return code, nil
}

// Deauthorize makes corp corpID cancel its installation of suite
// suiteID, as its admin would: its permanent code and its token for the
// suite are no longer valid (get_corp_token answers 40013, as for a corp
// that never installed it), and cancel_auth is pushed to the suite's
// command URL, if it has one. It fails for a suite not added.
func (s *Server) Deauthorize(suiteID, corpID string) error {
	return s.authCommand(suiteID, corpID, "cancel_auth")
}

// ChangeAuthorization pushes change_auth about corp corpID to suite
// suiteID's command URL, as when its admin changes what the app may see.
// It fails for a suite not added.
func (s *Server) ChangeAuthorization(suiteID, corpID string) error {
	return s.authCommand(suiteID, corpID, "change_auth")
}

// authCommand pushes the authorization callback info about corpID,
// cancelling the installation first for cancel_auth.
func (s *Server) authCommand(suiteID, corpID, info string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suites.issuers[suiteID] == nil {
		return errors.New("mock: no suite " + suiteID)
	}
	if info == "cancel_auth" {
		delete(s.suiteBookLocked(suiteID).permanent, corpID)
		cc := s.corpLocked(corpID)
		if tok := cc.apps[suiteTarget(suiteID)]; tok != nil {
			delete(s.tokens, tok.value)
			delete(cc.apps, suiteTarget(suiteID))
		}
	}
	s.pushCommandLocked(suiteID, s.now(), info, "AuthCorpId", corpID)
	return nil
}

// opaque derives the id a third party sees for id: the same every time,
// with prefix, distinct per scope (a suite, a provider) and corp.
func opaque(prefix, scope, id string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + id))
	return prefix + hex.EncodeToString(sum[:12])
}

// Suites registers the suite's endpoints and the id translations.
func (handlerSets) Suites() handlers {
	return handlers{
		catalog.SetSessionInfo:          (*corp).setSessionInfo,
		catalog.GetPermanentCode:        (*corp).permanentCodeV1,
		catalog.GetPermanentCodeV2:      (*corp).permanentCodeV2,
		catalog.GetAuthInfo:             (*corp).authInfoV1,
		catalog.GetAuthInfoV2:           (*corp).authInfoV2,
		catalog.GetCorpToken:            (*corp).corpToken,
		catalog.GetAdminList:            (*corp).adminList,
		catalog.CorpIDToOpenCorpID:      (*corp).openCorpID,
		catalog.UserIDToOpenUserID:      (*corp).openUserIDs,
		catalog.NewExternalUserID:       (*corp).newExternalUserIDs,
		catalog.UnionIDToExternalUserID: (*corp).unionIDToExternalUserID,
	}
}
