// Package frontier is R, the reactive layer of flrh: a pure scalar-frontier
// kernel (contract flrh-r-kernel/1, profile flrh-r-scalar-frontier/1) that
// turns a stream of proposal and eligibility-verdict deliveries into
// atomic, ordered, bounded batches.
//
// One function does the work:
//
//	Step(prior *State, profile Profile, cmd Command) (*Transition, *Rejection)
//
// It is step_r of the reference contract. A command is one of
//
//   - ApplyDeltaBatch: signed value deltas (+1 insert, -1 retract) of exact
//     protocol EffectProposal and EligibilityVerdict values, each delivered
//     by a declared source at a logical time;
//   - AdvanceFrontier: a source asserts it will deliver nothing earlier than
//     a low watermark (monotone; a regression is FRONTIER_REGRESSION);
//   - GrantDemand: a consumer asks for more whole batches.
//
// The global low watermark is null until every declared source has reported
// and is then their minimum. An epoch (the values at one logical time)
// stabilizes only when the global watermark is strictly greater than it.
// A stable epoch becomes exactly one batch, published once demand allows, in
// ascending logical time and then canonical bytes. At stabilization the
// epoch must pair every proposal with exactly one verdict by proposal_id
// (else UNRESOLVED_DEPENDENCY) under the same rule-set version. R transports
// eligible, ineligible and conflicted verdicts alike: judging eligibility is
// L's business (see package seam), authorizing effects is H's.
//
// Every bound (deltas per command, active values, open epochs, ready
// batches, demand per command, outstanding demand) is enforced under the
// reject_new policy: a command that would exceed one is refused whole.
// A rejection never carries a state, so refusing changes nothing; an
// accepted Transition carries a fresh next State, the published batches,
// backpressure counts against the limits, and statistics.
//
// Identities are derived, never chosen: a value's digest, a delivery id, the
// command, batch, state and transition digests are SHA-256 over flrh-cjson/1
// bytes of the contract's preimages, and agree byte for byte with the
// reference implementation's goldens. Values, deltas, states and batches are
// sealed when they are built: their canonical bytes and digests are computed
// once, so Step does no hashing per delta beyond what the contract's digests
// over whole states require.
//
// The package is pure: no clock, randomness, I/O or goroutines. Logical time
// is an input like any other.
package frontier
