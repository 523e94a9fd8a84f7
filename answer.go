// The check step: what is WeCom's answer, and what is not.

package wecom

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// envelope is the part of every answer the pipeline reads.
type envelope struct {
	ErrCode *int   `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// answer decodes the JSON answer raw of cl (its HTTP status 200) into
// cl.out, or into the error a caller sees.
func (p *pipeline) answer(cl *call, raw []byte) error {
	// errmsg, or a proxy's body, may echo the request: its token, our secret.
	err := p.redactErr(decode(cl.path, cl.omitsErrcode, raw, cl.out))
	var ae *APIError
	if errors.As(err, &ae) {
		ae.CorpID, ae.AgentID = p.cfg.corpID, p.cfg.agentID
	}
	return err
}

// validator is an answer type that knows what a success must carry; decode
// calls it after decoding a success into it.
type validator interface {
	validate() error
}

// decode reads an answer of path into out. A WeCom answer is a JSON object
// with an errcode (unless omits: the endpoint may leave it out of a
// success); a non-zero errcode is an *APIError.
// Anything else (no errcode, null, an array, a string, not JSON, or a
// success without what out must carry) is a *ResponseError: never a success.
func decode(path string, omits bool, raw []byte, out any) error {
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err}
	}
	switch {
	case !isObject(raw):
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: errNotObject}
	case env.ErrCode == nil && !omits:
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: errNoErrcode}
	case env.ErrCode != nil && *env.ErrCode != CodeOK:
		return &APIError{Code: *env.ErrCode, Message: env.ErrMsg, Path: path}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		// The envelope decoded, so the body is JSON: the answer does not
		// fit out. Sending it again would not help.
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err, shape: true}
	}
	if v, ok := out.(validator); ok {
		if err := v.validate(); err != nil {
			return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err}
		}
	}
	return nil
}

var (
	errNotObject = errors.New("the answer is not a JSON object")
	errNoErrcode = errors.New("the answer has no errcode: not WeCom's")
)

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}
