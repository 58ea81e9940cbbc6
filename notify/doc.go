// Package notify delivers a store's notices (store.Notice) to webhooks,
// its routes (Route: each with its own URL, secret and format, taking
// the kinds and workflows it names): each notice is claimed from the
// store (store.Noticeboard), sent as one signed HTTP POST to every route
// that takes it, and deleted once each answered 2xx; any other answer,
// or none, is tried again at the routes still to take it (the store
// keeps the others' names) after a growing delay, every receiver's
// Retry-After heeded, until the notice is older than the configured
// limit. ParseRoutes reads a file of routes. Notices are written with the ticks that cause them, so none is
// lost to a crash; a deliverer that dies between a delivery and its
// deletion delivers the notice again after its hold passes, under the
// same id. Receivers drop repeats by the Flrh-Notice-Id header.
//
// A request's body is
//
//	{"id": "...", "created_at": "RFC 3339", "attempt": 1, "notice": {...}}
//
// where notice is the body the runner wrote (store.NoticeBody), and its
// Flrh-Signature header is
//
//	t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>
//
// Verify checks one, with a bound on its age against replays.
//
// Notifier is shell: it reads the clock and does network I/O.
package notify
