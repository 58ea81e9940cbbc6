package verify

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
)

// stepInputs reads the same step inputs from every stored control record
// as the strict decoder does.
func TestStepInputsMatchStrictDecoding(t *testing.T) {
	st := open(t, recorded(t), true)
	n := 0
	for _, id := range []string{"small", "large"} {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind != runner.EventControl && e.Kind != runner.EventRejected {
				continue
			}
			n++
			fast, ok := stepInputs(e.Body)
			if !ok {
				t.Fatalf("%s event %d: the fast reader gave up on %s", id, e.Seq, e.Body)
			}
			var strict control.Record
			if err := strictDecode(e.Body, &strict); err != nil {
				t.Fatal(err)
			}
			want := control.Record{Event: strict.Event, ActorRole: strict.ActorRole, Capability: strict.Capability,
				EventID: strict.EventID, Evidence: strict.Evidence, GuardInputs: strict.GuardInputs}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("%s event %d: %+v, strictly %+v", id, e.Seq, fast, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no control records")
	}
}

// The fast reader gives up on what it does not read exactly, leaving the
// verdict to the strict decoder.
func TestStepInputsGiveUp(t *testing.T) {
	for _, b := range []string{
		``, `{`, `[]`, `{"event":"A"`, `{"event":"A"}x`, `{ "event":"A"}`, `{"event":"\u0041"}`,
		`{"event":1}`, `{"guard_inputs":{"g":1}}`, `{"evidence":{"e":true}}`, `{"seq":1.5}`, `{"seq":99999999999999999999}`,
		`{"x":[1,}`, `{"x":tru}`, "{\"event\":\"a\nb\"}", `{"a":1,}`,
	} {
		if _, ok := stepInputs([]byte(b)); ok {
			t.Errorf("%q was read", b)
		}
	}
	for _, b := range []string{`{}`, `{"x":[1,-2,{"y":null}],"z":"q\"uote","event":"A","guard_inputs":{"g":false}}`} {
		if _, ok := stepInputs([]byte(b)); !ok {
			t.Errorf("%q was not read", b)
		}
	}
}
