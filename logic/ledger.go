package logic

import (
	"fmt"
	"slices"
	"strings"
)

// ledgerEntry is one named base support.
type ledgerEntry struct {
	fact    Fact
	content string
}

// baseIDs lists the named supports of a base tuple, sorted.
func (m *Materialization) baseIDs(t int, tup []int64) []string {
	if len(m.byFact) == 0 {
		return nil
	}
	ids := m.byFact[m.decode(t, tup).String()]
	return slices.Clone(ids)
}

// sharedBaseIDs is baseIDs without the copy, for a caller that only reads
// them: the fact decoded and its text written in the scratch s.
func (m *Materialization) sharedBaseIDs(t int, tup []int64, s *supportScratch) []string {
	if len(m.byFact) == 0 {
		return nil
	}
	s.args = grown(s.args, len(tup))[:len(tup)]
	s.key = m.decodeInto(t, tup, s.args).appendText(s.key[:0])
	return m.byFact[string(s.key)]
}

// FactChange is one operation on a named base support, in the vocabulary
// of the reference M2 contract: Diff +1 inserts the support ID for the
// signed Fact (Neg is negative polarity), -1 retracts exactly that support.
// Provenance is opaque caller data that belongs to the support's stable
// content: reusing an ID with another fact or provenance is a conflict.
type FactChange struct {
	ID         string
	Fact       Fact
	Diff       int
	Provenance string
}

func (c FactChange) content() string {
	var buf [160]byte // the fact, a NUL and the provenance, written once
	b := append(append(c.Fact.appendText(buf[:0]), 0), c.Provenance...)
	return string(b)
}

// FactDelta is a net change in the presence of a signed fact: +1 it
// appeared, -1 it disappeared (base and derived facts alike).
type FactDelta struct {
	Fact Fact
	Diff int
}

// Result is what [Solve] returns: the next materialization (the prior one
// is consumed), the net fact changes relative to the prior (every present
// fact when there was none), sorted, and every conflict (BOTH atom).
type Result struct {
	Materialization *Materialization
	LogicalTime     int64
	Changes         []FactDelta
	Conflicts       []Conflict
}

// DerivedPrefix starts the ids of derived supports, as in the reference
// M2 contract: "derivation:" and 64 lowercase hex digits. Callers cannot
// insert or retract an id of that form (other ids with the prefix, such as
// "derivation:base:a", are ordinary base supports).
const DerivedPrefix = "derivation:"

func isDerivedID(id string) bool {
	if len(id) != len(DerivedPrefix)+64 || !strings.HasPrefix(id, DerivedPrefix) {
		return false
	}
	for _, c := range id[len(DerivedPrefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ReferenceMaxInputs is the reference contract's ceiling on FactDelta
// inputs per invocation; Solve applies it when no limit is set.
const ReferenceMaxInputs = 10000

// LogicalTime is the logical time of the last Solve that produced m, or -1.
func (m *Materialization) LogicalTime() int64 { return m.time }

// Solve is the pure per-tick waist: it validates a batch of named
// base-support changes against the prior materialization (nil for the
// first tick), applies it incrementally and returns the next
// materialization, the net fact changes and the conflicts. The whole batch
// is checked before anything changes; on any error the prior is untouched.
// Errors carry the reference codes: AMBIGUOUS_BATCH_DELTA (mixed signs or a
// repeated -1 for one ID in a batch), DERIVATION_IDENTITY_CONFLICT (an ID
// reused with different content), UNKNOWN_DERIVATION, DERIVED_SUPPORT_TARGET,
// LOGICAL_TIME_REGRESSION, RULE_BUNDLE_MISMATCH, MALFORMED_FACT_DELTA_INPUT,
// INPUT_BUDGET_EXHAUSTED and the evaluation budgets. lim applies to a nil
// prior; a prior keeps its own limits.
func Solve(prior *Materialization, prog *Compiled, delta []FactChange, logicalTime int64, lim Limits) (*Result, error) {
	return solve(prior, prog, delta, logicalTime, lim, true)
}

// SolveWithoutChanges is [Solve] for a caller that does not read the net
// fact changes: everything it returns, and every error, is what Solve
// returns, except that Result.Changes is nil. The changes are then neither
// decoded nor sorted (decision 0318).
func SolveWithoutChanges(prior *Materialization, prog *Compiled, delta []FactChange, logicalTime int64, lim Limits) (*Result, error) {
	return solve(prior, prog, delta, logicalTime, lim, false)
}

// solve is Solve, keeping the net fact changes in the result when record
// is set.
func solve(prior *Materialization, prog *Compiled, delta []FactChange, logicalTime int64, lim Limits, record bool) (*Result, error) {
	if prior != nil && prior.consumed {
		return nil, errConsumed()
	}
	if prior != nil && prior.c != prog {
		return nil, errorf(ProgramMismatch, Pos{}, "prior materialization belongs to another program")
	}
	if logicalTime < 0 {
		return nil, errorf(MalformedDelta, Pos{}, "logical time %d is negative", logicalTime)
	}
	if prior != nil && prior.time > logicalTime {
		return nil, errorf(LogicalTimeRegress, Pos{}, "logical time %d is before the prior's %d", logicalTime, prior.time)
	}
	if prior != nil {
		lim = prior.lim
	}
	maxIn := lim.MaxInputs
	if maxIn == 0 {
		maxIn = ReferenceMaxInputs
	}
	if len(delta) > maxIn {
		return nil, errorf(InputBudgetExceeded, Pos{}, "%d fact changes exceed the input budget of %d", len(delta), maxIn)
	}
	// Validate in a canonical order so error precedence does not depend on
	// the order of the batch.
	order := make([]int, len(delta))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		da, db := delta[a], delta[b]
		if c := strings.Compare(da.ID, db.ID); c != 0 {
			return c
		}
		if da.Diff != db.Diff {
			return da.Diff - db.Diff
		}
		return strings.Compare(da.content(), db.content())
	})
	check := prior
	if check == nil {
		check = newMaterialization(prog, lim)
	}
	// The batch's changes, which Apply reads and does not keep: a small
	// batch's on the stack.
	var changesBuf [8]Change
	changes := changesBuf[:0]
	type pend struct {
		add bool
		ch  FactChange
	}
	// The ledger's operations stay in Solve: a small batch's on the stack.
	var opsBuf [8]pend
	ledgerOps := opsBuf[:0]
	for k := 0; k < len(order); {
		id := delta[order[k]].ID
		j := k
		for j < len(order) && delta[order[j]].ID == id {
			j++
		}
		group := order[k:j]
		k = j
		first0 := group[0] // named in an error as delta[first0], written only then
		for _, gi := range group {
			ch := delta[gi]
			if ch.Diff != 1 && ch.Diff != -1 {
				return nil, errorf(MalformedDelta, Pos{}, "delta[%d]: diff must be +1 or -1, got %d", gi, ch.Diff)
			}
			if !validID(ch.ID) {
				return nil, errorf(MalformedDelta, Pos{}, "delta[%d]: derivation id %q is not a valid id", gi, ch.ID)
			}
			var buf [8]int64 // the fact is checked, its tuple dropped
			if _, _, _, err := check.encodeInto(ch.Fact, false, buf[:0]); err != nil {
				e := err.(*Error)
				return nil, &Error{Code: MalformedDelta, Msg: fmt.Sprintf("delta[%d]: %s", gi, e.Msg)}
			}
		}
		first := delta[group[0]]
		last := delta[group[len(group)-1]]
		if first.Diff != last.Diff {
			return nil, errorf(AmbiguousBatchDelta, Pos{}, "%s: derivation %s is both inserted and retracted in one batch", deltaAt(first0), id)
		}
		if first.Diff == -1 && len(group) > 1 {
			return nil, errorf(AmbiguousBatchDelta, Pos{}, "%s: derivation %s is retracted more than once in one batch", deltaAt(first0), id)
		}
		for _, gi := range group[1:] {
			if delta[gi].content() != first.content() {
				return nil, errorf(IdentityConflict, Pos{}, "delta[%d]: derivation %s is inserted twice with different content", gi, id)
			}
		}
		if isDerivedID(id) {
			return nil, errorf(DerivedSupportTarget, Pos{}, "%s: %s has the form of a derived support id, which only rules can change", deltaAt(first0), id)
		}
		var prev ledgerEntry
		var known bool
		if prior != nil {
			prev, known = prior.ledger[id]
		}
		if first.Diff == 1 {
			if known {
				if prev.content != first.content() {
					return nil, errorf(IdentityConflict, Pos{}, "%s: derivation %s already supports %s with different content", deltaAt(first0), id, prev.fact)
				}
				continue // exact repeat: idempotent
			}
			changes = append(changes, Change{Fact: first.Fact, Diff: 1})
			ledgerOps = append(ledgerOps, pend{true, first})
			continue
		}
		if !known {
			return nil, errorf(UnknownDerivation, Pos{}, "%s: derivation %s is not a base support", deltaAt(first0), id)
		}
		if prev.content != first.content() {
			return nil, errorf(IdentityConflict, Pos{}, "%s: retraction of %s does not match its content (%s)", deltaAt(first0), id, prev.fact)
		}
		changes = append(changes, Change{Fact: first.Fact, Diff: -1})
		ledgerOps = append(ledgerOps, pend{false, first})
	}
	var m *Materialization
	var err error
	if prior == nil {
		if m, err = Evaluate(prog, nil, lim); err != nil {
			return nil, err
		}
		m.time = -1
	} else {
		m = prior
	}
	snapshot := m.recordChanges
	m.recordChanges = record
	if err := m.update(changes); err != nil {
		m.recordChanges = snapshot
		return nil, err
	}
	// The next materialization and the result in one allocation.
	both := new(struct {
		m Materialization
		r Result
	})
	next := &both.m
	m.moveTo(next)
	next.recordChanges = snapshot
	if next.ledger == nil {
		next.ledger = map[string]ledgerEntry{}
	}
	if next.byFact == nil {
		next.byFact = map[string][]string{}
	}
	for _, op := range ledgerOps {
		if op.add {
			// The key (the fact's text) is the content's leading part.
			content := op.ch.content()
			key := content[:len(content)-len(op.ch.Provenance)-1]
			next.ledger[op.ch.ID] = ledgerEntry{fact: op.ch.Fact, content: content}
			ids := append(next.byFact[key], op.ch.ID)
			slices.Sort(ids)
			next.byFact[key] = ids
		} else {
			key := op.ch.Fact.String()
			delete(next.ledger, op.ch.ID)
			ids := slices.DeleteFunc(slices.Clone(next.byFact[key]), func(s string) bool { return s == op.ch.ID })
			if len(ids) == 0 {
				delete(next.byFact, key)
			} else {
				next.byFact[key] = ids
			}
		}
	}
	next.time = logicalTime
	res := &both.r
	*res = Result{Materialization: next, LogicalTime: logicalTime, Changes: next.lastChanges}
	next.lastChanges = nil
	if prior == nil && record {
		// Relative to no prior, everything present is new (inline facts
		// and what they derive included).
		res.Changes = next.allFacts()
	}
	if res.Conflicts, err = next.Conflicts(); err != nil {
		return nil, err
	}
	return res, nil
}

// validID mirrors the flrh-cjson/1 id grammar: ^[A-Za-z0-9][A-Za-z0-9._:/-]*$,
// at most 128 characters. Each byte's class is read from idClass.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 128 || idClass[s[0]] != idAlnum {
		return false
	}
	for i := 1; i < len(s); i++ {
		if idClass[s[i]] == 0 {
			return false
		}
	}
	return true
}

// The classes of an id's bytes: a letter or digit, which may start it, or
// one of "._:/-", which may follow.
const (
	idAlnum = 1 + iota
	idPunct
)

// idClass is each byte's class in the id grammar, 0 for a byte outside it.
var idClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = idAlnum
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = idAlnum
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = idAlnum
	}
	for _, c := range "._:/-" {
		t[c] = idPunct
	}
	return t
}()

// allFacts lists every present signed fact as a +1 change, sorted.
func (m *Materialization) allFacts() []FactDelta {
	var out []FactDelta
	for t, tb := range m.tables {
		for r := int32(0); r < tb.n; r++ {
			if tb.alive(r) {
				out = append(out, FactDelta{Fact: m.decode(t, tb.tuple(r)), Diff: 1})
			}
		}
	}
	slices.SortFunc(out, func(a, b FactDelta) int { return compareFacts(a.Fact, b.Fact) })
	return out
}

// deltaAt names the delta at index i in an error, as delta[i].
func deltaAt(i int) string { return fmt.Sprintf("delta[%d]", i) }
