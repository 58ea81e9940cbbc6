// Package server is flrh's HTTP face: a JSON API under /v1/ over a runner
// and its store, with bearer-token authentication mapped to roles, live run
// updates as server-sent events, an OpenAPI 3.1 description of itself,
// structured logs and Prometheus metrics.
//
// The API never trusts who a client says it is. Every act that a run
// records — an approval, a denial, a reconciliation, a cancellation, an
// input — carries the actor the presented token authenticates, mapped to
// the (role, capability) pair the control FSM expects for that act. An
// agent token can read and propose (start runs, submit inputs) and nothing
// else; it can never approve, deny, reconcile or cancel.
//
// Without a token file the server authenticates nobody: it then serves
// loopback clients only (Host header and peer address both checked), and
// every act is recorded as the actor "local". ListenCheck refuses a
// non-loopback address in that mode.
//
// Request bodies are size-limited, must be application/json, must be strict
// flrh-cjson/1 input (no floats, no duplicate keys) and must validate against
// the closed JSON Schemas embedded in this package, which are also the
// request schemas of the OpenAPI document served at /v1/openapi.json. Every
// failure answers {"error":{"type","message","field"}} with a status code
// that says what went wrong.
package server
