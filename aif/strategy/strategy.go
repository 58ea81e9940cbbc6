// Package strategy is the slow level of the controller's two-timescale
// hierarchy (R15): a Beta posterior per strategic option, which fixes the
// target of the fast tactical loop and is updated only by witnessed
// tactical outcomes.
//
// Each level has its own quantities: the strategic level holds Beta counts
// and a mode; the tactical level holds its beliefs and cascade scores. No
// quantity does duty at both levels. Every option starts at the prior
// Beta(1, 1); an outcome moves it only if its witness closes the loop
// (evidence.Closes), so a tactical loop cannot teach the strategy with its
// own claims.
package strategy

import (
	"fmt"

	"flrh.dev/flrh/aif/evidence"
	"flrh.dev/flrh/aif/fixed"
)

// Option is one strategic option with its Beta posterior.
type Option struct {
	ID    string  `json:"id"`
	Alpha float64 `json:"-"` // 1 + witnessed successes
	Beta  float64 `json:"-"` // 1 + witnessed failures
}

// Mean returns α / (α + β).
func (o Option) Mean() float64 { return o.Alpha / (o.Alpha + o.Beta) }

// Level is the strategic state. It is a value: methods return new levels.
type Level struct {
	Options []Option
	Updates int64
}

// New returns a level with every option at Beta(1, 1).
func New(ids ...string) (Level, error) {
	seen := map[string]bool{}
	var l Level
	for _, id := range ids {
		if id == "" || seen[id] {
			return Level{}, fmt.Errorf("strategy: empty or duplicate option %q", id)
		}
		seen[id] = true
		l.Options = append(l.Options, Option{ID: id, Alpha: 1, Beta: 1})
	}
	if len(l.Options) == 0 {
		return Level{}, fmt.Errorf("strategy: no options")
	}
	return l, nil
}

// Modes of the strategic level.
const (
	// Exploration: the selected option has no witnessed outcome yet, or its
	// posterior mean does not favour success.
	Exploration = "exploration"
	// Consolidation: the selected option has witnessed support (mean > ½).
	Consolidation = "consolidation"
)

// Target is what the strategic level hands the tactical level.
type Target struct {
	Option string
	Mode   string
	Mean   float64
}

// Select fixes the tactical target: the option with the highest posterior
// mean, ties to the earlier option.
func (l Level) Select() Target {
	best := 0
	for i, o := range l.Options {
		if o.Mean() > l.Options[best].Mean() {
			best = i
		}
	}
	o := l.Options[best]
	mode := Exploration
	if o.Alpha+o.Beta > 2 && o.Mean() > 0.5 {
		mode = Consolidation
	}
	return Target{Option: o.ID, Mode: mode, Mean: o.Mean()}
}

// Outcome is a tactical result offered to the strategic level.
type Outcome struct {
	Option  string
	Success bool
	Actor   string // the tactical actor that proposed the action
	Witness evidence.Witness
}

// ErrUnwitnessed is wrapped by Update when the outcome's witness does not
// close the loop.
var ErrUnwitnessed = fmt.Errorf("strategy: outcome not externally witnessed")

// Update folds a witnessed outcome into the option's Beta posterior. An
// unwitnessed outcome is refused and changes nothing.
func (l Level) Update(o Outcome) (Level, error) {
	if ok, why := evidence.Closes(o.Witness, o.Actor); !ok {
		return l, fmt.Errorf("%w: %s", ErrUnwitnessed, why)
	}
	idx := -1
	for i, opt := range l.Options {
		if opt.ID == o.Option {
			idx = i
		}
	}
	if idx < 0 {
		return l, fmt.Errorf("strategy: unknown option %q", o.Option)
	}
	next := Level{Options: append([]Option(nil), l.Options...), Updates: l.Updates + 1}
	if o.Success {
		next.Options[idx].Alpha++
	} else {
		next.Options[idx].Beta++
	}
	return next, nil
}

// OptionRecord is an option in fixed point.
type OptionRecord struct {
	ID    string    `json:"id"`
	Alpha fixed.Num `json:"alpha"`
	Beta  fixed.Num `json:"beta"`
	Mean  fixed.Num `json:"mean"`
}

// Record is the persisted strategic state and its current target.
type Record struct {
	Kind    string         `json:"kind"`
	Version int64          `json:"version"`
	Scale   int64          `json:"scale"`
	Options []OptionRecord `json:"options"`
	Updates int64          `json:"updates"`
	Target  string         `json:"target"`
	Mode    string         `json:"mode"`
}

// Record returns the canonical form of the level.
func (l Level) Record() Record {
	t := l.Select()
	r := Record{Kind: "flrh.aif.strategy", Version: 1, Scale: fixed.Scale, Updates: l.Updates, Target: t.Option, Mode: t.Mode}
	for _, o := range l.Options {
		a, _ := fixed.MustFloat(o.Alpha)
		b, _ := fixed.MustFloat(o.Beta)
		m, _ := fixed.MustFloat(o.Mean())
		r.Options = append(r.Options, OptionRecord{o.ID, a, b, m})
	}
	return r
}
