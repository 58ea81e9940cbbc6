package control

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// inputsOf is what a verifier reads back from a stored record.
func inputsOf(r Record) StepInputs {
	return StepInputs{Event: r.Event, ActorRole: r.ActorRole, Capability: r.Capability, EventID: r.EventID,
		Evidence: r.Evidence, GuardInputs: r.GuardInputs}
}

// stepEventOf is the event a verifier steps for inputs, as it feeds Step.
func stepEventOf(in StepInputs) Event {
	ev := Event{Type: in.Event, ActorRole: in.ActorRole, Capability: in.Capability, EventID: in.EventID, Payload: map[string]any{}}
	if len(in.Evidence) > 0 {
		evd := map[string]any{}
		for k, v := range in.Evidence {
			evd[k] = v
		}
		ev.Payload["evidence"] = evd
	}
	return ev
}

// drawGuardContext draws each guard input absent, false or true.
func drawGuardContext(t *rapid.T) map[string]bool {
	ctx := map[string]bool{}
	for _, f := range contextFields {
		switch rapid.IntRange(0, 6).Draw(t, f) {
		case 0:
		case 1:
			ctx[f] = false
		default:
			ctx[f] = true
		}
	}
	return ctx
}

// drawEvidence draws each evidence name absent, a short digest, odd, or
// a digest of its name.
func drawEvidence(t *rapid.T, odd any) map[string]any {
	evidence := map[string]any{}
	for _, name := range []string{"cursor", "accepted_event_digest", "workflow_digest", "version_envelope_digest", "frontier_receipt", "state_digest", "support_digest", "other"} {
		switch rapid.IntRange(0, 5).Draw(t, name) {
		case 0:
		case 1:
			evidence[name] = "sha256:" + "00"
		case 2:
			evidence[name] = odd
		default:
			evidence[name] = digestOf([]byte(name))
		}
	}
	return evidence
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Recheck vouches for a stored record exactly when Step, fed the inputs
// the record names, accepts them and writes those very bytes; and it then
// leads to Step's configuration. It may leave a global interrupt to Step,
// nothing else. The records are drawn along random runs: mostly Step's own
// records, some with their inputs or bytes altered.
func TestRecheckAgreesWithStep(t *testing.T) {
	for _, m := range []*Machine{Default(), Default().WithStrictEvidence()} {
		rapid.Check(t, func(t *rapid.T) {
			c := m.Initial()
			n := rapid.IntRange(10, 60).Draw(t, "steps")
			for i := 0; i < n; i++ {
				e, _ := drawEvent(t, c.State, i)
				if rapid.IntRange(0, 9).Draw(t, "bad id") == 0 {
					e.EventID = rapid.SampledFrom([]string{"", "-x", "a b", "é"}).Draw(t, "id")
				}
				ctx := drawGuardContext(t)
				if rapid.IntRange(0, 19).Draw(t, "undeclared context") == 0 {
					ctx["not_a_field"] = true
				}
				evidence := drawEvidence(t, 7)
				e.Payload = map[string]any{"evidence": evidence}
				in := c
				in.Context = ctx
				r := m.Step(in, e)
				stored, err := r.Record.AppendCanonical(nil)
				if err != nil {
					t.Fatal(err)
				}
				inputs := inputsOf(r.Record)
				switch rapid.IntRange(0, 4).Draw(t, "inputs") {
				case 1: // guard inputs the record does not show
					inputs.GuardInputs = ctx
				case 2: // evidence the record does not show
					inputs.Evidence = map[string]string{"other": digestOf(nil)}
					for k, v := range r.Record.Evidence {
						inputs.Evidence[k] = v
					}
				case 3: // the event's own evidence, whatever the record shows
					inputs.Evidence = map[string]string{}
					for k, v := range evidence {
						if d, ok := v.(string); ok {
							inputs.Evidence[k] = d
						}
					}
				}
				switch rapid.IntRange(0, 4).Draw(t, "stored") {
				case 1: // a byte of the record changed
					j := rapid.IntRange(0, len(stored)-1).Draw(t, "at")
					stored = append([]byte(nil), stored...)
					stored[j] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
				case 2, 3: // the record a forger would write: accepted, whatever Step says
					if forged, _, _, built := m.acceptedRecord(c, inputs); built {
						stored = appendRecord(nil, &forged)
					}
				}
				// What Step says of the inputs the record names.
				want := m.Step(withContext(c, inputs.GuardInputs), stepEventOf(inputs))
				wantBytes, _ := want.Record.AppendCanonical(nil)
				matches := want.Rejection == nil && string(wantBytes) == string(stored)
				next, ok, _ := m.Recheck(c, inputs, stored, digestOf(stored), nil)
				// The record encoded and compared whole, as Recheck was
				// first written, answers exactly as Recheck reads it.
				refNext, refOK, _ := m.recheckByRecord(c, inputs, stored, digestOf(stored), nil)
				if ok != refOK || !reflect.DeepEqual(next, refNext) {
					t.Fatalf("step %d: Recheck says %v %+v, the record encoded whole %v %+v (%s)", i, ok, next, refOK, refNext, stored)
				}
				// And so it does from a configuration no step leads to.
				bad := drawConfiguration(t, m, c)
				if !reflect.DeepEqual(bad, c) {
					stored := stored
					if rapid.Bool().Draw(t, "forged from it") {
						if forged, _, _, built := m.acceptedRecord(bad, inputs); built {
							stored = appendRecord(nil, &forged)
						}
					}
					next, ok, _ := m.Recheck(bad, inputs, stored, digestOf(stored), nil)
					refNext, refOK, _ := m.recheckByRecord(bad, inputs, stored, digestOf(stored), nil)
					if ok != refOK || !reflect.DeepEqual(next, refNext) {
						t.Fatalf("step %d from %+v: Recheck says %v %+v, the record encoded whole %v %+v (%s)", i, bad, ok, next, refOK, refNext, stored)
					}
				}
				_, interrupt := m.interruptOf[inputs.Event]
				switch {
				case ok && !matches:
					t.Fatalf("step %d: Recheck vouched for %s; Step (accepted %v) writes %s", i, stored, want.Rejection == nil, wantBytes)
				case !ok && matches && !interrupt:
					t.Fatalf("step %d: Recheck refused Step's own record %s", i, stored)
				case ok:
					wantNext := want.Next
					wantNext.Context = nil
					if !reflect.DeepEqual(next, wantNext) {
						t.Fatalf("step %d: Recheck leads to %+v, Step to %+v", i, next, wantNext)
					}
				}
				if r.Rejection == nil {
					c = r.Next
					c.Context = nil
				}
			}
		})
	}
}

func withContext(c Configuration, ctx map[string]bool) Configuration {
	c.Context = ctx
	return c
}
