package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// statesKept wraps a workflow and keeps every state it decided, by
// reference, with a copy taken when it was returned.
type statesKept struct {
	*bundle.Workflow
	mu     sync.Mutex
	held   [][]byte
	copies [][]byte
}

func (w *statesKept) Decide(state []byte, in runner.Accepted) (runner.Decision, error) {
	return w.keep(w.Workflow.Decide(state, in))
}

// DecideUntraced keeps the states a replay decides (verify.Replay asks a
// workflow that has it) as Decide keeps the runner's.
func (w *statesKept) DecideUntraced(state []byte, in runner.Accepted) (runner.Decision, error) {
	return w.keep(w.Workflow.DecideUntraced(state, in))
}

func (w *statesKept) keep(d runner.Decision, err error) (runner.Decision, error) {
	if err == nil {
		w.mu.Lock()
		w.held = append(w.held, d.State)
		w.copies = append(w.copies, bytes.Clone(d.State))
		w.mu.Unlock()
	}
	return d, err
}

// changed counts the states whose bytes are no longer those returned.
func (w *statesKept) changed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for i, b := range w.held {
		if !bytes.Equal(b, w.copies[i]) {
			n++
		}
	}
	return n
}

// Nobody changes the state a workflow decided (workflow.Result.State,
// runner.Decision.State): the workflow's cache keeps the document itself
// as the key of the state it decoded it from (decision 1725). Three runs
// take governed steps, interleaved, with lagging receipt commits; one is
// handed an input it refuses (its State is the document it was handed);
// one waits for a person's approval and is re-authorized with the grant;
// an input arriving behind the runner's back makes a pass again; then
// every run is verified and replayed through the same workflow. Every
// state decided along the way must still hold the bytes it was returned
// with.
func TestDecidedStatesAreNeverChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inner, st, sb, reg := refundOnSQLite(ctx, t, sqlite.Options{})
	wf := &statesKept{Workflow: inner}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	agent := runner.Actor{Name: "agent", Role: "agent", Capability: "run.input"}
	runs := []string{"a", "b", "c"}
	for i, id := range runs {
		if err := r.Start(ctx, id, wf.ID(), wf.Version(), refundInput(fmt.Sprintf("%s-0", id), 40+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		for i, id := range runs {
			if _, err := r.SubmitAdvance(ctx, id, refundInput(fmt.Sprintf("%s-%d", id, step), 40+i+step), agent); err != nil {
				t.Fatalf("run %s step %d: %v", id, step, err)
			}
		}
	}
	// Refused: not a refund request the workflow reads.
	if _, err := r.SubmitAdvance(ctx, "a", []byte(`{"type":"refund.requested/1","payload":{}}`), agent); err != nil {
		t.Fatal(err)
	}
	// A large refund waits for a person, who approves it.
	if _, err := r.SubmitAdvance(ctx, "b", refundInput("b-large", 900), agent); err != nil {
		t.Fatal(err)
	}
	in, err := r.Inspect(ctx, "b")
	if err != nil || in.State != "WAIT_APPROVAL" || len(in.Waiting) != 1 {
		t.Fatalf("large refund: %+v %v", in, err)
	}
	who := runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	if err := r.Approve(ctx, "b", in.Waiting[0].RequestID, who, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SubmitAdvance(ctx, "c", refundInput("c-last", 44), agent); err != nil {
		t.Fatal(err)
	}
	if n := wf.changed(); n > 0 {
		t.Fatalf("%d states decided were changed afterwards", n)
	}
	for _, id := range runs {
		rp, err := verify.Replay(ctx, st, wf, id)
		if err != nil || !rp.OK() {
			t.Fatalf("replay %s: %v %+v", id, err, rp)
		}
	}
	if n := len(sb.Mutations()); n != 14 {
		t.Fatalf("%d mutations, want 14: not the steps asked for", n)
	}
	wf.mu.Lock()
	decided := len(wf.held)
	wf.mu.Unlock()
	if decided < 40 {
		t.Fatalf("%d states decided: not the steps asked for", decided)
	}
	if n := wf.changed(); n > 0 {
		t.Fatalf("%d of %d states decided were changed afterwards", n, decided)
	}
}
