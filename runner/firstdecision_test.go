package runner

import (
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// decideCounter counts the workflow's Decide calls.
type decideCounter struct {
	Workflow
	n *atomic.Int64
}

func (c decideCounter) Decide(state []byte, in Accepted) (Decision, error) {
	c.n.Add(1)
	return c.Workflow.Decide(state, in)
}

// A run's first pass takes the decision Start made on its first input
// instead of deciding again, and writes byte for byte what a runner that
// did not start the run writes.
func TestFirstPassTakesTheDecisionStartMade(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, tc := range []struct {
		name  string
		usage Usage
		saved int64 // Decide calls the first pass saves
	}{
		{"plain input", Usage{}, 1},
		// The run stores the report beside the input; the workflow sees
		// the same input and usage on both occasions.
		{"input with usage", Usage{Tokens: 5, CostMicros: 7}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var same, other atomic.Int64
			one, two := newFoldRig(t, now, 1000), newFoldRig(t, now, 1000)
			counted := func(r *Runner, n *atomic.Int64) *Runner {
				for k, wf := range r.workflows {
					r.workflows[k] = decideCounter{wf, n}
				}
				return r
			}
			// The run started and advanced by one runner.
			r1 := counted(one.runner("runner", nil, 1000), &same)
			if err := r1.StartWithUsage(ctx, "c", "counter", "1", payment(1), tc.usage, inputter); err != nil {
				t.Fatal(err)
			}
			if err := r1.RunToIdle(ctx); err != nil {
				t.Fatal(err)
			}
			// The same run started by one runner, advanced by another.
			starter := counted(two.runner("starter", nil, 1000), &other)
			if err := starter.StartWithUsage(ctx, "c", "counter", "1", payment(1), tc.usage, inputter); err != nil {
				t.Fatal(err)
			}
			if err := counted(two.runner("runner", nil, 1000), &other).RunToIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if a, b := one.record("c"), two.record("c"); a != b {
				t.Fatalf("records differ\nstarted and advanced by one runner:\n%s\nby two:\n%s", a, b)
			}
			if one.dest.count() != 1 || two.dest.count() != 1 {
				t.Fatalf("mutations %d and %d, want 1 each", one.dest.count(), two.dest.count())
			}
			if got := other.Load() - same.Load(); got != tc.saved {
				t.Fatalf("Decide calls: %d by one runner, %d by two; saved %d, want %d", same.Load(), other.Load(), got, tc.saved)
			}
			if len(r1.first) != 0 || len(starter.first) != 1 {
				t.Fatalf("kept decisions: %d after the run's first pass, %d on the runner that never advanced it", len(r1.first), len(starter.first))
			}
		})
	}
}

// A kept decision is taken only for exactly the input and state it was
// made on, under the same definition.
func TestFirstDecisionMatchesOnlyItsOwnInput(t *testing.T) {
	wf := counter{refunds{limit: 1000}}
	f, err := firstDecision(wf, "c", payment(1), Usage{}, inputter)
	if err != nil || f == nil {
		t.Fatalf("firstDecision: %v, %v", f, err)
	}
	base := f.in
	state := append([]byte(nil), f.state...)
	if !f.matches(wf, state, base) {
		t.Fatal("the input it was made on does not match")
	}
	u := Usage{Tokens: 1}
	for name, in := range map[string]func(Accepted) Accepted{
		"seq":        func(a Accepted) Accepted { a.Seq = 2; return a },
		"kind":       func(a Accepted) Accepted { a.Kind = "choice"; return a },
		"body":       func(a Accepted) Accepted { a.Body = payment(2); return a },
		"digest":     func(a Accepted) Accepted { a.Digest = store.BodyDigest(payment(2)); return a },
		"actor":      func(a Accepted) Accepted { a.Actor = "someone"; return a },
		"role":       func(a Accepted) Accepted { a.ActorRole = "operator"; return a },
		"capability": func(a Accepted) Accepted { a.Capability = "run.start"; return a },
		"usage":      func(a Accepted) Accepted { a.Usage = &u; return a },
	} {
		if f.matches(wf, state, in(base)) {
			t.Errorf("an input with another %s matches", name)
		}
	}
	// matches compares every field of an input: one added to Accepted
	// must be added there too.
	if n := reflect.TypeOf(Accepted{}).NumField(); n != 8 {
		t.Errorf("Accepted has %d fields; matches compares 8", n)
	}
	if f.matches(wf, []byte(`{"paid":1}`), base) {
		t.Error("another state matches")
	}
	if f.matches(wf.refunds, state, base) {
		t.Error("another workflow matches")
	}
	if f.matches(counter{refunds{limit: 5}}, state, base) {
		t.Error("another definition matches")
	}
	withUsage, err := firstDecision(wf, "c", payment(1), u, inputter)
	if err != nil || withUsage.matches(wf, state, base) {
		t.Fatalf("a decision made with a usage report matches an input without one (%v)", err)
	}
}
