// Package callback receives WeCom's callbacks: the URL check, messages and
// events (a customer added, a contact changed, a kf message waiting, a
// suite ticket), verified, decrypted, typed and delivered once.
//
// It stands on its own: a program that only receives callbacks needs no
// wecom.Client, and this package imports neither the SDK's root package nor
// Redis nor an HTTP client.
//
//   - Crypto is WeCom's message encryption (document/path/91144): the
//     signature is checked in constant time before anything is decrypted;
//     the block size, every pad byte, the length and the receive id are
//     checked after; every failure is an *Error matching ErrSignature,
//     ErrMalformed or ErrReceiveID, never a panic.
//   - Handler is the http.Handler of a callback URL. Register a function
//     per event type with Handle or HandleReply. Each runs within a
//     deadline, from the request's arrival and covering the Deduper, that
//     leaves room in WeCom's 5 seconds (WithTimeout; a suite's command
//     callbacks, WeCom's 1 second: WithCommandTimeout), or after the
//     acknowledgement on a bounded queue (WithQueue). Bad input is a 4xx
//     and a log line (WithLogger), never a 500. The receive id of the URL
//     check and of the POSTs may differ (WithURLCheckReceiveID,
//     WithReceiveIDs): see Crypto for which goes where.
//   - The event types (TextMessage, ContactEvent, ExternalContactEvent,
//     KfEvent, SuiteTicketEvent, …) hold WeCom's fields; a kind this
//     package does not know arrives as a *RawEvent, never refused.
//   - WeCom retries a callback up to 3 times; a Deduper (MemoryDeduper by
//     default, redisdedupe.Deduper for replicas) delivers it once: by MsgId
//     for a message, by a digest of the decrypted XML for an event, under
//     a namespace per Handler, so that Handlers may share one Deduper.
package callback
