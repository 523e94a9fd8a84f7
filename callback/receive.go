package callback

import (
	"errors"
	"io"
	"net/http"
	"strconv"
)

// maxPooledBody is the largest body buffer a Handler keeps for the next
// request; a larger one (an approval's long record) is left to the GC.
const maxPooledBody = 64 << 10

// open reads a POST's body, within the size limit, into a buffer of the
// Handler's pool, and returns the message its Encrypt element holds,
// verified and decrypted into a buffer of its own (the body's goes back to
// the pool).
func (h *Handler) open(w http.ResponseWriter, r *http.Request, sig, ts, nonce string) ([]byte, error) {
	limit := h.cfg.maxBody
	if r.ContentLength > limit {
		return nil, fail(ErrTooLarge, "Content-Length over "+strconv.FormatInt(limit, 10))
	}
	bp, _ := h.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer func() {
		if cap(*bp) <= maxPooledBody {
			h.bodies.Put(bp)
		}
	}()
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), (*bp)[:0], r.ContentLength)
	*bp = body
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, fail(ErrTooLarge, "body over "+strconv.FormatInt(limit, 10))
		}
		return nil, fail(ErrMalformed, "reading the body failed")
	}
	enc, err := encryptOf(body)
	if err != nil {
		return nil, err
	}
	return h.crypto.decryptFor(sig, ts, nonce, enc, h.acceptPost)
}

// readBody appends what r holds to buf, as io.ReadAll does, first making
// room for size bytes when the request said how many it sends.
func readBody(r io.Reader, buf []byte, size int64) ([]byte, error) {
	if size > 0 && int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1) // +1: the read that finds EOF
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
