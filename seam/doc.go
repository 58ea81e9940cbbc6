// Package seam is the L→R seam of flrh: project_lr of the reference contract
// flrh-lr-seam/1 with profile flrh-lr-four-valued/1.
//
//	Project(l Materialization, r frontier.Profile, b BindingProfile, q QueryBatch) (*Projection, *Rejection)
//
// It reads the four-valued materialization of L (package logic) through a
// frozen, explicit query mapping and writes exactly one EligibilityVerdict
// per query, plus the R command (a frontier.ApplyDeltaBatch) that inserts
// each proposal and its verdict as a pair of +1 deltas at L's logical time.
//
// The truth table is fixed. A positive literal is satisfied by TRUE_ONLY, a
// negative one by FALSE_ONLY; BOTH is a conflict and NEITHER is unsatisfied
// (unproven means denied). A query whose requirements are all satisfied is
// eligible; any conflict makes it conflicted, whatever else holds; anything
// else is ineligible. The verdict's support_derivation_ids are exactly the
// evidence consulted: the supports that decided each requirement, both
// sides for a conflict, none for NEITHER.
//
// Every proposal precondition is bound exactly once: by a fact requirement
// on a declared query atom, or as a frontier precondition that the seam
// leaves to R. No query is inferred and no atom is looked up that the rule
// bundle did not declare. An empty query batch yields no verdicts and a nil
// command, never an empty batch.
//
// Verdict ids, query digests and the projection digest are derived from the
// contract's preimages in flrh-cjson/1 and match the reference goldens byte
// for byte. Validation is atomic: any problem returns a Rejection naming the
// code, a JSON Pointer and only the digests already validated.
//
// Materialization is the seam's own minimal view of an L result — the bound
// digests and versions, the declared query atoms, and each atom's positive
// and negative supports — so that an adapter from the logic engine is a
// direct copy. The package is pure.
package seam
