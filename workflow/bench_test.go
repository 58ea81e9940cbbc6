package workflow

import (
	"testing"

	"flrh.dev/flrh/protocol"
)

// BenchmarkDecideSmallRefund is one governed tick of the refund agent: a
// low-risk refund through F, L, the seam, R and H to an authorized intent.
func BenchmarkDecideSmallRefund(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")}
	b.ReportAllocs()
	for b.Loop() {
		r, err := w.Decide(st, in)
		if err != nil || len(r.Effects) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideReceipt is the tick that closes the loop: a receipt
// becomes a domain fact and completes the run.
func BenchmarkDecideReceipt(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")})
	in := Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)}
	b.ReportAllocs()
	for b.Loop() {
		r2, err := w.Decide(r.State, in)
		if err != nil || r2.Completion != Complete {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile loads the refund bundle.
func BenchmarkCompile(b *testing.B) {
	files := readBundle(b, "../examples/refund-agent")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(files); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideGoodwillOptions is a goodwill tick of the support agent:
// F, L, seam, R, H answering OPTIONS, one controller observation and the
// scoring of both options (the case a person decides).
func BenchmarkDecideGoodwillOptions(b *testing.B) {
	w := compileExample(b, "support-agent")
	st, _ := w.Init("run-bench")
	in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 60, "carol", "goodwill")}
	b.ReportAllocs()
	for b.Loop() {
		r, err := w.Decide(st, in)
		if err != nil || len(r.Effects) != 0 || r.Refusal != "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideChoice is a person's choice: the MRP step and H deciding
// the offered proposal again, to an intent.
func BenchmarkDecideChoice(b *testing.B) {
	w := compileExample(b, "support-agent")
	st, _ := w.Init("run-bench")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 60, "carol", "goodwill")})
	v, _ := w.Inspect(r.State)
	in := choiceInput(2, v.Offers[0].ProposalID, "path:store-credit", "dana", "operator", "mrp.choose_option")
	b.ReportAllocs()
	for b.Loop() {
		r2, err := w.Decide(r.State, in)
		if err != nil || len(r2.Effects) != 1 {
			b.Fatal(err)
		}
	}
}
