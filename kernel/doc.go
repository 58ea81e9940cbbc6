// Package kernel is F, the pure functional step of flrh:
//
//	Step(snapshot, acceptedEvent) -> Transition | Rejection
//
// A Transition carries the fresh next snapshot, the signed FactDeltas and
// the inert EffectProposals the event yields, and a transition digest that
// binds all of them; a Rejection carries one of fourteen codes, the JSON
// Pointer of the first fault, and a small context. Step never mutates its
// inputs and never emits an EffectIntent, capability, approval, assessed
// risk or effect idempotency key: those belong to the authority (H).
//
// The kernel owns the mechanics every workflow shares — canonical input,
// closed shapes, version pinning, aggregate identity, optimistic revision,
// monotone logical time, closure, identities and digests — and a Domain
// supplies what is particular to one workflow: which payloads it accepts,
// how an event folds into its state, and which facts and proposals an event
// yields. Three domains ship with the package:
//
//   - Observation, the reference profile flrh.m1.observation-recorded/1,
//     whose transitions agree byte for byte with the reference goldens;
//   - Declarative, configured from JSON (event type → state updates, fact
//     templates, proposal templates) for users who write no Go;
//   - any Go type implementing Domain.
//
// All three run through the same checks in the same order, so a domain can
// never weaken them.
//
// The package is pure: no clock, randomness, environment, file, network or
// goroutine. Logical time is an input.
package kernel
