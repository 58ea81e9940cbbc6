// Package ground implements the reference ground rule profile of the logic
// layer: solve_l of the flrh-l-kernel/1 contract for the profile
// flrh-l-ground-stratified/1, and step_incremental_l of the
// flrh-l-persistent-incremental/1 contract.
//
// A rule bundle holds fully ground, propositional rules: every atom is a
// non-empty JSON object, every rule names a head literal (positive or
// explicitly negative), required literals, and default-negated atoms that
// point at a completed lower stratum. Base facts arrive as named supports
// (protocol FactDeltas wrapped with a polarity): +1 inserts a support,
// -1 retracts exactly that support. [Solve] validates everything in a fixed
// precedence, applies the batch, computes the bounded least fixpoint stratum
// by stratum, and returns the next materialization (supports, four-valued
// fact states, conflicts, stratum digests) and the net derived FactDelta
// changes, each bound by a domain-separated digest, or a typed [Rejection]
// with no partial state.
//
// [StepIncremental] carries an explicit checkpoint with an evaluation cache
// from one call to the next, rebuilds the fixpoint reusing every cached rule
// evaluation whose context is unchanged, and accepts the result only if it
// is byte-identical to [Solve]'s.
//
// Every function is pure: no clock, randomness, environment, I/O or
// goroutines; inputs are never modified; equal inputs give equal bytes,
// whatever order set-like collections were listed in.
//
// The general Datalog engine lives in package logic; this package is the
// conformance profile and the per-tick waist the runner calls.
package ground
