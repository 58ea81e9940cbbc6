package workflow

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// benchDecide readies b: allocations reported, and no test-only check of
// cached states (see statecache_test.go), which would decode every state
// a tick takes from the cache, of sealed batches (sealbatch_test.go),
// which would seal each again, or of the pairing of proposals with their
// actions (match_test.go), which would digest them, or of shared
// emissions (sharedemit_test.go), which would render each again, and so
// measure the checks, not Decide.
func benchDecide(b *testing.B) {
	b.ReportAllocs()
	saved, savedBatch, savedMatch, savedShared, savedIDs := verifyCachedState, verifySealedBatch, verifyMatch, verifyShared, verifySupportIDs
	verifyCachedState, verifySealedBatch, verifyMatch, verifyShared, verifySupportIDs = nil, nil, nil, nil, nil
	b.Cleanup(func() {
		verifyCachedState, verifySealedBatch, verifyMatch, verifyShared, verifySupportIDs = saved, savedBatch, savedMatch, savedShared, savedIDs
	})
}

// reportCPU reports the CPU per op since cpu0, as cpu-ns/op.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecideSmallRefund is one governed tick of the refund agent: a
// low-risk refund through F, L, the seam, R and H to an authorized intent.
func BenchmarkDecideSmallRefund(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")}
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		r, err := w.Decide(st, in)
		if err != nil || len(r.Effects) != 1 {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideReceipt is the tick that closes the loop: a receipt
// becomes a domain fact and completes the run.
func BenchmarkDecideReceipt(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")})
	in := Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)}
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		r2, err := w.Decide(r.State, in)
		if err != nil || r2.Completion != Complete {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkCompile loads the refund bundle.
func BenchmarkCompile(b *testing.B) {
	files := readBundle(b, "../examples/refund-agent")
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		if _, err := Compile(files); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideGoodwillOptions is a goodwill tick of the support agent:
// F, L, seam, R, H answering OPTIONS, one controller observation and the
// scoring of both options (the case a person decides).
func BenchmarkDecideGoodwillOptions(b *testing.B) {
	w := compileExample(b, "support-agent")
	st, _ := w.Init("run-bench")
	in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 60, "carol", "goodwill")}
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		r, err := w.Decide(st, in)
		if err != nil || len(r.Effects) != 0 || r.Refusal != "" {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideChoice is a person's choice: the MRP step and H deciding
// the offered proposal again, to an intent.
func BenchmarkDecideChoice(b *testing.B) {
	w := compileExample(b, "support-agent")
	st, _ := w.Init("run-bench")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 60, "carol", "goodwill")})
	v, _ := w.Inspect(r.State)
	in := choiceInput(2, v.Offers[0].ProposalID, "path:store-credit", "dana", "operator", "mrp.choose_option")
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		r2, err := w.Decide(r.State, in)
		if err != nil || len(r2.Effects) != 1 {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideOpsRestart is a restart tick of the ops agent: F, L,
// seam, R and H to an approval request, with H deciding again under the
// named approver's grant to plan the intent a person would approve.
func BenchmarkDecideOpsRestart(b *testing.B) {
	benchDecideApproval(b, compileExample(b, "ops-agent"), opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak"))
}

// BenchmarkDecideRun is a short refund-agent run, one op: three small
// refunds, each answered by its receipt. All but the first tick decide
// from the state the tick before kept.
func BenchmarkDecideRun(b *testing.B) {
	w := compileExample(b, "refund-agent")
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		st, _ := w.Init("run-bench")
		seq := int64(0)
		for i := 0; i < 3; i++ {
			seq++
			r, err := w.Decide(st, Input{Seq: seq, Kind: KindInput, Body: refundInput("r-1", 40+int64(i), "alice", "damaged")})
			if err != nil || len(r.Effects) != 1 {
				b.Fatal(err, r.Refusal)
			}
			seq++
			r, err = w.Decide(r.State, Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
			if err != nil || r.Refusal != "" {
				b.Fatal(err, r.Refusal)
			}
			st = r.State
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideReceiptNext is BenchmarkDecideReceipt as a run meets it:
// the receipt decided from the state the refund's tick kept. Only the
// receipt's tick is timed.
func BenchmarkDecideReceiptNext(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	refund := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")}
	r, _ := w.Decide(st, refund)
	in := Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)}
	benchDecide(b)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		r, _ := w.Decide(st, refund)
		b.StartTimer()
		cpu0 := cputime.Used()
		r2, err := w.Decide(r.State, in)
		cpu += cputime.Used() - cpu0
		if err != nil || r2.Completion != Complete {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecideChoiceNext is BenchmarkDecideChoice as a run meets it: the
// choice decided from the state the goodwill tick kept. Only the choice's
// tick is timed.
func BenchmarkDecideChoiceNext(b *testing.B) {
	w := compileExample(b, "support-agent")
	st, _ := w.Init("run-bench")
	goodwill := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 60, "carol", "goodwill")}
	r, _ := w.Decide(st, goodwill)
	v, _ := w.Inspect(r.State)
	in := choiceInput(2, v.Offers[0].ProposalID, "path:store-credit", "dana", "operator", "mrp.choose_option")
	benchDecide(b)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		r, _ := w.Decide(st, goodwill)
		b.StartTimer()
		cpu0 := cputime.Used()
		r2, err := w.Decide(r.State, in)
		cpu += cputime.Used() - cpu0
		if err != nil || len(r2.Effects) != 1 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkNoteFHR is the h.fhr note of a run's third refund, written as
// canonical bytes ("bytes") and as the map cjson.Marshal encoded before
// ("map"): the note a tick records that grows with the run.
func BenchmarkNoteFHR(b *testing.B) {
	w := compileExample(b, "refund-agent")
	st, _ := w.Init("run-bench")
	var note []byte
	for i := int64(0); i < 3; i++ {
		r, err := w.Decide(st, Input{Seq: 2*i + 1, Kind: KindInput, Body: refundInput("r-1", 40+i, "alice", "damaged")})
		if err != nil || len(r.Effects) != 1 {
			b.Fatal(err, r.Refusal)
		}
		for _, n := range r.Trace {
			if n.Kind == "h.fhr" {
				note = n.Body
			}
		}
		if r, err = w.Decide(r.State, Input{Seq: 2*i + 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)}); err != nil {
			b.Fatal(err)
		}
		st = r.State
	}
	// The note's FHR read back: a move is written by name and has no
	// decoder, so names become their numbers first.
	var raw map[string]any
	if err := json.Unmarshal(note, &raw); err != nil {
		b.Fatal(err)
	}
	for _, r := range raw["fhr"].(map[string]any)["resolutions"].([]any) {
		m, ok := mrp.ParseMove(r.(map[string]any)["move"].(string))
		if !ok {
			b.Fatal("unknown move")
		}
		r.(map[string]any)["move"] = int(m)
	}
	var body struct {
		Event string  `json:"event"`
		FHR   mrp.FHR `json:"fhr"`
		Chain string  `json:"fhr_chain"`
	}
	if re, err := json.Marshal(raw); err != nil || json.Unmarshal(re, &body) != nil {
		b.Fatal("the note does not decode", err)
	}
	if got, ok := fhrNote(body.FHR, body.Event, body.Chain); !ok || string(got) != string(note) {
		b.Fatalf("the note does not round-trip:\n%s\n%s", got, note)
	}
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cputime.Used()
		for b.Loop() {
			if _, ok := fhrNote(body.FHR, body.Event, body.Chain); !ok {
				b.Fatal("refused")
			}
		}
		reportCPU(b, cpu0)
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cputime.Used()
		for b.Loop() {
			if _, err := cjson.Marshal(fhrNoteMap(body.FHR, body.Event, body.Chain)); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu0)
	})
}

// BenchmarkDecideRuns is the shape replay meets over many ordinary
// refund-agent runs, one op being 20 runs, each from Init: a refund and its
// receipt, every fifth above the limit (an approval request, the intent a
// grant yields planned with it) and every twentieth for a blocked payee
// (no effect, no receipt). The inputs are built beforehand; the receipts
// answer the effects each refund plans.
func BenchmarkDecideRuns(b *testing.B) { benchmarkDecideRuns(b, false) }

// BenchmarkDecideRunsUntraced is BenchmarkDecideRuns through
// DecideUntraced, as a replay that reads no trace decides.
func BenchmarkDecideRunsUntraced(b *testing.B) { benchmarkDecideRuns(b, true) }

func benchmarkDecideRuns(b *testing.B, untraced bool) {
	w := compileExample(b, "refund-agent")
	decide := w.Decide
	if untraced {
		decide = w.DecideUntraced
	}
	type run struct {
		id      string
		refund  Input
		receipt *Input
	}
	runs := make([]run, 20)
	for i := range runs {
		amount, payee := int64(10+i%80), "payee-"+strconv.Itoa(i%13)
		switch {
		case i%20 == 19:
			payee = "mallory"
		case i%5 == 4:
			amount = int64(150 + i)
		}
		runs[i] = run{id: "run-" + strconv.Itoa(i), refund: Input{Seq: 1, Kind: KindInput, Body: refundInput("r-"+strconv.Itoa(i), amount, payee, "damaged item")}}
		st, _ := w.Init(runs[i].id)
		r, err := w.Decide(st, runs[i].refund)
		if err != nil || r.Refusal != "" {
			b.Fatal(err, r.Refusal)
		}
		if (len(r.Effects) == 0) != (i%20 == 19) || (len(r.Effects) == 1 && (r.Effects[0].Approval != nil) != (i%5 == 4)) {
			b.Fatalf("run %d planned %d effects", i, len(r.Effects))
		}
		if len(r.Effects) == 1 {
			runs[i].receipt = &Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)}
		}
	}
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		for _, rn := range runs {
			st, _ := w.Init(rn.id)
			r, err := decide(st, rn.refund)
			if err != nil || r.Refusal != "" {
				b.Fatal(err, r.Refusal)
			}
			if rn.receipt != nil {
				if r, err = decide(r.State, *rn.receipt); err != nil || r.Refusal != "" || r.Completion != Complete {
					b.Fatal(err, r.Refusal, r.Completion)
				}
			}
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideLargeRefund is a tick whose refund waits for the
// approval of one of a group: H's request, and the intent a grant would
// yield, planned.
func BenchmarkDecideLargeRefund(b *testing.B) {
	w, err := Compile(editBundle(b, func(m map[string]any) {
		m["approval"].(map[string]any)["members"] = []any{"alice", "bob", "carol"}
	}, nil))
	if err != nil {
		b.Fatal(err)
	}
	benchDecideApproval(b, w, refundInput("r-1", 3000, "alice", "damaged"))
}

// BenchmarkDecideLargeRefundGatesQuorum is BenchmarkDecideLargeRefund
// under gates that ask two people's approvals of it: the cost of asking
// the gates how many.
func BenchmarkDecideLargeRefundGatesQuorum(b *testing.B) {
	benchDecideApproval(b, quorumBundle(b, nil), refundInput("r-1", 3000, "alice", "damaged"))
}

// benchDecideApproval benchmarks w's first tick on the input body, which
// must plan one effect that waits for a person's approval.
func benchDecideApproval(b *testing.B, w *Workflow, body []byte) {
	st, _ := w.Init("run-bench")
	in := Input{Seq: 1, Kind: KindInput, Body: body}
	benchDecide(b)
	cpu0 := cputime.Used()
	for b.Loop() {
		r, err := w.Decide(st, in)
		if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkDecideLargeRefundGatesApprover is BenchmarkDecideLargeRefund
// under gates that send it to another group: the cost of asking the
// gates who.
func BenchmarkDecideLargeRefundGatesApprover(b *testing.B) {
	w, err := treasuryBundle(b, func(a map[string]any) { a["members"] = []any{"alice", "bob", "carol"} })
	if err != nil {
		b.Fatal(err)
	}
	benchDecideApproval(b, w, refundInput("r-1", 3000, "alice", "damaged"))
}
