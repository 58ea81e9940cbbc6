package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// steered records every input it accepts, by kind and actor, and refuses a
// control input whose trigger is REFUSE (as a workflow refuses a control
// its deliberation machine does not admit).
type steered struct{ refunds }

func (steered) ID() string                  { return "steered" }
func (steered) Init(string) ([]byte, error) { return []byte(`{"seen":[]}`), nil }
func (steered) Decide(state []byte, in Accepted) (Decision, error) {
	var st struct {
		Seen []string `json:"seen"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return Decision{}, err
	}
	if in.Kind == KindControl && strings.Contains(string(in.Body), `"REFUSE"`) {
		return Decision{State: state, Completion: Continue, Refusal: "CONTROL_MRP_REFUSED: not now"}, nil
	}
	st.Seen = append(st.Seen, in.Kind+"/"+in.Actor+"/"+in.ActorRole+"/"+in.Capability)
	next, err := cjson.Marshal(st)
	return Decision{State: next, Completion: Continue}, err
}

func seen(t *testing.T, h *harness, id string) []string {
	t.Helper()
	cp, err := h.store.Checkpoint(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		State struct {
			Seen []string `json:"seen"`
		} `json:"state"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.State.Seen
}

// A person's MRP transition reaches the workflow in arrival order among
// inputs and choices, with the issuer's authenticated role and capability;
// a round whose transition the workflow accepted is not judged by the
// no-progress detector, so three rounds that got nothing done are needed
// besides them before the run ends saturated.
func TestControlReachesTheWorkflowInOrder(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{steered{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "s", "steered", "1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	dana := Actor{Name: "dana", Role: "operator", Capability: "mrp.pause"}
	lee := Actor{Name: "lee", Role: "human_approver", Capability: "mrp.escalate"}
	if err := r.Control(ctx, "s", "", "", "", dana); err == nil {
		t.Fatal("a control input without a trigger was accepted")
	}
	steps := []func() error{
		func() error { return r.Control(ctx, "s", "PAUSE", "", "a reason", dana) },
		func() error {
			return r.Choose(ctx, "s", "proposal:1", "path:a", Actor{Name: "olga", Role: "operator", Capability: "mrp.choose_option"})
		},
		func() error { return r.Control(ctx, "s", "ESCALATE", "", "", lee) },
		func() error {
			return r.Submit(ctx, "s", []byte(`{"y":2}`), Actor{Name: "bot", Role: "agent", Capability: "input.propose"})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"input/runner/runner/run.start", "mrp/dana/operator/mrp.pause", "choice/olga/operator/mrp.choose_option",
		"mrp/lee/human_approver/mrp.escalate", "input/bot/agent/input.propose"}
	if got := seen(t, h, "s"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("accepted\n %v\nwant\n %v", got, want)
	}
	// Three judged rounds (two inputs and the choice) got nothing done.
	if run := h.run("s"); run.Outcome != "saturated" {
		t.Fatalf("outcome %q after three judged rounds without progress", run.Outcome)
	}
}

// A control input the workflow refuses is judged like any other round: it
// cannot keep a run alive that gets nothing done.
func TestRefusedControlIsJudged(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{steered{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "s", "steered", "1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	dana := Actor{Name: "dana", Role: "operator", Capability: "mrp.pause"}
	for i := 0; i < 2; i++ {
		if err := r.Control(ctx, "s", "REFUSE", "", "", dana); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := seen(t, h, "s"); len(got) != 1 {
		t.Fatalf("refused controls changed the state: %v", got)
	}
	if run := h.run("s"); run.Outcome != "saturated" {
		t.Fatalf("outcome %q: refused controls kept the run alive", run.Outcome)
	}
}
