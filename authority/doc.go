// Package authority is H, the pure authority core of flrh: it decides, with
// evidence, whether and how each proposed action may cross into the world.
//
// Everything here takes values and returns values. Time is an input
// ("now" is the caller's logical time), keys are inputs, the approvals
// ledger is an input; nothing reads a clock, randomness, files or the
// network, so every decision replays byte for byte.
//
// # The pieces
//
//   - Action Tickets ([Ticket], [DraftTicket]): the accountable statement of
//     what would happen — action, destination, scope, canonical parameters,
//     declared side effects ([ValidateSideEffects]: NONE stands alone) and
//     risk, completeness with the missing fields, preview and confirmation
//     requirements, status — with a deterministic, digested preview
//     ([RenderPreview]). [Ticket.Reduced] is the view the MRP machine reads.
//     A tool is verification-class exactly when its manifest declares
//     side_effects = [NONE] ([VerificationClass]).
//   - Gates G1, H1, G2, G3, G4 ([Policy]): rules in flrh's Datalog over
//     ticket facts ([GateVocabulary]), evaluated by package logic, yielding
//     ALLOW, SHAPE, ASK_FIRST, REFUSE or ESCALATE with provenance. Deny by
//     default (no G2 rule decides → REFUSE); an evaluation error never
//     allows.
//   - The Meta-Priority Matrix ([Resolve]): tiers 0–4, the highest tier
//     present decides, hard gates win outright, conflicts go to the more
//     conservative outcome, lower tiers never weaken, Contestable Gate Mode.
//   - Capabilities ([Capability], [SignCapability], [Attenuate],
//     [Keyring]): Ed25519-signed by operator keys, attenuation only narrows.
//   - Approvals ([ApprovalRequest], [Approval], [Grant], [Revalidate],
//     [Ledger]): bound to the eleven loop-contract fields, one-time,
//     revocable until commit, expiry exclusive; Revalidate is what the
//     runner calls again inside its commit transaction.
//   - [Authorize]: a stable batch, a policy snapshot, capabilities and
//     approvals become, per proposal, an Action Ticket, the MRP state and an
//     EffectIntent, an approval request, options for a person or a typed
//     rejection, plus the run-FSM event the batch implies and the turn's FHR.
//     [SealBatch] seals and checks a published batch once; the
//     [CheckedBatch] it returns spares Authorize checking that batch again.
//     [SealBatchDigested] does the same with the two digests R took when
//     it published the batch.
//   - [ProjectIntent]: the reference's singleton projection (M4A), which
//     agrees with the reference corpus byte for byte.
//
// Bad input is a typed [Rejection] (a registered code and a JSON pointer),
// a [TicketError], a [CapabilityError] or a [PolicyError]; nothing panics on
// user input and nothing is changed by a rejection.
package authority
