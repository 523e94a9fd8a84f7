package callback

import "errors"

// The classes of failure a caller branches on with errors.Is. Every error
// this package returns matches exactly one of them (and is an *Error).
var (
	// ErrConfig: NewCrypto, NewHandler or an option was given a value it
	// cannot use (an EncodingAESKey that is not 43 characters of base64, an
	// empty token, a negative size).
	ErrConfig = errors.New("callback: invalid configuration")
	// ErrSignature: msg_signature does not match the token, timestamp,
	// nonce and ciphertext. Nothing was decrypted.
	ErrSignature = errors.New("callback: bad signature")
	// ErrTimestamp: the timestamp is not a decimal number of seconds, or is
	// further from now than the Handler's window allows.
	ErrTimestamp = errors.New("callback: bad timestamp")
	// ErrMalformed: the request or the ciphertext is not what WeCom sends:
	// a missing parameter, bad base64, not a whole number of 32-byte
	// blocks, bad PKCS#7 padding, a length field past the end, XML that does
	// not parse.
	ErrMalformed = errors.New("callback: malformed input")
	// ErrReceiveID: the message decrypted well but names another receiver
	// than the Crypto was made for (another corp, another suite).
	ErrReceiveID = errors.New("callback: wrong receive id")
	// ErrTooLarge: the request body is over the Handler's size limit.
	ErrTooLarge = errors.New("callback: body too large")
)

// Error is a failure of this package: which class (one of the Err…
// sentinels above) and why, in words that never quote a token, a key, a
// ciphertext or a decrypted message.
type Error struct {
	Class  error
	Reason string
}

// Error describes the failure.
func (e *Error) Error() string { return e.Class.Error() + ": " + e.Reason }

// Unwrap returns the class, so errors.Is(err, ErrSignature) works.
func (e *Error) Unwrap() error { return e.Class }

// fail builds an *Error of a class.
func fail(class error, reason string) error { return &Error{Class: class, Reason: reason} }
