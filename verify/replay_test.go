package verify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// fixedState is a workflow whose every input leads to the state it is
// given, vouched canonical or not.
type fixedState struct {
	state     string
	canonical bool
}

func (fixedState) ID() string      { return "fixed" }
func (fixedState) Version() string { return "1" }
func (fixedState) Digest() string  { return "sha256:fixed" }
func (fixedState) Init(string) ([]byte, error) {
	return []byte(`{"n":0}`), nil
}
func (w fixedState) Decide(_ []byte, _ runner.Accepted) (runner.Decision, error) {
	return runner.Decision{State: []byte(w.state), StateCanonical: w.canonical}, nil
}
func (fixedState) CheckApproval(runner.ApprovalNeed, store.Approval, time.Time) error { return nil }

// oneInput is a record of one accepted input and a checkpoint holding
// checkpointState as its state member.
func oneInput(checkpointState string) *record {
	body := `{"x":1}`
	ev := `{"actor":"a","actor_role":"r","body":` + body + `,"capability":"c","digest":"` + store.BodyDigest([]byte(body)) + `","kind":"input","seq":1}`
	return &record{
		events: []store.Event{{Seq: 1, Kind: runner.EventAccepted, Body: []byte(ev)}},
		cp:     store.Checkpoint{Seq: 1, Body: []byte(`{"other":true,"state":` + checkpointState + `}`)},
		hasCP:  true,
	}
}

// The checkpoint's state is compared with the replayed one byte for byte
// when the workflow vouches its state canonical, and canonicalized first
// otherwise: the shortcut must give the findings the full comparison
// gives.
func TestReplayComparesTheCheckpointState(t *testing.T) {
	cases := []struct {
		name       string
		wf         fixedState
		checkpoint string
		want       string // the finding's check, "" for none
	}{
		{"vouched, same bytes", fixedState{`{"a":2,"b":1}`, true}, `{"a":2,"b":1}`, ""},
		{"vouched, same value spaced", fixedState{`{"a":2,"b":1}`, true}, `{ "b": 1, "a": 2 }`, ""},
		{"vouched, another value", fixedState{`{"a":2,"b":1}`, true}, `{"a":2,"b":3}`, "replay-state"},
		{"vouched, not canonical in the checkpoint", fixedState{`{"a":2,"b":1}`, true}, `{"a":2,"a":2}`, "replay-state"},
		// Not vouched: equal bytes are no proof, since the checkpoint is
		// canonicalized and the replayed state is not.
		{"not vouched, same unsorted bytes", fixedState{`{"b":1,"a":2}`, false}, `{"b":1,"a":2}`, "replay-state"},
		{"not vouched, same canonical bytes", fixedState{`{"a":2,"b":1}`, false}, `{"a":2,"b":1}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			init, _ := c.wf.Init("r")
			rep := mustReplay(t, oneInput(c.checkpoint), c.wf, "r", init)
			if rep.Inputs != 1 {
				t.Fatalf("replayed %d inputs, want 1: %+v", rep.Inputs, rep.Findings)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, f.Check)
			}
			if strings.Join(got, ",") != c.want {
				t.Fatalf("findings %+v, want %q", rep.Findings, c.want)
			}
			if rep.State != store.BodyDigest([]byte(c.wf.state)) {
				t.Fatalf("state digest %s", rep.State)
			}
		})
	}
}

// An accepted input whose body is not its recorded digest's is reported and
// not replayed; one whose digest is right, in any other form, is too.
func TestReplayChecksTheInputDigest(t *testing.T) {
	wf := fixedState{`{"n":0}`, true}
	good := store.BodyDigest([]byte(`{"x":1}`))
	for _, c := range []struct {
		digest string
		ok     bool
	}{
		{good, true},
		{strings.ToUpper(good[:7]) + good[7:], false},
		{good[:len(good)-1] + "0", good[len(good)-1] == '0'},
		{"sha256:" + strings.Repeat("0", 64), false},
		{good + "0", false},
		{"", false},
	} {
		rec := oneInput(`{"n":0}`)
		rec.events[0].Body = []byte(strings.Replace(string(rec.events[0].Body), good, c.digest, 1))
		init, _ := wf.Init("r")
		rep := mustReplay(t, rec, wf, "r", init)
		if got := rep.Inputs == 1 && rep.OK(); got != c.ok {
			t.Fatalf("digest %q: replayed %d inputs, findings %+v; want ok %v", c.digest, rep.Inputs, rep.Findings, c.ok)
		}
		if !c.ok && (len(rep.Findings) != 1 || rep.Findings[0].Check != "accepted-record" ||
			rep.Findings[0].Where != fmt.Sprintf("event %d", rec.events[0].Seq)) {
			t.Fatalf("digest %q: findings %+v", c.digest, rep.Findings)
		}
	}
}

// mustReplay is replayRecord for a record whose replay reads nothing more
// from a store.
func mustReplay(t *testing.T, rec *record, wf runner.Workflow, runID string, state []byte) *ReplayReport {
	t.Helper()
	rep, err := replayRecord(ctx, rec, wf, runID, state)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
