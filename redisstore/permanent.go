package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom"
)

// PermanentCodes is a wecom.PermanentCodeStore on Redis: the installations
// of one suite, shared by every process using the same Redis, prefix and
// suite. An installation is stored under prefix+"wecom:permanent_code:{suite
// id}:corp id" as the JSON {"c": permanent code, "a": agent id}, without
// expiry: a permanent code lasts until the corp cancels (cancel_auth).
// Errors never hold a code. PermanentCodes is safe for concurrent use.
type PermanentCodes struct {
	rdb    redis.UniversalClient
	prefix string
}

// redisInstallation is the stored form of a wecom.Installation.
type redisInstallation struct {
	Code  string `json:"c"`
	Agent int    `json:"a"`
}

// NewPermanentCodes returns the store of suite suiteID's installations in
// rdb under keys starting with prefix. The caller keeps ownership of rdb.
func NewPermanentCodes(rdb redis.UniversalClient, prefix, suiteID string) (*PermanentCodes, error) {
	switch {
	case rdb == nil:
		return nil, &wecom.ValidationError{Field: "redis permanent code store", Reason: "nil redis client"}
	case suiteID == "":
		return nil, &wecom.ValidationError{Field: "redis permanent code store", Reason: "empty suite id"}
	}
	return &PermanentCodes{rdb: rdb, prefix: prefix + "wecom:permanent_code:{" + suiteID + "}:"}, nil
}

// Get implements wecom.PermanentCodeStore.
func (s *PermanentCodes) Get(ctx context.Context, corpID string) (wecom.Installation, error) {
	raw, err := s.rdb.Get(ctx, s.prefix+corpID).Bytes()
	if errors.Is(err, redis.Nil) {
		return wecom.Installation{}, fmt.Errorf("%w %s: no permanent code", wecom.ErrUnknownApp, corpID)
	}
	if err != nil {
		return wecom.Installation{}, fmt.Errorf("wecom: permanent code store get: %w", err)
	}
	var e redisInstallation
	// The decoding error is not wrapped: it may quote the code.
	if json.Unmarshal(raw, &e) != nil || e.Code == "" {
		return wecom.Installation{}, errors.New("wecom: permanent code store get: stored entry is not an installation")
	}
	return wecom.Installation{PermanentCode: e.Code, AgentID: e.Agent}, nil
}

// Set implements wecom.PermanentCodeStore.
func (s *PermanentCodes) Set(ctx context.Context, corpID string, in wecom.Installation) error {
	if err := in.Validate(corpID); err != nil {
		return err
	}
	raw, err := json.Marshal(redisInstallation{Code: in.PermanentCode, Agent: in.AgentID})
	if err != nil {
		return fmt.Errorf("wecom: permanent code store set: encoding: %w", err)
	}
	if err := s.rdb.Set(ctx, s.prefix+corpID, raw, 0).Err(); err != nil {
		return fmt.Errorf("wecom: permanent code store set: %w", err)
	}
	return nil
}

// Delete implements wecom.PermanentCodeStore.
func (s *PermanentCodes) Delete(ctx context.Context, corpID string) error {
	if err := s.rdb.Del(ctx, s.prefix+corpID).Err(); err != nil {
		return fmt.Errorf("wecom: permanent code store delete: %w", err)
	}
	return nil
}
