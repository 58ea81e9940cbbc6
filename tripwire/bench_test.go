package tripwire

import "testing"

// benchBoundaries returns one boundary of each shape the runner checks on
// its hot path, from a clean run with an approval and a reconciliation.
func benchBoundaries(b testing.TB) (turn, receipt, load, idle Boundary) {
	s := newSim()
	s.forgetful = true
	for range 8 {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}
	s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "unknown"}, {Outcome: "success"}}, Completion: "complete"})
	s.pass()
	s.approve()
	s.pass()
	s.reconcile("confirm")
	s.pass()
	for _, x := range s.boundaries {
		switch {
		case x.Phase == PhaseCommit && len(x.Consumed) > 0 && turn.Phase == "":
			turn = x
		case x.Phase == PhaseCommit && len(x.Receipts) > 0:
			receipt = x
		case x.Phase == PhaseLoad:
			load = x
		case x.Phase == PhaseIdle && x.Before.State == "WAIT_APPROVAL":
			idle = x
		}
	}
	for _, x := range []Boundary{turn, receipt, load, idle} {
		if x.Phase == "" {
			b.Fatal("missing boundary shape")
		}
		if trips := Check(x); len(trips) > 0 {
			b.Fatalf("benchmark boundary tripped:%s", describe(trips))
		}
	}
	return
}

func benchCheck(b *testing.B, x Boundary) {
	b.ReportAllocs()
	for b.Loop() {
		if len(Check(x)) != 0 {
			b.Fatal("tripped")
		}
	}
}

// A commit of one turn: an input accepted, decided, no effects.
func BenchmarkCheckCommitTurn(b *testing.B) { t, _, _, _ := benchBoundaries(b); benchCheck(b, t) }

// A commit that closes effects with receipts.
func BenchmarkCheckCommitReceipts(b *testing.B) { _, r, _, _ := benchBoundaries(b); benchCheck(b, r) }

// A load after a restart: the whole event chain (about 80 links) recomputed.
func BenchmarkCheckLoadFullChain(b *testing.B) { _, _, l, _ := benchBoundaries(b); benchCheck(b, l) }

// A pass ending at rest in WAIT_APPROVAL.
func BenchmarkCheckIdle(b *testing.B) { _, _, _, i := benchBoundaries(b); benchCheck(b, i) }
