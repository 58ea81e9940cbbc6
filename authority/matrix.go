package authority

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"flrh.dev/flrh/mrp"
)

// Decision is a gate decision. Decisions are ordered by conservativeness:
// Refuse > Escalate > AskFirst > Shape > Allow. The zero value is "no
// decision", which authorizes nothing.
type Decision int

// Gate decisions, least to most conservative.
const (
	NoDecision Decision = iota
	Allow
	ShapeDecision
	AskFirst
	Escalate
	Refuse
)

var decisionNames = [...]string{"", "ALLOW", "SHAPE", "ASK_FIRST", "ESCALATE", "REFUSE"}

func (d Decision) String() string {
	if d < 0 || int(d) >= len(decisionNames) {
		return fmt.Sprintf("Decision(%d)", int(d))
	}
	return decisionNames[d]
}

// MarshalText renders the decision by name.
func (d Decision) MarshalText() ([]byte, error) {
	if d < 0 || int(d) >= len(decisionNames) {
		return nil, fmt.Errorf("authority: unknown decision %d", int(d))
	}
	return []byte(decisionNames[d]), nil
}

// MarshalJSON renders the decision as its name ("" for none).
func (d Decision) MarshalJSON() ([]byte, error) {
	b, err := d.MarshalText()
	if err != nil {
		return nil, err
	}
	return []byte(`"` + string(b) + `"`), nil
}

// ParseDecision reads a decision name.
func ParseDecision(s string) (Decision, bool) {
	for i, n := range decisionNames {
		if i > 0 && n == s {
			return Decision(i), true
		}
	}
	return NoDecision, false
}

// move is the MRP move a tier-1 gate decision asks for.
func (d Decision) move() mrp.Move {
	switch d {
	case Allow, NoDecision:
		return mrp.MoveProceed
	case ShapeDecision:
		return mrp.MoveConstrain
	case AskFirst:
		return mrp.MoveAskFirst
	case Escalate:
		return mrp.MoveEscalate
	}
	return mrp.MoveRefuse
}

// Gate identifiers.
const (
	GateG1 = "G1" // hard legal and safety limits
	GateH1 = "H1" // hard harness limits
	GateG2 = "G2" // policy
	GateG3 = "G3" // safety and harm heuristics: contestable, strong bias to caution
	GateG4 = "G4" // cultural and community norms: fully contestable
)

// Gates lists the gates in evaluation order.
var Gates = []string{GateG1, GateH1, GateG2, GateG3, GateG4}

func isGate(s string) bool {
	for _, g := range Gates {
		if g == s {
			return true
		}
	}
	return false
}

// Signal kinds outside the gates.
const (
	KindGate          = "GATE"          // tier 0 (hard refusal) or tier 1
	KindWatchdog      = "WATCHDOG"      // tier 0
	KindExfiltration  = "EXFILTRATION"  // tier 0
	KindVerification  = "VERIFICATION"  // tier 2: maths or fact challenge, drift, timing anomaly
	KindClarification = "CLARIFICATION" // tier 3: presupposition, referent, deference, cool-down, context limit
	KindAttunement    = "ATTUNEMENT"    // tier 4: tone and pace
)

// Reason is the provenance of a signal: which rule fired over which facts,
// and which facts were required to be absent. A rule's aggregates are
// among its facts, after the facts it matched, each with its value and
// the facts it ranged over (`count : { param_sym(t, _, _) } = 3 over
// …`); a member of their own would have grown every reason a decision
// records, aggregates or not.
type Reason struct {
	Rule   string   `json:"rule"`
	Facts  []string `json:"facts"`
	Absent []string `json:"absent"`
	Detail string   `json:"detail"`
}

// Signal is one input to the Meta-Priority Matrix.
type Signal struct {
	Tier     int      `json:"tier"`
	Kind     string   `json:"kind"`
	Source   string   `json:"source"` // the gate id for gate signals
	Decision Decision `json:"decision"`
	Reason   Reason   `json:"reason"`
	// Options are the safe paths a contestable gate offers.
	Options []string `json:"options"`
	// Constraints are what a SHAPE decision narrows.
	Constraints []Constraint `json:"constraints"`
}

// GateSignal classifies a gate decision into its tier: a refusal by a hard
// gate (G1, H1) is a tier-0 hard block; every other gate decision is tier 1.
func GateSignal(gate string, d Decision, why Reason) Signal {
	tier := 1
	if d == Refuse && (gate == GateG1 || gate == GateH1) {
		tier = 0
	}
	return Signal{Tier: tier, Kind: KindGate, Source: gate, Decision: d, Reason: why}
}

// Tie records disagreeing tier-1 decisions resolved to the more
// conservative one.
type Tie struct {
	Decisions []Decision `json:"decisions"`
	Sources   []string   `json:"sources"`
	Winner    Decision   `json:"winner"`
}

// Resolution is the Matrix's verdict over one turn's signals.
type Resolution struct {
	// HighestTier is the highest-ranking (lowest-numbered) tier present,
	// or -1 when there were no signals.
	HighestTier int `json:"highest_tier"`
	// Decision is the authorization outcome of tiers 0 and 1: REFUSE on
	// any tier-0 block, else the most conservative gate decision, else
	// NoDecision when no gate spoke.
	Decision Decision `json:"decision"`
	// Move is what MRP must do.
	Move mrp.Move `json:"move"`
	// Contestable is set when Contestable Gate Mode opened: the winning
	// decision came from contestable gates only and they offered more
	// than one safe path; Options lists those paths.
	Contestable bool         `json:"contestable"`
	Options     []string     `json:"options"`
	Ties        []Tie        `json:"ties"`
	Constraints []Constraint `json:"constraints"`
	// Signals are the inputs in canonical order.
	Signals []Signal `json:"signals"`
}

// MatrixError is a malformed signal.
type MatrixError struct {
	Index int
	Msg   string
}

func (e *MatrixError) Error() string { return fmt.Sprintf("matrix: signal %d: %s", e.Index, e.Msg) }

func validSignal(s Signal) error {
	if s.Tier < 0 || s.Tier > 4 {
		return fmt.Errorf("tier %d outside 0..4", s.Tier)
	}
	switch s.Kind {
	case KindGate:
		if !isGate(s.Source) {
			return fmt.Errorf("unknown gate %q", s.Source)
		}
		if s.Decision < Allow || s.Decision > Refuse {
			return fmt.Errorf("gate signal without a decision")
		}
		if want := GateSignal(s.Source, s.Decision, Reason{}).Tier; s.Tier != want {
			return fmt.Errorf("%s %s belongs to tier %d, not %d", s.Source, s.Decision, want, s.Tier)
		}
	case KindWatchdog, KindExfiltration:
		if s.Tier != 0 {
			return fmt.Errorf("%s is a tier-0 signal", s.Kind)
		}
	case KindVerification:
		if s.Tier != 2 {
			return fmt.Errorf("%s is a tier-2 signal", s.Kind)
		}
	case KindClarification:
		if s.Tier != 3 {
			return fmt.Errorf("%s is a tier-3 signal", s.Kind)
		}
	case KindAttunement:
		if s.Tier != 4 {
			return fmt.Errorf("%s is a tier-4 signal", s.Kind)
		}
	default:
		return fmt.Errorf("unknown signal kind %q", s.Kind)
	}
	if s.Kind != KindGate && s.Decision != NoDecision {
		return fmt.Errorf("only gate signals carry a decision")
	}
	return nil
}

// contestable reports whether a gate's decision may be contested: G4 is
// fully contestable; G3 only when it asks first or shapes (its bias to
// caution keeps its refusals and escalations standing).
func contestable(s Signal) bool {
	switch s.Source {
	case GateG4:
		return true
	case GateG3:
		return s.Decision == AskFirst || s.Decision == ShapeDecision
	}
	return false
}

// sortSignals returns signals in the matrix's order (a stable sort by
// signalKey): a sorted copy, or, when share is set and they are in that
// order already, signals itself capped at its length. No signals are nil.
func sortSignals(signals []Signal, share bool) []Signal {
	n := len(signals)
	if n == 0 {
		return nil
	}
	if share && n == 1 {
		return signals[:1:1]
	}
	var idx []int
	if n > 1 {
		// Each signal's key is built once, not at every comparison; a
		// stable sort by the keys is the order sort.SliceStable gave.
		keys := make([]string, n)
		idx = make([]int, n)
		for i := range signals {
			keys[i], idx[i] = signalKey(signals[i]), i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		if share && slices.IsSorted(idx) {
			return signals[:n:n]
		}
	}
	sorted := slices.Clone(signals)
	for k, i := range idx {
		sorted[k] = signals[i]
	}
	return sorted
}

func signalKey(s Signal) string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%02d\x00%s\x00%s\x00%s", s.Tier, s.Kind, s.Source, int(s.Decision), s.Reason.Rule, strings.Join(s.Reason.Facts, "\x01"), strings.Join(s.Options, "\x01"))
}

// Resolve applies the Meta-Priority Matrix to one turn's signals. The
// highest-ranking tier present decides with its most conservative action;
// tier 0 wins outright; within tier 1 conflicts go to the more
// conservative decision and are logged as ties; lower tiers may make the
// move more conservative but never less. The result does not depend on the
// order of the signals.
func Resolve(signals []Signal) (Resolution, error) { return resolve(signals, false) }

// resolveShared is Resolve for signals the caller owns and never writes
// again: when they are already in the matrix's order (one signal always
// is) the resolution's sorted list is signals itself, capped at its
// length, rather than a copy; otherwise it is a new sorted copy.
func resolveShared(signals []Signal) (Resolution, error) {
	return resolve(signals, true)
}

func resolve(signals []Signal, share bool) (Resolution, error) {
	for i, s := range signals {
		if err := validSignal(s); err != nil {
			return Resolution{}, &MatrixError{i, err.Error()}
		}
	}
	sorted := sortSignals(signals, share)
	res := Resolution{HighestTier: -1, Signals: sorted, Options: []string{}, Ties: []Tie{}, Constraints: []Constraint{}}
	if len(sorted) == 0 {
		res.Move = mrp.MoveProceed
		return res, nil
	}
	res.HighestTier = sorted[0].Tier
	if res.HighestTier == 0 {
		// Hard blocks win outright: nothing below can soften them.
		res.Decision, res.Move = Refuse, mrp.MoveRefuse
		for _, s := range sorted {
			if s.Tier == 0 && s.Kind != KindGate {
				res.Move = mrp.MoveFailsafe
			}
		}
		return res, nil
	}
	// The tier-1 signals, in canonical order, are those of sorted with
	// Tier 1 (read in place rather than copied out).
	tier1, decided := 0, Decision(0)
	var mixed bool
	for _, s := range sorted {
		if s.Tier == 1 {
			if tier1 > 0 && s.Decision != decided {
				mixed = true
			}
			tier1, decided = tier1+1, s.Decision
			if s.Decision > res.Decision {
				res.Decision = s.Decision
			}
		}
	}
	move := res.Decision.move()
	if tier1 > 0 {
		if mixed {
			// More than one decision: a tie, logged with every source.
			seen := map[Decision]bool{}
			var tie Tie
			for _, s := range sorted {
				if s.Tier != 1 {
					continue
				}
				if !seen[s.Decision] {
					seen[s.Decision] = true
					tie.Decisions = append(tie.Decisions, s.Decision)
				}
				tie.Sources = appendUnique(tie.Sources, s.Source)
			}
			sort.Slice(tie.Decisions, func(i, j int) bool { return tie.Decisions[i] < tie.Decisions[j] })
			sort.Strings(tie.Sources)
			tie.Winner = res.Decision
			res.Ties = append(res.Ties, tie)
		}
		allContestable := true
		var paths []string
		for _, s := range sorted {
			if s.Tier != 1 || s.Decision != res.Decision {
				continue
			}
			if !contestable(s) {
				allContestable = false
			}
			for _, o := range s.Options {
				paths = appendUnique(paths, o)
			}
		}
		if allContestable && len(paths) > 1 {
			sort.Strings(paths)
			res.Contestable, res.Options = true, paths
			move = mrp.MoveOptions
		}
		if res.Decision == ShapeDecision || res.Decision == AskFirst {
			for _, s := range sorted {
				if s.Tier == 1 {
					res.Constraints = append(res.Constraints, s.Constraints...)
				}
			}
		}
	}
	for _, s := range sorted {
		var m mrp.Move
		switch s.Tier {
		case 2:
			m = mrp.MoveTest
		case 3:
			m = mrp.MoveHold
		default:
			continue
		}
		if m > move {
			move = m
		}
	}
	res.Move = move
	return res, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
