// Package mrp is the deliberation machine a person sees while flrh decides:
// HOLD, OPTIONS, TEST and DECIDE (DECIDE may be a refusal), and behind them
// FAILSAFE, EXIT and ESCALATE.
//
// The machine is a value ([Machine]) advanced only by [Step] over a
// transition table ([Table]) whose every row names its trigger, guard,
// target and source. Step is pure. It enforces:
//
//   - the reduced Action Ticket interface ([TicketView]): no DECIDE for an
//     incomplete ticket or one with an outstanding preview or confirmation;
//   - TEST and Degraded Safe Mode admit verification-class actions only
//     ([Machine.Admits]); safe mode is left only by a person;
//   - closure budgets ([Budgets]): the turn budget spent in HOLD leads to
//     OPTIONS or DECIDE with a summary, deep-loop or session budget to EXIT,
//     loops without progress to EXIT or ESCALATE;
//   - care cool-down: no deep loop until CARE_COOLOFF_OK;
//   - human-initiated transitions, each needing a human actor with a known
//     role and the matching capability; a model actor can issue nothing.
//
// Every event, accepted or refused, appends to the Journey Strip
// ([Machine.Journey], projected by [Machine.Strip]); a turn's full record
// is its [FHR].
package mrp
