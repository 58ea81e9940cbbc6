package sandbox_test

import (
	"context"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// Model-based property: random sequences of deliveries (a few keys, a few
// payloads, random injected failures and drops) against the sandbox, each
// checked against a map from key to the content first applied under it.
// Every outcome, every lookup and the final ledger must agree with the model:
// one mutation per key, the first content wins, other content is a conflict.
func TestPropertySandboxAgainstModel(t *testing.T) {
	keys := []string{"effect:a", "effect:b", "effect:c"}
	payloads := []string{`{"amount":1}`, `{"amount":2}`}
	rapid.Check(t, func(t *rapid.T) {
		s, err := sandbox.New(sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := s.Adapter()
		model := map[string]string{} // key -> content digest applied
		order := []string{}          // keys in the order applied
		steps := rapid.IntRange(1, 30).Draw(t, "steps")
		for range steps {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			in := fixture.Intent(key, rapid.SampledFrom(payloads).Draw(t, "payload"))
			digest, err := a.(effect.ContentDigester).ContentDigest(in)
			if err != nil {
				t.Fatal(err)
			}
			fault := rapid.SampledFrom([]string{"none", "none", "503", "422", "drop"}).Draw(t, "fault")
			switch fault {
			case "503":
				s.Inject(sandbox.Fault{Key: key, Times: 1, Status: 503})
			case "422":
				s.Inject(sandbox.Fault{Key: key, Times: 1, Status: 422})
			case "drop":
				s.Inject(sandbox.Fault{Key: key, Times: 1, Drop: true})
			}
			r, err := a.Execute(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			applied, known := model[key]
			var want effect.Outcome
			switch {
			case fault == "503":
				want = effect.FailedTransient
			case fault == "422":
				want = effect.FailedPermanent
			case known && applied != digest:
				want = effect.FailedPermanent // a conflict is answered, never dropped
			case fault == "drop":
				want = effect.Unknown
			default:
				want = effect.Succeeded
			}
			if fault == "none" || fault == "drop" {
				if !known {
					model[key] = digest
					order = append(order, key)
				}
			}
			if r.Outcome != want {
				t.Fatalf("%s %s with fault %s: %v (%s), model says %v", key, digest[:15], fault, r.Outcome, r.Code, want)
			}
			if want == effect.Succeeded && r.Replayed != known {
				t.Fatalf("replayed=%v for a key the model had applied=%v", r.Replayed, known)
			}
			if known && applied != digest && fault != "503" && fault != "422" && r.Code != httpwire.CodeKeyConflict {
				t.Fatalf("conflict answered with %s", r.Code)
			}
			l, err := a.Lookup(context.Background(), key, digest)
			if err != nil {
				t.Fatal(err)
			}
			wantLookup := effect.ConfirmedFailure
			if d, ok := model[key]; ok && d == digest {
				wantLookup = effect.ConfirmedSuccess
			} else if ok {
				wantLookup = effect.HumanRequired
			}
			if l.Status != wantLookup {
				t.Fatalf("lookup %s: %v, model says %v", key, l.Status, wantLookup)
			}
			s.ClearFaults()
		}
		ms := s.Mutations()
		if len(ms) != len(order) {
			t.Fatalf("%d mutations, model has %d", len(ms), len(order))
		}
		for i, m := range ms {
			if m.IdempotencyKey != order[i] || m.ContentDigest != model[order[i]] || m.Sequence != int64(i+1) {
				t.Fatalf("mutation %d is %s %s, model has %s %s", i, m.IdempotencyKey, m.ContentDigest, order[i], model[order[i]])
			}
		}
	})
}
