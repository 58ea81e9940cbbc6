package bundle

import (
	"bytes"
	"reflect"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
)

// DecideUntraced is Decide without its trace: over refund-agent runs (an
// effect and its receipt, an approval request, a blocked payee, a body
// that does not parse), decided by two workflows of their own, the same
// Decision tick by tick but for a Trace, which the untraced one has none
// of while the traced one has one for every input it does not refuse.
func TestDecideUntracedIsDecide(t *testing.T) {
	traced, _, err := LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	untraced, _, err := LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		refund("r-1", 40, "alice", "damaged item"),
		refund("r-2", 900, "bob", "late"),
		refund("r-3", 20, "mallory", "damaged item"),
		`{"type":"refund.requested/1"}`,
	} {
		runID := "run-" + string(rune('a'+i))
		st0, err := traced.Init(runID)
		if err != nil {
			t.Fatal(err)
		}
		st1, err := untraced.Init(runID)
		if err != nil {
			t.Fatal(err)
		}
		in := runner.Accepted{Seq: 1, Kind: "input", Body: []byte(body)}
		for seq := int64(1); ; seq++ {
			want, werr := traced.Decide(st0, in)
			got, gerr := untraced.DecideUntraced(st1, in)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("run %s, seq %d: error %v, traced %v", runID, seq, gerr, werr)
			}
			if werr != nil {
				break
			}
			if got.Trace != nil || (len(want.Trace) == 0) != (want.Refusal != "") {
				t.Fatalf("run %s, seq %d: untraced trace %v, traced %d notes", runID, seq, got.Trace, len(want.Trace))
			}
			want.Trace = nil
			if !bytes.Equal(got.State, want.State) || !reflect.DeepEqual(got, want) {
				t.Fatalf("run %s, seq %d: untraced %+v\ntraced %+v", runID, seq, got, want)
			}
			if want.Refusal != "" || len(want.Effects) == 0 || want.Effects[0].Approval != nil {
				break
			}
			st0, st1 = want.State, got.State
			e := want.Effects[0].Intent
			rc, err := cjson.Marshal(protocol.ActionReceipt{Kind: protocol.KindActionReceipt, IntentID: e.IntentID, ActionDigest: e.ActionDigest,
				Outcome: protocol.OutcomeConfirmedSuccess, IdempotencyKey: e.IdempotencyKey, OutputDigests: protocol.DigestSet{}})
			if err != nil {
				t.Fatal(err)
			}
			in = runner.Accepted{Seq: seq + 1, Kind: "receipt", Body: rc}
		}
	}
}
