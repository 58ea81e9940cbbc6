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
