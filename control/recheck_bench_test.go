package control

import "testing"

// recheckRun is an ordinary run as a verifier holds it: the configuration
// before each accepted step, the step's inputs, its stored record and the
// record's digest.
type recheckStep struct {
	from   Configuration
	in     StepInputs
	stored []byte
	digest string
}

func recheckRun(tb testing.TB, m *Machine) []recheckStep {
	var run []recheckStep
	c := m.Initial()
	for _, s := range transcribed["nes"] {
		e := s.event
		if t, ok := m.byEdge[edge{c.State, e.Type}]; ok && len(m.transitions[t].Evidence) > 0 {
			evd := map[string]any{}
			for _, name := range m.transitions[t].Evidence {
				evd[name] = digestOf([]byte(name))
			}
			e.Payload = map[string]any{"evidence": evd}
		}
		in := c
		ctx, _ := m.ContextFromGuards(s.guards, "")
		in.Context = ctx
		r := m.Step(in, e)
		if r.Rejection != nil {
			tb.Fatalf("%s refused: %v", e.Type, r.Rejection)
		}
		stored, err := r.Record.AppendCanonical(nil)
		if err != nil {
			tb.Fatal(err)
		}
		run = append(run, recheckStep{from: c, in: inputsOf(r.Record), stored: stored, digest: digestOf(stored)})
		c = r.Next
		c.Context = nil
	}
	return run
}

// BenchmarkRecheck re-checks the five records of an ordinary run with
// evidence, as a verifier does: in place, and (record) by encoding each
// record whole as Recheck first did.
func BenchmarkRecheck(b *testing.B) {
	m := Default().WithStrictEvidence()
	run := recheckRun(b, m)
	for _, r := range []struct {
		name  string
		check func(Configuration, StepInputs, []byte, string, []byte) (Configuration, bool, []byte)
	}{{"inplace", m.Recheck}, {"record", m.recheckByRecord}} {
		b.Run(r.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range run {
					var ok bool
					if _, ok, buf = r.check(s.from, s.in, s.stored, s.digest, buf); !ok {
						b.Fatal("refused")
					}
				}
			}
		})
	}
}
