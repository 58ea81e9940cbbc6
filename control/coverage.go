package control

import (
	"fmt"
	"slices"
	"strings"
)

// Coverage accumulates what a set of trace runs exercised, in the terms the
// conformance contract asks for: every transition taken, every guard seen
// false, every final state reached, every interrupt both immediate and
// deferred, and the refusal reasons met. The zero value is ready to use.
type Coverage struct {
	transitions, falseGuards, finals, immediate, deferred, reasons map[string]bool
}

func mark(m *map[string]bool, k string) {
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[k] = true
}

// Add records the steps of one case run.
func (cv *Coverage) Add(m *Machine, r CaseResult) {
	for _, rec := range r.Records {
		if !rec.Accepted {
			mark(&cv.reasons, string(rec.Reason))
			if rec.Reason == ReasonGuardFalse {
				mark(&cv.falseGuards, rec.Guard)
			}
			continue
		}
		switch {
		case strings.HasPrefix(rec.Transition, labelInterrupt):
			mark(&cv.immediate, strings.TrimPrefix(rec.Transition, labelInterrupt))
		case strings.HasPrefix(rec.Transition, labelDefer):
			mark(&cv.deferred, strings.TrimPrefix(rec.Transition, labelDefer))
		default:
			mark(&cv.transitions, rec.Transition)
		}
		if m.Final(rec.To) {
			mark(&cv.finals, rec.To)
		}
	}
}

// CoverageReport lists, per aspect, how much of the machine was exercised
// and what was not.
type CoverageReport struct {
	Transitions Covered  `json:"transitions"`
	FalseGuards Covered  `json:"false_guards"`
	FinalStates Covered  `json:"final_states"`
	Interrupts  Covered  `json:"interrupts"` // exercised at all, immediate or deferred
	Immediate   Covered  `json:"immediate_interrupts"`
	Deferred    Covered  `json:"deferred_interrupts"`
	Rejections  []string `json:"rejection_reasons"`
}

// Covered is one aspect of a coverage report.
type Covered struct {
	Hit     int      `json:"hit"`
	Of      int      `json:"of"`
	Missing []string `json:"missing"`
}

func covered(all []string, hit map[string]bool) Covered {
	c := Covered{Of: len(all), Missing: []string{}}
	for _, x := range all {
		if hit[x] {
			c.Hit++
		} else {
			c.Missing = append(c.Missing, x)
		}
	}
	return c
}

// Complete reports whether the runs meet the conformance coverage bar:
// every transition, every guard's false branch, every final state, every
// interrupt (in either form) and every interrupt deferred, plus at least one
// refusal. Immediate interrupts are reported but not required, since an
// immediate interrupt differs from a deferred one only in its target.
func (r CoverageReport) Complete() bool {
	for _, c := range []Covered{r.Transitions, r.FalseGuards, r.FinalStates, r.Interrupts, r.Deferred} {
		if c.Hit != c.Of {
			return false
		}
	}
	return len(r.Rejections) > 0
}

// Report compares the accumulated coverage with the machine.
func (cv *Coverage) Report(m *Machine) CoverageReport {
	var ts, guards, finals, irqs []string
	for _, t := range m.transitions {
		ts = append(ts, t.ID)
		if t.Guard != "" && !slices.Contains(guards, t.Guard) {
			guards = append(guards, t.Guard)
		}
	}
	for _, s := range m.states {
		if s.Final() {
			finals = append(finals, s.ID)
		}
	}
	for _, in := range m.interrupts {
		irqs = append(irqs, in.Event)
	}
	either := map[string]bool{}
	for _, k := range sortedKeys(cv.immediate) {
		either[k] = true
	}
	for _, k := range sortedKeys(cv.deferred) {
		either[k] = true
	}
	return CoverageReport{
		Interrupts:  covered(irqs, either),
		Transitions: covered(ts, cv.transitions),
		FalseGuards: covered(guards, cv.falseGuards),
		FinalStates: covered(finals, cv.finals),
		Immediate:   covered(irqs, cv.immediate),
		Deferred:    covered(irqs, cv.deferred),
		Rejections:  sortedKeys(cv.reasons),
	}
}

// String renders the report on one line.
func (r CoverageReport) String() string {
	return fmt.Sprintf("coverage: transitions %d/%d, false guards %d/%d, final states %d/%d, interrupts %d/%d (%d immediate, %d deferred), refusals %v",
		r.Transitions.Hit, r.Transitions.Of, r.FalseGuards.Hit, r.FalseGuards.Of, r.FinalStates.Hit, r.FinalStates.Of,
		r.Interrupts.Hit, r.Interrupts.Of, r.Immediate.Hit, r.Deferred.Hit, r.Rejections)
}
