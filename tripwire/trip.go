package tripwire

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
)

// Severity says how far a trip shakes the runtime's trust in itself.
type Severity string

const (
	// SeverityDegrade: the machinery misbehaved (a wedge, a livelock, a
	// defaulted symbol, mixed code) but the durable record is intact. The
	// run is parked in Degraded Safe Mode.
	SeverityDegrade Severity = "degrade"
	// SeverityHalt: the durable record or an effect's fate is in doubt (a
	// rewritten chain, a stale writer, a vanished intent, a reused grant).
	// A person must reconcile before anything else happens.
	SeverityHalt Severity = "halt"
)

// Trip is one wire's finding at one boundary.
type Trip struct {
	Wire     string   `json:"wire"`
	Severity Severity `json:"severity"`
	// Where is a JSON pointer into the Boundary naming the offending value.
	Where string `json:"where"`
	// Evidence holds sha256 digests of the values the wire compared.
	Evidence    []string `json:"evidence"`
	Explanation string   `json:"explanation"`
}

func (t Trip) String() string {
	return fmt.Sprintf("tripwire %s (%s) at %s: %s", t.Wire, t.Severity, t.Where, t.Explanation)
}

// Park is where a tripped run waits for a person.
type Park string

const (
	// ParkSafeMode: Degraded Safe Mode; only verification-class effects
	// may run, everything else is held, and only a person leaves it.
	ParkSafeMode Park = "DEGRADED_SAFE_MODE"
	// ParkHumanReconciliation: a person reconciles the run's record and
	// effects before it may continue.
	ParkHumanReconciliation Park = "HUMAN_RECONCILIATION"
)

// Capabilities a summoned person needs to release a parked run.
const (
	SummonSafeMode  = "mrp.leave_safe_mode"
	SummonReconcile = "receipt.confirm_external"
)

// Disposition is what the runner must do about a boundary's trips. It
// always degrades toward recording: the run's own tick is frozen, its
// report is written, and the run is parked; other runs are never touched.
type Disposition struct {
	// Freeze: the tick that tripped is not committed; nothing it decided
	// becomes durable except the report.
	Freeze bool `json:"freeze"`
	Park   Park `json:"park,omitempty"`
	// Summon is the capability the person who releases the run needs.
	Summon string `json:"summon,omitempty"`
}

// Dispose decides the disposition of a boundary's trips. No trips: carry
// on. A halt trip, or any trip while the run owes the world an effect whose
// fate only a person can settle (committed or unknown), parks the run for
// human reconciliation; anything else parks it in Degraded Safe Mode.
func Dispose(b Boundary, trips []Trip) Disposition {
	if len(trips) == 0 {
		return Disposition{}
	}
	human := false
	for _, t := range trips {
		human = human || t.Severity == SeverityHalt
	}
	open := b.OpenAfter
	if b.Phase != PhaseCommit {
		open = b.OpenBefore
	}
	for _, e := range open {
		human = human || e.Stage == StageCommitted || e.Stage == StageUnknown
	}
	if human {
		return Disposition{Freeze: true, Park: ParkHumanReconciliation, Summon: SummonReconcile}
	}
	return Disposition{Freeze: true, Park: ParkSafeMode, Summon: SummonSafeMode}
}

// ReportKind is the trace record kind of a tripwire report.
const ReportKind = "tripwire"

// ReportFormat versions the report layout.
const ReportFormat = "flrh-tripwire-report/1"

// Report is the durable record of a trip: the frozen boundary (by digest,
// and in full), what tripped, and what the runner did about it.
type Report struct {
	Kind        string      `json:"kind"`
	Format      string      `json:"format"`
	RunID       string      `json:"run_id"`
	Phase       Phase       `json:"phase"`
	State       string      `json:"state"`
	Boundary    Boundary    `json:"boundary"`
	BoundaryDig string      `json:"boundary_digest"`
	Trips       []Trip      `json:"trips"`
	Disposition Disposition `json:"disposition"`
}

// NewReport freezes a boundary and its trips into a report. The trips are
// ordered by wire, pointer and explanation so that the same findings always
// give the same bytes.
func NewReport(b Boundary, trips []Trip) (Report, error) {
	d, err := cjson.DigestOf(b)
	if err != nil {
		return Report{}, fmt.Errorf("tripwire: boundary is not encodable: %w", err)
	}
	ts := slices.Clone(trips)
	slices.SortStableFunc(ts, compareTrips)
	state := b.After.State
	if b.Phase != PhaseCommit || state == "" {
		state = b.Before.State
	}
	return Report{Kind: ReportKind, Format: ReportFormat, RunID: b.RunID, Phase: b.Phase, State: state,
		Boundary: b, BoundaryDig: d, Trips: ts, Disposition: Dispose(b, ts)}, nil
}

// Encode returns the report's canonical bytes, the body of the trace
// record of kind ReportKind.
func (r Report) Encode() ([]byte, error) { return cjson.Marshal(r) }

func compareTrips(a, b Trip) int {
	for _, c := range [][2]string{{a.Wire, b.Wire}, {a.Where, b.Where}, {a.Explanation, b.Explanation}} {
		if c[0] < c[1] {
			return -1
		}
		if c[0] > c[1] {
			return 1
		}
	}
	return 0
}

// evidenceDigest returns s itself when it already is a digest, and
// otherwise the digest of the named value, domain-separated.
func evidenceDigest(name string, v any) string {
	if s, ok := v.(string); ok && cjson.ValidDigest(s) {
		return s
	}
	d, err := cjson.DigestOf(map[string]any{"kind": "TripwireEvidence", "version": "flrh-tripwire-evidence/1", "name": name, "value": v})
	if err != nil {
		d, _ = cjson.DigestOf(map[string]any{"kind": "TripwireEvidence", "version": "flrh-tripwire-evidence/1", "name": name, "value": fmt.Sprint(v)})
	}
	return d
}
