package runner

import (
	"fmt"
	"testing"
)

// keeping is the chooser workflow with kept proposals: a run of it waits
// on a person for kept decisions (decision 0612) whenever kept > 0, and
// for a choice among options offered (decision 1957) whenever offered > 0.
type keeping struct {
	chooser
	kept, offered int
}

func (k keeping) Kept([]byte) (int, error) { return k.kept, nil }

func (k keeping) Offered([]byte) ([]string, error) {
	ids := make([]string, k.offered)
	for i := range ids {
		ids[i] = fmt.Sprintf("p-%d", i)
	}
	return ids, nil
}

// A run that keeps proposals for a person, or offers one options to
// choose among, is waiting on that person: the inputs it takes meanwhile
// gain nothing, but the plateau does not end it NO_PROGRESS (which would
// drop what it keeps or offers undecided); its step budget still bounds
// it, and it ends BUDGET_EXHAUSTED there. A run that keeps and offers
// nothing ends NO_PROGRESS after the window, as before.
func TestKeptProposalsHoldTheNoProgressPlateau(t *testing.T) {
	for _, tc := range []struct {
		kept, offered int
		state         string
	}{{0, 0, "NO_PROGRESS"}, {1, 0, "BUDGET_EXHAUSTED"}, {3, 0, "BUDGET_EXHAUSTED"}, {0, 1, "BUDGET_EXHAUSTED"}, {2, 2, "BUDGET_EXHAUSTED"}} {
		t.Run(fmt.Sprintf("kept %d offered %d", tc.kept, tc.offered), func(t *testing.T) {
			const steps = 6
			b := newBudgetRig(t, fmt.Sprintf(`{"budgets":{"steps":%d}}`, steps), keeping{kept: tc.kept, offered: tc.offered})
			if err := b.r.Start(ctx, "run", "chooser", "1", []byte(`{"x":0}`)); err != nil {
				t.Fatal(err)
			}
			b.idle()
			for i := 1; i < 3*steps && b.run("run").Outcome == ""; i++ {
				if err := b.r.Submit(ctx, "run", []byte(fmt.Sprintf(`{"x":%d}`, i)), payer); err != nil {
					t.Fatal(err)
				}
				b.idle()
			}
			l := b.checkLedger("run")
			if s := b.run("run").State; s != tc.state || l.Steps > steps {
				t.Fatalf("state %s after %d steps, want %s within %d", s, l.Steps, tc.state, steps)
			}
			if tc.state == "BUDGET_EXHAUSTED" && l.Steps != steps {
				t.Fatalf("ended after %d steps, before its budget of %d", l.Steps, steps)
			}
		})
	}
}
