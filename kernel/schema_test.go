package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestResultsValidateAgainstSchema: every base input, every transition of
// the success corpus (and its next snapshot) and every rejection validate
// against the embedded kernel schema; broken shapes do not.
func TestResultsValidateAgainstSchema(t *testing.T) {
	for _, ref := range []string{"observe-no-effect", "observe-with-effect", "observe-after-one"} {
		b, err := os.ReadFile(filepath.Join("testdata", "m1", ref+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, b)
		if err := Validate(SchemaObservationInput, compact.Bytes()); err != nil {
			t.Errorf("%s input: %v", ref, err)
		}
		s, e := loadInput(t, ref)
		tr := mustStep(t, s, e)
		tb, _ := tr.Canonical()
		if err := Validate(SchemaTransition, tb); err != nil {
			t.Errorf("%s transition: %v", ref, err)
		}
		nb, _ := tr.NextSnapshot.MarshalJSON()
		if err := Validate(SchemaObservationSnapshot, nb); err != nil {
			t.Errorf("%s next snapshot: %v", ref, err)
		}
		var m map[string]any
		_ = json.Unmarshal(nb, &m)
		m["smuggled"] = true
		smuggled, _ := json.Marshal(m)
		if Validate(SchemaObservationSnapshot, smuggled) == nil {
			t.Errorf("%s: snapshot with an undeclared member accepted", ref)
		}
		if err := Validate(SchemaSnapshot, smuggled); err != nil {
			t.Errorf("%s: kernel part of a snapshot with domain members refused: %v", ref, err)
		}
		for _, mut := range []op{
			rep("/accepted_event/logical_time", `1.5`),
			rep("/snapshot/phase", `"closed"`),
			rep("/accepted_event/payload/observation/status", `"\ud800"`),
			{"remove", "/accepted_event/event_id", ""},
		} {
			s, e := loadInput(t, ref, mut)
			_, err := StepJSON(Observation{}, s, e)
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("%s %v: not rejected", ref, mut)
			}
			rb, _ := r.Canonical()
			if err := Validate(SchemaRejection, rb); err != nil {
				t.Errorf("%s rejection %s: %v", ref, rb, err)
			}
		}
	}
	bad := map[string]string{
		SchemaObservationSnapshot: `{"kind":"FStateSnapshot","schema_version":"flrh-f-snapshot/1","aggregate_id":"a","revision":0,"phase":"open","last_logical_time":null,"last_event_id":null,"versions":{},"observation_count":0,"last_observation_digest":null,"smuggled":1}`,
		SchemaRejection:           `{"kind":"FRejection","schema_version":"flrh-f-result/1","contract_version":"flrh-f-kernel/1","code":"OOPS","path":"/","event_id":null,"snapshot_revision":null,"context":{}}`,
		SchemaTransition:          `{"kind":"FTransition"}`,
	}
	for name, text := range bad {
		if Validate(name, []byte(text)) == nil {
			t.Errorf("%s accepted %s", name, text)
		}
	}
	if Validate("Nope", []byte(`{}`)) == nil {
		t.Error("unknown schema name accepted")
	}
}
