package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"flrh.dev/flrh/cjson"
)

// FuzzStepJSON feeds arbitrary snapshot and event texts to the step. It
// must never panic, must return exactly one of a transition or a
// *Rejection, and a transition's next snapshot must be accepted back as an
// input (it is what the next step will read).
func FuzzStepJSON(f *testing.F) {
	for _, ref := range []string{"observe-no-effect", "observe-with-effect", "observe-after-one"} {
		s, e := loadInput(f, ref)
		f.Add(s, e)
	}
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Add([]byte(`{"kind":"FStateSnapshot"}`), []byte(`{"kind":"AcceptedEvent","payload":{"event_type":1}}`))
	f.Fuzz(func(t *testing.T, snapshot, event []byte) {
		tr, err := StepJSON(Observation{}, snapshot, event)
		if (tr == nil) == (err == nil) {
			t.Fatalf("transition %v and error %v", tr, err)
		}
		if err != nil {
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("error is not a rejection: %v", err)
			}
			if _, cerr := r.Canonical(); cerr != nil {
				t.Fatalf("rejection has no canonical form: %v", cerr)
			}
			return
		}
		next, merr := tr.NextSnapshot.MarshalJSON()
		if merr != nil {
			t.Fatal(merr)
		}
		// The event pins the revision it expects, so stepping it again
		// against the next snapshot must be refused.
		if _, err := StepJSON(Observation{}, next, event); err == nil {
			t.Fatal("the same event was accepted twice")
		}
	})
}

// FuzzLoad feeds arbitrary declarative configurations to Load; a loaded
// domain must then step its own initial snapshot without panicking.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile("testdata/declarative/shop.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version":"flrh-domain/1","workflow":"w/1","state_schema":"s/1","event_schema":"e/1","initial_state":{},"events":{"x":{"payload":{}}}}`))
	f.Fuzz(func(t *testing.T, cfg []byte) {
		d, err := Load(cfg)
		if err != nil {
			return
		}
		if err := CheckProfile(d.Profile()); err != nil {
			t.Fatalf("loaded domain has an inconsistent profile: %v", err)
		}
		s := NewSnapshot(d, "agg:1", shopVersions)
		sb, _ := s.MarshalJSON()
		for _, typ := range sortedKeys(d.Profile().EventTypes) {
			ev := `{"kind":"AcceptedEvent","event_id":"e:1","payload":{"event_type":"` + typ +
				`","aggregate_id":"agg:1","expected_revision":0},"occurred_at":"2026-01-01T00:00:00Z","received_at":"2026-01-01T00:00:00Z","logical_time":0,"correlation_id":"c","causation_id":null,"idempotency_key":"k","versions":{"workflow":"shop/1","state_schema":"shop-state/1","event_schema":"shop-event/1","graph_schema":"graph/0","rule_set":"rules/0","dataflow":"dataflow/0","canonicalization":"flrh-cjson/1","tool":"none/0","model":"none/0","oracle":"o/1","gate":"g/1","resolver":"r/0","composition_profile":"c/0"}}`
			_, _ = StepJSON(d, sb, []byte(ev))
		}
	})
}

// FuzzParseSnapshot: a snapshot either parses — and then its canonical
// form is exactly the canonical form of the text, through both ParseSnapshot
// and encoding/json — or is refused with a canonical rejection.
func FuzzParseSnapshot(f *testing.F) {
	for _, ref := range []string{"observe-no-effect", "observe-after-one"} {
		s, _ := loadInput(f, ref)
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		s, err := ParseSnapshot(Observation{}, text)
		if err != nil {
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("not a rejection: %v", err)
			}
			if _, cerr := r.Canonical(); cerr != nil {
				t.Fatal(cerr)
			}
			return
		}
		got, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := cjson.Canonicalize(text)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("parsed snapshot re-encodes differently:\n%s\n%s", got, want)
		}
		var viaJSON Snapshot
		if err := json.Unmarshal(text, &viaJSON); err != nil {
			t.Fatalf("ParseSnapshot accepted what UnmarshalJSON refuses: %v", err)
		}
		again, _ := viaJSON.MarshalJSON()
		if !bytes.Equal(again, want) {
			t.Fatal("UnmarshalJSON round trip differs")
		}
	})
}
