package control

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// recheckByReading is what a verifier did before RecheckStored: read the
// record's step inputs with a JSON reader (here encoding/json, which reads
// a record as every reader that accepts it does where Recheck can vouch
// for it: each string between quotes as its bytes), then ask Recheck.
func (m *Machine) recheckByReading(c Configuration, stored []byte, digest string) (Configuration, StepInputs, bool) {
	var rec Record
	if json.Unmarshal(stored, &rec) != nil {
		return Configuration{}, StepInputs{}, false
	}
	in := inputsOf(rec)
	next, ok, _ := m.Recheck(c, in, stored, digest, nil)
	return next, in, ok
}

// sameStepNames reports whether the names RecheckStored read are those
// the reader read, and it returned nothing else.
func sameStepNames(got, want StepInputs) bool {
	return got.Event == want.Event && got.ActorRole == want.ActorRole && got.Capability == want.Capability &&
		got.EventID == "" && got.Evidence == nil && got.GuardInputs == nil
}

// RecheckStored vouches for a stored record exactly when Recheck, given
// the inputs a reader reads from it, does, leads to the same
// configuration, and returns the names the reader read.
// The records are drawn as in TestRecheckAgreesWithStep (Step's own,
// forged, a byte changed) and also with a byte inserted or a stretch cut,
// an escaped name or id, and an evidence member emptied or reordered;
// from the configuration a step leads to and from others.
func TestRecheckStoredAgreesWithRecheck(t *testing.T) {
	vouched := 0
	for _, m := range []*Machine{Default(), Default().WithStrictEvidence()} {
		rapid.Check(t, func(t *rapid.T) {
			c := m.Initial()
			n := rapid.IntRange(10, 60).Draw(t, "steps")
			for i := 0; i < n; i++ {
				e, _ := drawEvent(t, c.State, i)
				if rapid.IntRange(0, 9).Draw(t, "bad id") == 0 {
					e.EventID = rapid.SampledFrom([]string{"", "-x", "a b", "é", `a"b`, `a\b`, "a\x01b"}).Draw(t, "id")
				}
				ctx := drawGuardContext(t)
				evidence := drawEvidence(t, "sha256:"+strings.Repeat("A", 64))
				e.Payload = map[string]any{"evidence": evidence}
				in := c
				in.Context = ctx
				r := m.Step(in, e)
				stored, err := r.Record.AppendCanonical(nil)
				if err != nil {
					t.Fatal(err)
				}
				stored = slices.Clone(stored)
				switch rapid.IntRange(0, 9).Draw(t, "stored") {
				case 1: // a byte changed
					j := rapid.IntRange(0, len(stored)-1).Draw(t, "at")
					stored[j] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
				case 2: // a byte inserted
					j := rapid.IntRange(0, len(stored)).Draw(t, "at")
					stored = slices.Insert(stored, j, rapid.SampledFrom([]byte(`"\ ,:{}[]0a`)).Draw(t, "byte"))
				case 3: // a stretch cut
					j := rapid.IntRange(0, len(stored)-1).Draw(t, "from")
					k := rapid.IntRange(j, min(len(stored), j+80)).Draw(t, "to")
					stored = slices.Delete(stored, j, k)
				case 4: // the record a forger would write
					if forged, _, _, built := m.acceptedRecord(c, inputsOf(r.Record)); built {
						stored = appendRecord(nil, &forged)
					}
				case 5: // a name or the id written with an escape
					for _, k := range []string{`"actor_role":"`, `"capability":"`, `"event":"`, `"event_id":"`} {
						if j := strings.Index(string(stored), k); j >= 0 && rapid.Bool().Draw(t, "escape "+k) {
							at := j + len(k)
							stored = slices.Concat(stored[:at], []byte(`\u00`), []byte(hexByte(stored[at])), stored[at+1:])
						}
					}
				case 6: // the evidence emptied, or its first two members swapped
					if j := strings.Index(string(stored), `,"evidence":{`); j >= 0 {
						end := j + strings.Index(string(stored[j:]), "}")
						body := string(stored[j+len(`,"evidence":{`) : end])
						parts := strings.Split(body, ",")
						if len(parts) > 1 && rapid.Bool().Draw(t, "swap") {
							parts[0], parts[1] = parts[1], parts[0]
						} else {
							parts = nil
						}
						stored = slices.Concat(stored[:j+len(`,"evidence":{`)], []byte(strings.Join(parts, ",")), stored[end:])
					}
				case 7: // one of its punctuation bytes made another
					var at []int
					for j, b := range stored {
						if strings.IndexByte(`,:{}[]"`, b) >= 0 {
							at = append(at, j)
						}
					}
					j := rapid.SampledFrom(at).Draw(t, "at")
					stored[j] = rapid.SampledFrom([]byte(`,:{}[]"`)).Draw(t, "punctuation")
				}
				for _, from := range []Configuration{c, drawConfiguration(t, m, c)} {
					d := digestOf(stored)
					got, gotIn, ok := m.RecheckStored(from, stored, d)
					want, wantIn, wantOK := m.recheckByReading(from, stored, d)
					if ok != wantOK || !reflect.DeepEqual(got, want) || ok && !sameStepNames(gotIn, wantIn) {
						t.Fatalf("step %d from %+v: RecheckStored says %v %+v %+v; read and rechecked %v %+v %+v (%s)",
							i, from, ok, got, gotIn, wantOK, want, wantIn, stored)
					}
					if ok {
						vouched++
					}
				}
				if r.Rejection == nil {
					c = r.Next
					c.Context = nil
				}
			}
		})
	}
	if vouched == 0 {
		t.Fatal("RecheckStored vouched for no record")
	}
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// drawConfiguration is c, or mostly c with one thing changed that no step
// leads to.
func drawConfiguration(t *rapid.T, m *Machine, c Configuration) Configuration {
	bad := c
	bad.Pending = slices.Clone(c.Pending)
	switch rapid.IntRange(0, 9).Draw(t, "configuration") {
	case 1:
		bad.Head = rapid.SampledFrom([]string{"", "sha256:00", digestOf([]byte("x"))[:70] + "G"}).Draw(t, "head")
	case 2:
		bad.Table = rapid.SampledFrom([]string{"", "sha256:00", digestOf(nil)}).Draw(t, "table")
	case 3:
		bad.Pending = append(bad.Pending, rapid.SampledFrom([]string{"CANCEL", "TIMEOUT", "PAUSE", "NOT_AN_INTERRUPT", ""}).Draw(t, "pending"))
	case 4:
		bad.Seq = rapid.Int64Range(-2, 2).Draw(t, "seq")
	case 5:
		bad.State = rapid.SampledFrom([]string{"", "SUCCEEDED", "NOT_A_STATE", m.initial}).Draw(t, "state")
	case 6:
		bad = Configuration{}
	}
	return bad
}

// RecheckStored allocates nothing for a record it vouches for: an
// ordinary run's records, with evidence, from the configurations before
// them.
func TestRecheckStoredAllocatesNothing(t *testing.T) {
	m := Default().WithStrictEvidence()
	run := recheckRun(t, m)
	allocs := testing.AllocsPerRun(10, func() {
		for _, s := range run {
			if _, _, ok := m.RecheckStored(s.from, s.stored, s.digest); !ok {
				t.Fatal("refused")
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a run", allocs)
	}
}
