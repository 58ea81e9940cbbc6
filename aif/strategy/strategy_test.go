package strategy

import (
	"errors"
	"testing"

	"flrh.dev/flrh/aif/evidence"
	"flrh.dev/flrh/determinism"
)

var receipt = evidence.Witness{
	Kind:          evidence.WitnessKindReceipt,
	ReceiptDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	Producer:      "destination", VerifiedBy: "verifier", Verified: true,
	Tags: &evidence.Tags{Independent: true, Measured: true, Settled: true},
}

// The two-tick campaign of the literature: a grounded success moves the
// slow posterior from Beta(1,1) to Beta(2,1) and the mode from exploration
// to consolidation, which parameterizes the next fast rollout.
func TestWitnessedOutcomeMovesSlowLevel(t *testing.T) {
	l, err := New("harden-tests", "refactor")
	if err != nil {
		t.Fatal(err)
	}
	t0 := l.Select()
	if t0.Option != "harden-tests" || t0.Mode != Exploration {
		t.Fatalf("initial target %+v", t0)
	}
	l2 := determinism.Check(t, l, func(l Level) Level {
		n, err := l.Update(Outcome{"harden-tests", true, "tactical-agent", receipt})
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
	o := l2.Options[0]
	if o.Alpha != 2 || o.Beta != 1 || l2.Updates != 1 {
		t.Fatalf("posterior Beta(%v,%v)", o.Alpha, o.Beta)
	}
	if t1 := l2.Select(); t1.Mode != Consolidation || t1.Option != "harden-tests" {
		t.Fatalf("after success %+v", t1)
	}
	if l.Options[0].Alpha != 1 {
		t.Fatal("update mutated the previous level")
	}
	rec := l2.Record()
	if rec.Options[0].Mean != 666_666_667 || rec.Mode != Consolidation {
		t.Fatalf("record %+v", rec)
	}
}

func TestUnwitnessedOutcomeRefused(t *testing.T) {
	l, _ := New("a", "b")
	self := receipt
	self.VerifiedBy = "tactical-agent"
	for _, w := range []evidence.Witness{{}, self} {
		n, err := l.Update(Outcome{"a", true, "tactical-agent", w})
		if !errors.Is(err, ErrUnwitnessed) {
			t.Fatalf("got %v", err)
		}
		if n.Options[0].Alpha != 1 || n.Updates != 0 {
			t.Fatal("refused outcome changed the level")
		}
	}
	if _, err := l.Update(Outcome{"zzz", true, "tactical-agent", receipt}); err == nil {
		t.Fatal("unknown option accepted")
	}
	if _, err := New("a", "a"); err == nil {
		t.Fatal("duplicate option accepted")
	}
}

func TestFailureKeepsExploring(t *testing.T) {
	l, _ := New("a", "b")
	l, _ = l.Update(Outcome{"a", false, "x", receipt})
	tg := l.Select()
	if tg.Option != "b" || tg.Mode != Exploration {
		t.Fatalf("after a's failure: %+v", tg)
	}
}
