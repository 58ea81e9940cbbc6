// Package aif is the active-inference controller: a pure, bitwise
// reproducible implementation of discrete generative models in the standard
// A, B, C, D, E form, with state inference, free energy per tick, expected
// free energy as risk plus ambiguity, a policy posterior and action
// selection.
//
// # A tour
//
// A [Model] has hidden-state factors (each with states, actions, a
// transition tensor B and a prior D) and observation modalities (each with
// outcomes, a likelihood tensor A over the joint state, and log-preferences
// C), a set of policies (sequences of one action per factor), an optional
// habit E, a policy precision γ and a temporal discount δ. [Decode] reads a
// JSON model document (kind "flrh.aif.model"); [Model.Validate] checks a Go
// value. Both refuse malformed models (columns that do not sum to 1,
// shape mismatches, negative counts, NaN or ±Inf) with an [*Error] whose
// Code says what and whose Pointer says where, e.g.
// AIF_NOT_NORMALIZED at /modalities/1/A/*/2/0.
//
// One tick is [Model.Step]: [Model.Infer] computes the posterior over
// states (exact Bayes for one factor, the mean-field fixed point for
// several) and its variational free energy; [Model.EvaluatePolicies] scores
// every policy by expected free energy
//
//	G(π) = Σ_t δ^t [ Σ_m KL[Q(o_m|π) ‖ C_m]  +  Σ_m E_Q(s|π) H[P(o_m|s)] ]
//	          =        risk                  +        ambiguity
//
// and reports the utility and information-gain views (G = −(utility + info
// gain)) under their own names; [Model.PolicyPosterior] forms
// q(π) = softmax(−γG + ln E); [SelectAction] takes the most probable first
// action or samples it from a stream seeded by the triggering event's
// digest. [Model.Predict] is the one transition kernel: the next tick's
// prior and every policy's forward prediction call it. [Model.LearnA] and
// [Model.LearnB] are Dirichlet updates of pA and pB.
//
// A posterior that cannot be formed (an observation no state with prior
// mass can produce, or a numerical failure) is never propagated: the belief
// is reset to the prior and [Posterior.Degenerate] names the reason.
//
// # Reproducibility
//
// Every real quantity leaves the package as a fixed-point integer
// ([fixed.Num], scale 10⁹) in a canonical record ([StepRecord],
// [RunRecord]). Computation uses float64 with an explicit conversion around
// every product that feeds a sum (so no multiply-add is fused on any
// architecture) and the package's own exp, log, lgamma and digamma, because
// the standard library's have architecture-specific assembly. Tests pin
// golden digests that are checked on amd64 and, under qemu-user, on arm64.
//
// # Sub-packages
//
//   - [flrh.dev/flrh/aif/channel]: continuous channel beliefs and their run loop (R1–R4, R7, R8)
//   - [flrh.dev/flrh/aif/choice]: scorecard, candidate set, temperature, cascades (R5, R6, R13, R14)
//   - [flrh.dev/flrh/aif/budget]: the exact shared-budget arbiter (R11)
//   - [flrh.dev/flrh/aif/strategy]: the Beta strategic level (R15)
//   - [flrh.dev/flrh/aif/evidence]: evidence tags, two-layer calibration, loop closure, scheduled observer (R9, R10, R12, R16)
//   - [flrh.dev/flrh/aif/reduce]: Bayesian model reduction (R17)
//   - [flrh.dev/flrh/aif/fixed]: the fixed-point representation
//   - [flrh.dev/flrh/aif/schema]: the JSON Schema of every record kind
package aif
