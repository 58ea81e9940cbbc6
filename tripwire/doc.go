// Package tripwire checks invariant wires at the runner's phase boundaries.
//
// The verifier (package verify) proves a finished run's record after the
// fact. Wires are its online counterpart: at each boundary of a pass — the
// checkpoint just loaded ([PhaseLoad]), a tick about to be committed
// ([PhaseCommit]), a pass that ended ([PhaseIdle]) — the runner copies what
// it already holds into a [Boundary] and asks [Check] whether anything it
// is about to believe, or to make durable, breaks an invariant the
// runtime's design assumes but no test can exhaust:
//
//   - turn-conservation: every accepted input yields exactly one turn
//     (EVENT_ACCEPTED, then one decision), inputs continue the cursor, and
//     every inbox input consumed was accepted exactly once;
//   - ledger-closure: every committed intent has exactly one receipt or is
//     still owed; none vanish, none are owed without a commit;
//   - append-only: the tick's control records extend the checkpoint's
//     history exactly; the stored event chain only grows and recomputes;
//   - approval-consumption: every grant consumed is consumed once, by one
//     intent of this run, in the transaction that commits the intent;
//   - fencing: no write from a lease generation older than the newest seen;
//   - wedge: a live run rests only where something outside the runner can
//     move it, is owed that something, and leaves no inbox entry behind;
//   - livelock: the round fingerprint never returns to one in the window,
//     and an unchanged round never claims gain (control's no-progress
//     arithmetic judges the round);
//   - code-coherence: the checkpoint's build, workflow and FSM table are
//     the running ones;
//   - alphabet: any unknown state, event, outcome, inbox kind, stage or
//     status trips instead of defaulting.
//
// A trip is not an error to retry. [Dispose] turns a boundary's trips into
// a [Disposition]: freeze the tick (nothing it decided becomes durable),
// record a [Report] as a trace record of kind "tripwire", park the run in
// Degraded Safe Mode or for human reconciliation, and summon a person. It
// concerns the tripped run alone.
//
// Everything here is pure: values in, values out.
package tripwire
