package authority

import (
	"reflect"
	"testing"
	"unsafe"

	"flrh.dev/flrh/mrp"
)

// TestSingleRecordsSizeClass holds a batch of one's records (one
// allocation a decision) under the 3,456-byte size class: the next class
// is 4,096 bytes, 640 more a decision for the collector to pace on.
func TestSingleRecordsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(singleRecords{}); n > 3456 {
		t.Fatalf("singleRecords is %d bytes, want at most 3,456", n)
	}
}

// TestSingleTransitionsAreTheJourneys holds the FHR's transitions of a
// batch of one to their definition, the machine's journey past its
// length before the decision, whether the decision's step is the
// journey's first entry (the transitions then share the journey's array)
// or a carried machine's next one (the transitions are then a list of
// their own), and the FHR's digest to a seal of plain copies.
func TestSingleTransitionsAreTheJourneys(t *testing.T) {
	in := policy100Input(t, false)
	first, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Machine = first.Machine
	in.Machine.State = mrp.Hold
	second, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range []struct {
		d      Decisions
		before int
	}{{first, 0}, {second, len(first.Machine.Journey)}} {
		got, want := c.d.FHR.Transitions, c.d.Machine.Journey[c.before:]
		if got == nil || len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("decision %d: transitions %v, journey since the decision %v", k, got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("decision %d: transitions have room past their end", k)
		}
		plain := c.d.FHR
		plain.Digest = ""
		plain.Transitions = append([]mrp.Entry(nil), want...)
		sealed, err := plain.Seal()
		if err != nil || sealed.Digest != c.d.FHR.Digest {
			t.Fatalf("decision %d: FHR digest %s, sealed from copies %s (%v)", k, c.d.FHR.Digest, sealed.Digest, err)
		}
	}
	// The first decision's journey and transitions share their array;
	// the carried machine's journey is not the second's records.
	if &first.FHR.Transitions[0] != &first.Machine.Journey[0] {
		t.Fatalf("a first step's transitions are not the journey's array")
	}
	if &second.FHR.Transitions[0] == &second.Machine.Journey[len(first.Machine.Journey)] {
		t.Fatalf("a carried journey's transitions share its array")
	}
}
