package control

import (
	"strings"
	"testing"
)

// An accepted StepEvidence allocates its record's bytes, head and lists,
// not its whole result: the result stays on the caller's stack unless the
// step is refused.
func TestStepEvidenceResultStaysOnTheStack(t *testing.T) {
	m := Default()
	c, e, evd := stableStep(m)
	buf := make([]byte, 0, 4096)
	step := func() {
		r, _, err := m.StepEvidence(buf[:0], c, e, evd)
		if err != nil || !r.Accepted() {
			t.Fatal(r.Rejection, err)
		}
	}
	step()
	const want = 1 // the head's text; the guard inputs, all true, are the table's
	if n := testing.AllocsPerRun(100, step); n > want {
		t.Fatalf("an accepted StepEvidence made %v allocations, want at most %d", n, want)
	}
}

// stableStep is an accepted EPOCH_STABLE from STABILIZE with every
// evidence item its transition names.
func stableStep(m *Machine) (Configuration, Event, map[string]string) {
	c := Configuration{Table: m.Digest(), State: "STABILIZE", Pending: []string{}, Seq: 2, Context: map[string]bool{"frontier_passed": true}}
	e := ev("EPOCH_STABLE", "b:1")
	evd := map[string]string{}
	for _, name := range m.transitions[m.byEdge[edge{c.State, e.Type}]].Evidence {
		evd[name] = "sha256:" + strings.Repeat("7", 64)
	}
	return c, e, evd
}
