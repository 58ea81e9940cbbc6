package verify

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// untracedState decides state through Decide and untraced through
// DecideUntraced, so a replay's report tells which one it asked.
type untracedState struct {
	fixedState
	untraced string
}

func (w untracedState) DecideUntraced(_ []byte, _ runner.Accepted) (runner.Decision, error) {
	return runner.Decision{State: []byte(w.untraced), StateCanonical: true}, nil
}

// tracedOnly hides a workflow's DecideUntraced: replay then decides as
// it does for any workflow, with Decide.
type tracedOnly struct{ runner.Workflow }

// A workflow that can decide without its trace is asked to: the replayed
// state is DecideUntraced's.
func TestReplayAsksForNoTrace(t *testing.T) {
	wf := untracedState{fixedState{`{"traced":1}`, true}, `{"untraced":1}`}
	init, _ := wf.Init("r")
	rep := mustReplay(t, oneInput(`{"untraced":1}`), wf, "r", init)
	if !rep.OK() || rep.State != store.BodyDigest([]byte(`{"untraced":1}`)) {
		t.Fatalf("replay without a trace: state %s, findings %+v", rep.State, rep.Findings)
	}
	rep = mustReplay(t, oneInput(`{"untraced":1}`), tracedOnly{wf}, "r", init)
	if rep.OK() || rep.State != store.BodyDigest([]byte(`{"traced":1}`)) {
		t.Fatalf("replay through Decide: state %s, findings %+v", rep.State, rep.Findings)
	}
}

// Replaying refund-agent runs without the trace reports what replaying
// them through Decide reports, run for run.
func TestReplayUntracedIsTraced(t *testing.T) {
	path, wf, ids := manyRuns(t, 24)
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		got, err := Replay(ctx, st, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Replay(ctx, st, tracedOnly{wf}, id)
		if err != nil {
			t.Fatal(err)
		}
		if !want.OK() || want.Inputs == 0 {
			t.Fatalf("run %s: the traced replay itself fails: %+v", id, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %s: untraced %+v, traced %+v", id, got, want)
		}
	}
}
