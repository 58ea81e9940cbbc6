// Package effect is where authorised intents meet the outside world: the
// adapter interface every destination is reached through, a registry of
// adapters by effect type and version, the reconciler that settles an
// attempt whose outcome is unknown, and the construction of the protocol
// ActionReceipt from what an adapter observed.
//
// The package is shell code (adapters do I/O), but it holds to the
// runtime's promises:
//
//   - Nothing here decides whether an effect may run. An adapter is handed
//     an intent that H authorised and the store committed; it only performs
//     and observes.
//   - Unknown is not success. An adapter reports [Unknown] whenever the
//     request may have reached the destination and no trustworthy answer came
//     back. The reconciler turns unknown into success or failure only on the
//     destination's own evidence, looked up by idempotency key and content
//     digest, and otherwise answers still-unknown or human-required.
//   - Retries are never blind: a retry of the same intent carries the same
//     idempotency key and the same content, so a destination that applied the
//     first attempt answers the original result instead of applying twice.
//
// The sub-packages hold the built-in pieces: httpwire (the pure
// flrh-effect-http/1 wire protocol), httpadapter (an Adapter over HTTP) and
// sandbox (a real HTTP destination for demos and tests, also served by
// "flrh sandbox").
package effect
