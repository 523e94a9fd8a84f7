// One call as the pipeline sees it: what a typed method or Do asks for,
// and what the pipeline resolves of it.

package wecom

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// call is one API call as the pipeline sees it. A typed method names its
// endpoint (id) and the pipeline takes the rest from the catalog; Do gives
// method and path.
type call struct {
	id     catalog.ID
	method string
	path   string
	query  url.Values
	body   any
	out    any
	// resource is what per-resource rules count (a customer for mark_tag).
	resource string
	// members are the members a call reaches, for per-member rules.
	members []string
	// weight is the units a call counts against weighted rules (0: 1).
	weight int
	// uncounted names the recipients no limit counts (catalog.Keys).
	uncounted []string
	// tryMembers: a call's per-member windows are taken if they have room
	// now, never waited for (a message sent only to the members ready).
	tryMembers bool
	// counted: an attempt may have been done (ErrMaybeDone), so what it
	// counted per member and in units stands: a retry takes only the
	// other limits, and goes out only while the duplicate check covers it.
	counted bool
	// chatMembers are the members of the app group chat the call sends
	// to, which its request does not name (catalog.Keys.Chat): the typed
	// method knows them (AppChats.Send); nil for Do, which cannot.
	chatMembers []string
	// dedupe: WeCom drops a copy of the call sent within this long of the
	// first (a message's duplicate check), so that it may be repeated
	// until dedupeUntil, which do sets, though its endpoint is not
	// repeatable.
	dedupe      time.Duration
	dedupeUntil time.Time
	// upload, download: the file a call sends as multipart, or receives
	// (codec.go); nil for JSON.
	upload   *upload
	download *download
	// Set by prepare, from the catalog for a typed call: cred is the
	// credential the call carries (nil: none, gettoken's own calls).
	idempotent   bool
	cred         carried
	omitsErrcode bool
}

// leave stops the attempt going on in the background from reading or
// writing the file of a caller who gave up: the call returns to it.
func (cl *call) leave() {
	if cl.upload != nil {
		cl.upload.g.leave()
	}
	if cl.download != nil {
		cl.download.g.leave()
	}
}

// encoded returns body as it goes on the wire: as it is when it is already
// bytes (a []byte, json.RawMessage or string, which resty sends as is),
// else encoded as JSON; nil for no body.
func encoded(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	case string:
		return []byte(b), nil
	}
	return json.Marshal(body)
}

// detached returns a copy of cl for an attempt that may outlive its
// caller, whose answer goes into private, a new value of the type cl.out
// points to (invalid when cl has no out).
func (cl *call) detached() (*call, reflect.Value) {
	if cl.out == nil {
		return cl, reflect.Value{}
	}
	t := reflect.TypeOf(cl.out)
	if t.Kind() != reflect.Pointer {
		return cl, reflect.Value{}
	}
	private := reflect.New(t.Elem())
	private.Elem().Set(reflect.ValueOf(cl.out).Elem()) // what the caller set in it, as a decode into it keeps
	bg := *cl
	bg.out = private.Interface()
	return &bg, private
}

// answerOf makes a call of id with body (nil for none) and returns its
// answer, decoded (and checked, when *T is a validator) into a new T: the
// one line of a typed method whose request is its body.
func answerOf[T any](ctx context.Context, p *pipeline, id catalog.ID, body any) (*T, error) {
	out := new(T)
	if err := p.perform(ctx, &call{id: id, body: body, out: out}); err != nil {
		return nil, err
	}
	return out, nil
}
