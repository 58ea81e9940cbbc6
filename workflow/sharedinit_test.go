package workflow

import (
	"bytes"
	"strconv"
	"testing"

	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/protocol"
)

// TestRunsLeaveTheSharedInitialState holds Init's sharing of the domain
// profile's initial state (kernel.NewSharedSnapshot): runs decided from
// Init leave it as it was, and the same runs decided again, each from
// Init, give the same documents, effects and notes.
func TestRunsLeaveTheSharedInitialState(t *testing.T) {
	w := compileExample(t, "refund-agent")
	initial := func() []byte {
		b, err := kernel.NewSnapshot(w.domain, "run-x", w.versions).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := initial()
	round := func() [][]byte {
		var out [][]byte
		for i := range 10 {
			id := "run-" + strconv.Itoa(i)
			amount, payee := int64(10+7*i), "payee-"+strconv.Itoa(i%3)
			if i%4 == 3 {
				amount = 150 + int64(i)
			}
			st, err := w.Init(id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, st)
			for seq, body := range [][]byte{refundInput("r-"+strconv.Itoa(i), amount, payee, "damaged item")} {
				r, err := w.Decide(st, Input{Seq: int64(seq + 1), Kind: KindInput, Body: body})
				if err != nil || r.Refusal != "" {
					t.Fatal(err, r.Refusal)
				}
				out = append(out, r.State)
				for _, e := range r.Effects {
					out = append(out, e.Payload)
				}
				for _, n := range r.Trace {
					out = append(out, []byte(n.Kind), n.Body)
				}
				if len(r.Effects) == 1 {
					rr, err := w.Decide(r.State, Input{Seq: int64(seq + 2), Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
					if err != nil || rr.Refusal != "" {
						t.Fatal(err, rr.Refusal)
					}
					out = append(out, rr.State)
				}
			}
			if after := initial(); !bytes.Equal(after, before) {
				t.Fatalf("run %d changed the domain's initial state: %s, was %s", i, after, before)
			}
		}
		return out
	}
	first, second := round(), round()
	if len(first) != len(second) {
		t.Fatalf("%d documents, then %d", len(first), len(second))
	}
	for i := range first {
		if !bytes.Equal(first[i], second[i]) {
			t.Fatalf("document %d differs the second time:\n%s\n%s", i, first[i], second[i])
		}
	}
}
