package control

import "slices"

// Awaited is one event that could move a configuration now, with who may
// issue it, the guard it must pass and where it leads.
type Awaited struct {
	Event      string          `json:"event"`
	Authority  []AuthorityPair `json:"authority"`
	Transition string          `json:"transition"` // transition id, or "interrupt:X" / "defer:X"
	Guard      string          `json:"guard,omitempty"`
	Evidence   []string        `json:"evidence,omitempty"`
	To         string          `json:"to"`
}

// Awaiting lists, in table order, the events that Step would accept from c
// when their guards hold: what the run is waiting for, and from whom. A
// final or invalid configuration waits for nothing. Global interrupts come
// last, as deferrals inside the effect-critical states.
func (m *Machine) Awaiting(c Configuration) []Awaited {
	c = cloneConfiguration(c)
	if c.State == "" && c.Seq == 0 && len(c.Pending) == 0 {
		c.State = m.initial
	}
	if _, detail := m.checkConfiguration(c); detail != "" || m.Final(c.State) {
		return []Awaited{}
	}
	out := []Awaited{}
	for _, t := range m.transitions {
		if t.From != c.State {
			continue
		}
		if i, honors := m.honoredBy[t.Event]; honors && !slices.Contains(c.Pending, m.interrupts[i].Event) {
			continue
		}
		if t.Event == m.resumeEvent && len(c.Pending) > 0 {
			continue
		}
		out = append(out, Awaited{
			Event: t.Event, Authority: slices.Clone(m.events[m.eventIdx[t.Event]].Authority),
			Transition: t.ID, Guard: t.Guard, Evidence: slices.Clone(t.Evidence), To: t.To,
		})
	}
	for _, in := range m.interrupts {
		a := Awaited{Event: in.Event, Authority: slices.Clone(m.events[m.eventIdx[in.Event]].Authority)}
		if m.deferredIn[c.State] {
			a.Transition, a.To = labelDefer+in.Event, c.State
		} else {
			a.Transition, a.To = labelInterrupt+in.Event, in.To
		}
		out = append(out, a)
	}
	return out
}
