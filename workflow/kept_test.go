package workflow

import "testing"

// Kept counts exactly the proposals the view lists as held, and refuses a
// document that is not a state.
func TestKeptCountsHeldProposals(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-kept")
	count := func(b []byte, want int) {
		t.Helper()
		n, err := w.Kept(b)
		if err != nil || n != want || n != len(mustView(t, w, b).Held) {
			t.Fatalf("kept %d (%v), want %d", n, err, want)
		}
	}
	count(st, 0)
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "unknown")})
	count(r.State, 1)
	r = mustDecide(t, w, r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-2", "api", "dest:ops-api", "reason", "leak")})
	count(r.State, 2)
	r = mustDecide(t, w, r.State, resumeBy(3, "oncall-lead"))
	count(r.State, 0)
	if _, err := w.Kept([]byte(`{"not":"a state"`)); err == nil {
		t.Fatal("a malformed state was counted")
	}
}

// Offered lists exactly the proposals the view offers options for, in
// the view's order, none once the choice is made, and refuses a document
// that is not a state.
func TestOfferedListsTheViewsOffers(t *testing.T) {
	w := compileExample(t, "support-agent")
	offered := func(b []byte, want int) []string {
		t.Helper()
		ids, err := w.Offered(b)
		if err != nil || len(ids) != want {
			t.Fatalf("offered %v (%v), want %d", ids, err, want)
		}
		for i, o := range mustView(t, w, b).Offers {
			if ids[i] != o.ProposalID {
				t.Fatalf("offered %v, the view offers %+v", ids, o)
			}
		}
		return ids
	}
	st, _ := w.Init("run-offered")
	offered(st, 0)
	st, _ = goodwill(t, w, 60)
	ids := offered(st, 1)
	r := mustDecide(t, w, st, choiceInput(2, ids[0], "path:store-credit", "dana", "operator", "mrp.choose_option"))
	offered(r.State, 0)
	if _, err := w.Offered([]byte(`{"not":"a state"`)); err == nil {
		t.Fatal("a malformed state was read")
	}
}
