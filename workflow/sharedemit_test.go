package workflow

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/protocol"
)

// Every test in this package runs with each emission the recorder returns
// held to the one Emit renders afresh from the same snapshot and event: a
// destination rendered once at Load and shared (EmitShared) that any code
// had modified since would differ from its fresh rendering.
func init() {
	verifyShared = func(d *kernel.Declarative, s kernel.Snapshot, e kernel.Event, em kernel.Emission, f *kernel.Fault) {
		want, wf := d.Emit(s, e)
		if !reflect.DeepEqual(em, want) || !reflect.DeepEqual(f, wf) {
			panic(fmt.Sprintf("the shared emission differs from a fresh one:\n%#v %v\n%#v %v", em, f, want, wf))
		}
	}
}

// TestSharedDestinationSurvivesRuns decides refunds of every kind (paid,
// sent for approval, held for a blocked payee) and their receipts, in one
// workflow, and checks after each run that the refund rule's destination,
// shared by every emission, still renders as it did at Load.
func TestSharedDestinationSurvivesRuns(t *testing.T) {
	w := compileExample(t, "refund-agent")
	s := kernel.NewSnapshot(w.domain, "run-x", w.versions)
	probe := kernel.Event{ID: "evt:probe", Type: "refund.requested/1", Payload: protocol.Object{
		"refund_id": "r-probe", "amount": int64(1), "payee": "payee-1", "reason": "probe"}}
	first, f := w.domain.EmitShared(s, probe)
	if f != nil || len(first.Proposals) != 1 {
		t.Fatalf("probe emission: %v %#v", f, first)
	}
	want := fmt.Sprint(first.Proposals[0].Destination)
	for i := range 12 {
		amount, payee := int64(10+i), "payee-"+strconv.Itoa(i%5)
		switch i % 4 {
		case 2:
			amount = 400
		case 3:
			payee = "mallory"
		}
		st, err := w.Init("run-" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-"+strconv.Itoa(i), amount, payee, "damaged")})
		if err != nil || r.Refusal != "" {
			t.Fatal(err, r.Refusal)
		}
		for _, e := range r.Effects {
			if e.Approval != nil {
				continue
			}
			if _, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(e, protocol.OutcomeConfirmedSuccess)}); err != nil {
				t.Fatal(err)
			}
		}
		again, _ := w.domain.EmitShared(s, probe)
		if got := fmt.Sprint(again.Proposals[0].Destination); got != want ||
			reflect.ValueOf(again.Proposals[0].Destination).UnsafePointer() != reflect.ValueOf(first.Proposals[0].Destination).UnsafePointer() {
			t.Fatalf("run %d: the shared destination is %s (another object, or changed from %s)", i, got, want)
		}
	}
}
