package redis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// serverError is an error the Redis server answered, as go-redis's are.
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}

// fakeConn answers EVALSHA with shaErr and EVAL with "eval", counting both.
type fakeConn struct {
	redisConn
	shaErr      error
	shas, evals int
}

func (c *fakeConn) EvalSha(_ context.Context, _ string, _ []string, _ ...any) (any, error) {
	c.shas++
	if c.shaErr != nil {
		return nil, c.shaErr
	}
	return "evalsha", nil
}

func (c *fakeConn) Eval(_ context.Context, _ string, _ []string, _ ...any) (any, error) {
	c.evals++
	return "eval", nil
}

func TestScriptRunFallsBackOnNoScriptOnly(t *testing.T) {
	for _, tc := range []struct {
		shaErr error
		want   any
		evals  int
	}{
		{nil, "evalsha", 0},
		{serverError("NOSCRIPT No matching script. Please use EVAL."), "eval", 1},
		{serverError("ERR NOSCRIPT No matching script"), "eval", 1},
		{fmt.Errorf("wrapped: %w", serverError("NOSCRIPT x")), "eval", 1},
		{errors.New("NOSCRIPT not from the server"), nil, 0},
		{serverError("ERR Error running script"), nil, 0},
		{serverError("BUSY Redis is busy"), nil, 0},
		{errors.New("dial tcp: refused"), nil, 0},
	} {
		c := &fakeConn{shaErr: tc.shaErr}
		got, err := newScript("return 1").run(context.Background(), c, nil)
		if got != tc.want || c.shas != 1 || c.evals != tc.evals || (tc.want == nil) != (err != nil) {
			t.Errorf("EVALSHA failing with %v: run = %v, %v after %d EVALSHA, %d EVAL", tc.shaErr, got, err, c.shas, c.evals)
		}
	}
}

func TestScriptHash(t *testing.T) {
	// SHA-1 of "return 1", as SCRIPT LOAD answers it.
	if got := newScript("return 1").hash; got != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Fatalf("hash = %s", got)
	}
}

func TestReplies(t *testing.T) {
	failed := errors.New("failed")
	if _, err := replySlice(nil, failed); err != failed {
		t.Errorf("replySlice kept no error: %v", err)
	}
	if s, err := replySlice([]any{int64(1), "a"}, nil); err != nil || len(s) != 2 {
		t.Errorf("replySlice = %v, %v", s, err)
	}
	if _, err := replySlice("a", nil); err == nil {
		t.Error("replySlice took a string")
	}
	if s, err := replyAs[string]("a", nil); err != nil || s != "a" {
		t.Errorf("replyAs[string] = %q, %v", s, err)
	}
	if _, err := replyAs[string](int64(1), nil); err == nil {
		t.Error("replyAs[string] took an integer")
	}
	for _, v := range []any{int64(42), "42"} {
		if n, err := replyInt64(v, nil); err != nil || n != 42 {
			t.Errorf("replyInt64(%#v) = %d, %v", v, n, err)
		}
	}
	if _, err := replyInt64("x", nil); err == nil {
		t.Error("replyInt64 took x")
	}
	if f, err := replyFields([]any{"a", int64(1), "b", "2"}, nil); err != nil || !reflect.DeepEqual(f, map[string]int64{"a": 1, "b": 2}) {
		t.Errorf("replyFields = %v, %v", f, err)
	}
	for _, bad := range [][]any{{"a", []any{}}, {"a"}, {int64(1), int64(2)}, {"a", "x"}} {
		if f, err := replyFields(bad, nil); err == nil {
			t.Errorf("replyFields(%v) = %v, want an error", bad, f)
		}
	}
}
