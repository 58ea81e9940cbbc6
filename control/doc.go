// Package control is the run FSM and the loop contract: the sole authority
// over where a run is, what may move it, and when it must stop.
//
// The run FSM is data. The embedded table (runfsm.json, format
// flrh-control-fsm/1) declares 11 atomic and 9 final states, 28 events each
// with the (actor role, capability) pairs allowed to issue it, 25 guarded
// transitions with the evidence each requires, and the global interrupts
// CANCEL, TIMEOUT and BUDGET_EXHAUSTED, which are deferred inside the
// effect-critical states. [Load] validates a table completely before
// anything runs: unknown or unreachable states, ambiguous or duplicate
// transitions, events nobody (or a model) may issue, interrupts that could
// leak past an effect, and violations of the five safety properties are
// typed [*Error] values with a JSON pointer.
//
// [Machine.Step] is pure: a [Configuration] (state, pending interrupts,
// guard context, sequence number) and an [Event] give a [Result] — the next
// configuration, the effects to persist, and an audit [Record]. An event that
// fails the event schema, comes from a pair the table does not list, hits a
// final state, has no transition, or whose guard is false is rejected and
// audited: the configuration is returned unchanged and the only effect is
// the table's audit effect. The runner drives runs through Step alone.
//
// The loop contract (loopcontract.json, format flrh-loop-contract/1) is
// bound to the table by digest; [LoadContract] refuses a contract for any
// other table. It carries the numbers the pure arithmetic in this package
// applies: [Budgets.Charge] (hard limits, soft checkpoint at 80 %),
// [NoProgress.Observe] (weighted gain over a window of fingerprinted rounds),
// [RetryPolicy.Decide] (bounded exponential backoff with deterministic
// jitter; unknown outcomes are reconciled, never retried) and
// [IdempotencyKey].
//
// [DecodeTraces] and [Machine.RunCase] read and run trace vectors in the
// run-fsm-traces/v1 format; `flrh fsm check` is their command-line face.
//
// Nothing here reads a clock, randomness, the environment or files.
package control
