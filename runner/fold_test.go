package runner

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// countingStore counts the store's writes that commit a transaction of
// their own: submissions and ticks.
type countingStore struct {
	store.Store
	submits, commits, attempts, runs, inboxes atomic.Int64
}

func (c *countingStore) Run(ctx context.Context, runID string) (store.Run, error) {
	c.runs.Add(1)
	return c.Store.Run(ctx, runID)
}

func (c *countingStore) Inbox(ctx context.Context, runID string, pendingOnly bool) ([]store.Inbound, error) {
	c.inboxes.Add(1)
	return c.Store.Inbox(ctx, runID, pendingOnly)
}

func (c *countingStore) Submit(ctx context.Context, in store.Inbound) error {
	c.submits.Add(1)
	return c.Store.Submit(ctx, in)
}

func (c *countingStore) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	c.commits.Add(1)
	return c.Store.Commit(ctx, l, t)
}

func (c *countingStore) Attempts(ctx context.Context, intentID string) ([]store.Attempt, error) {
	c.attempts.Add(1)
	return c.Store.Attempts(ctx, intentID)
}

func (c *countingStore) Unwrap() store.Store { return c.Store }

type foldRig struct {
	t     *testing.T
	st    *sqlite.Store
	count *countingStore
	dest  *destination
	clock *fakeClock
}

func newFoldRig(t *testing.T, now time.Time, limit int64) *foldRig {
	t.Helper()
	clock := newFakeClock()
	clock.now = now
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &foldRig{t: t, st: st, count: &countingStore{Store: st}, dest: newDestination(), clock: clock}
}

func (g *foldRig) runner(owner string, cut func(string), limit int64) *Runner {
	g.t.Helper()
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", g.dest); err != nil {
		g.t.Fatal(err)
	}
	r, err := New(Config{Store: g.count, Workflows: []Workflow{counter{refunds{limit: limit}}}, Adapters: reg, Owner: owner, Cut: cut,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: g.clock.Now, Sleep: g.clock.Sleep})
	if err != nil {
		g.t.Fatal(err)
	}
	return r
}

// startedFoldRig is a rig whose runner has started run "c" with its first
// payment and taken it to idle: the point every pass-level test starts from.
func startedFoldRig(t *testing.T) (*foldRig, *Runner) {
	t.Helper()
	g := newFoldRig(t, time.Now().UTC().Truncate(time.Second), 1000)
	r := g.runner("runner", nil, 1000)
	if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	return g, r
}

func payment(i int) []byte { return []byte(fmt.Sprintf(`{"amount":%d,"id":"p%d","payee":"p"}`, i, i)) }

var inputter = Actor{Name: "agent", Role: "agent", Capability: "run.input"}

// record is everything of a run the store holds that a reader compares:
// events, trace, checkpoint, intents, attempts, receipts and the inbox.
func (g *foldRig) record(run string) string {
	g.t.Helper()
	var b bytes.Buffer
	evs, err := g.st.Events(ctx, run, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "event %d %s %s %s %s\n", e.Seq, e.Kind, e.Body, e.Digest, e.ChainHash)
	}
	tr, _ := g.st.Trace(ctx, run)
	for _, r := range tr {
		fmt.Fprintf(&b, "trace %s %s\n", r.Kind, r.Body)
	}
	cp, _ := g.st.Checkpoint(ctx, run)
	fmt.Fprintf(&b, "checkpoint %d %s\n", cp.Seq, cp.Body)
	ins, _ := g.st.Intents(ctx, run)
	for _, in := range ins {
		ats, _ := g.st.Attempts(ctx, in.ID)
		fmt.Fprintf(&b, "intent %s %s %s %d attempts %d\n", in.ID, in.Body, in.Outbox, in.Attempts, len(ats))
	}
	rcs, _ := g.st.Receipts(ctx, run)
	for _, rc := range rcs {
		fmt.Fprintf(&b, "receipt %s %s\n", rc.IntentID, rc.Body)
	}
	inbox, _ := g.st.Inbox(ctx, run, false)
	for _, in := range inbox {
		fmt.Fprintf(&b, "inbox %d %s %s %s %s %s %s %s %v\n", in.Seq, in.ID, in.Kind, in.Actor, in.ActorRole, in.Capability, in.Body, in.Digest, in.Consumed)
	}
	return b.String()
}

// SubmitAdvance writes, byte for byte, what Submit and then Advance write,
// in one commit fewer per input.
func TestSubmitAdvanceWritesWhatSubmitAndAdvanceWrite(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	plain, folded := newFoldRig(t, now, 1000), newFoldRig(t, now, 1000)
	rp, rf := plain.runner("runner", nil, 1000), folded.runner("runner", nil, 1000)
	for _, g := range []struct {
		r *Runner
		g *foldRig
	}{{rp, plain}, {rf, folded}} {
		if err := g.r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
			t.Fatal(err)
		}
		if err := g.r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const inputs = 4
	s0, c0 := plain.count.submits.Load(), plain.count.commits.Load()
	fs0, fc0 := folded.count.submits.Load(), folded.count.commits.Load()
	for i := 2; i < 2+inputs; i++ {
		if err := rp.Submit(ctx, "c", payment(i), inputter); err != nil {
			t.Fatal(err)
		}
		if moved, err := rp.Advance(ctx, "c"); err != nil || !moved {
			t.Fatalf("advance: moved %v, %v", moved, err)
		}
		if moved, err := rf.SubmitAdvance(ctx, "c", payment(i), inputter); err != nil || !moved {
			t.Fatalf("submit and advance: moved %v, %v", moved, err)
		}
	}
	if p, f := plain.record("c"), folded.record("c"); p != f {
		t.Fatalf("records differ\nSubmit, Advance:\n%s\nSubmitAdvance:\n%s", p, f)
	}
	if folded.dest.count() != 1+inputs {
		t.Fatalf("%d mutations for %d inputs", folded.dest.count(), 1+inputs)
	}
	ps, pc := plain.count.submits.Load()-s0, plain.count.commits.Load()-c0
	fs, fc := folded.count.submits.Load()-fs0, folded.count.commits.Load()-fc0
	if ps != inputs || pc != 2*inputs || fs != 0 || fc != 2*inputs {
		t.Fatalf("writes per %d inputs: Submit, Advance %d submits + %d commits; SubmitAdvance %d submits + %d commits", inputs, ps, pc, fs, fc)
	}
	if pending, _ := folded.st.Inbox(ctx, "c", true); len(pending) != 0 {
		t.Fatalf("inputs left pending: %+v", pending)
	}
}

// An input the pass does not accept is submitted the ordinary way: it is
// durable when SubmitAdvance returns, and waits in the inbox.
func TestSubmitAdvanceFallsBackToSubmit(t *testing.T) {
	pending := func(g *foldRig, run string) int {
		t.Helper()
		in, err := g.st.Inbox(ctx, run, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(in)
	}
	t.Run("run waiting for a person", func(t *testing.T) {
		g := newFoldRig(t, time.Now().UTC().Truncate(time.Second), 100)
		r := g.runner("runner", nil, 100)
		if err := r.Start(ctx, "c", "counter", "1", payment(900)); err != nil { // above the limit: waits for approval
			t.Fatal(err)
		}
		if err := r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
		s0 := g.count.submits.Load()
		if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
			t.Fatal(err)
		}
		if st, _ := r.Inspect(ctx, "c"); st.State != "WAIT_APPROVAL" || pending(g, "c") != 1 || g.count.submits.Load() != s0+1 {
			t.Fatalf("state %s, %d pending, %d submits", st.State, pending(g, "c"), g.count.submits.Load()-s0)
		}
	})
	t.Run("lease held by another runner", func(t *testing.T) {
		g := newFoldRig(t, time.Now().UTC().Truncate(time.Second), 1000)
		r, other := g.runner("a", nil, 1000), g.runner("b", nil, 1000)
		if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Advance(ctx, "c"); err != nil { // b now holds the lease
			t.Fatal(err)
		}
		c0 := g.count.commits.Load()
		moved, err := r.SubmitAdvance(ctx, "c", payment(2), inputter)
		if err != nil || moved || pending(g, "c") != 1 || g.count.commits.Load() != c0 {
			t.Fatalf("moved %v err %v, %d pending, %d commits", moved, err, pending(g, "c"), g.count.commits.Load()-c0)
		}
		if _, err := other.Advance(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if g.dest.count() != 2 || pending(g, "c") != 0 {
			t.Fatalf("%d mutations, %d pending", g.dest.count(), pending(g, "c"))
		}
	})
	t.Run("run ended", func(t *testing.T) {
		g := newFoldRig(t, time.Now().UTC().Truncate(time.Second), 1000)
		r := g.runner("runner", nil, 1000)
		if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
			t.Fatal(err)
		}
		if err := r.Cancel(ctx, "c", "done", requester); err != nil {
			t.Fatal(err)
		}
		if err := r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); store.CodeOf(err) != store.CodeInvalidTransition {
			t.Fatalf("input to an ended run: %v", err)
		}
	})
	t.Run("not an input", func(t *testing.T) {
		g := newFoldRig(t, time.Now().UTC().Truncate(time.Second), 1000)
		r := g.runner("runner", nil, 1000)
		if _, err := r.SubmitAdvance(ctx, "c", []byte(`{"a":`), inputter); err == nil {
			t.Fatal("malformed input accepted")
		}
	})
}

// A crash at each cut point of a step SubmitAdvance started loses nothing
// and doubles nothing: before the intent commit the input was never
// durable (the caller, told nothing, hands it in again); after it, the
// input is in the inbox, consumed, and a restarted runner finishes the
// step. Either way the destination sees one mutation per input.
func TestSubmitAdvanceCrashAtEveryCutPoint(t *testing.T) {
	for _, point := range []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"} {
		t.Run(point, func(t *testing.T) {
			g, _ := startedFoldRig(t)
			head := func() int64 {
				run, err := g.st.Run(ctx, "c")
				if err != nil {
					t.Fatal(err)
				}
				return run.Head
			}
			h0 := head()
			dying := g.runner("runner", crash{point}.cut, 1000)
			func() {
				defer func() {
					if c, ok := recover().(crash); !ok || c.at != point {
						t.Fatalf("did not stop at %s", point)
					}
				}()
				dying.SubmitAdvance(ctx, "c", payment(2), inputter)
			}()
			inbox, _ := g.st.Inbox(ctx, "c", false)
			restarted := g.runner("runner", nil, 1000)
			if point == "before-intent-commit" {
				if len(inbox) != 1 || head() != h0 {
					t.Fatalf("an input that never committed left %d inbox entries, head %d → %d", len(inbox), h0, head())
				}
				if _, err := restarted.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
					t.Fatal(err)
				}
			} else if len(inbox) != 2 || !inbox[1].Consumed || head() == h0 {
				t.Fatalf("after the intent commit: inbox %+v, head %d → %d", inbox, h0, head())
			}
			if err := restarted.RunToIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if g.dest.count() != 2 {
				t.Fatalf("%d mutations for 2 inputs", g.dest.count())
			}
			st, err := restarted.Inspect(ctx, "c")
			if err != nil || st.State != "INGEST" || st.Accepted != 4 {
				t.Fatalf("after recovery: %+v %v", st, err)
			}
			rcs, _ := g.st.Receipts(ctx, "c")
			if len(rcs) != 2 {
				t.Fatalf("%d receipts for 2 inputs", len(rcs))
			}
			if pending, _ := g.st.Inbox(ctx, "c", true); len(pending) != 0 {
				t.Fatalf("pending after recovery: %+v", pending)
			}
		})
	}
}

// A pass sends the attempt its own commit began without reading the
// intent's attempts back, and numbers a retry within the pass as the store
// does.
func TestAttemptBegunByThePassIsNotReadBack(t *testing.T) {
	g, r := startedFoldRig(t)
	g.dest.script = []effect.Outcome{effect.FailedTransient}
	if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
		t.Fatal(err)
	}
	if n := g.count.attempts.Load(); n != 0 {
		t.Fatalf("%d attempt reads for attempts the passes began", n)
	}
	ins, _ := g.st.Intents(ctx, "c")
	ats, _ := g.st.Attempts(ctx, ins[1].ID)
	rcs, _ := g.st.Receipts(ctx, "c")
	if len(ats) != 2 || ats[0].Status != store.AttemptFailedTransient || ats[1].Status != store.AttemptSucceeded || len(rcs) != 2 ||
		!bytes.Contains(rcs[1].Body, []byte(ins[1].ID+"/attempt/2")) || g.dest.count() != 2 {
		t.Fatalf("attempts %+v, receipt %s, %d mutations", ats, rcs[1].Body, g.dest.count())
	}
}

// A pass that follows this runner's own last pass of the run, under the
// same comfortably unexpired lease, starts from the header that pass left
// instead of reading it, and a pass handed an input takes the inbox that
// pass left empty as read: a step reads nothing.
func TestPassStartsFromTheHeaderItsPredecessorLeft(t *testing.T) {
	g, r := startedFoldRig(t)
	runs, inboxes := g.count.runs.Load(), g.count.inboxes.Load()
	for i := 2; i < 5; i++ {
		if moved, err := r.SubmitAdvance(ctx, "c", payment(i), inputter); err != nil || !moved {
			t.Fatalf("moved %v, %v", moved, err)
		}
	}
	if n, m := g.count.runs.Load()-runs, g.count.inboxes.Load()-inboxes; n != 0 || m != 0 {
		t.Fatalf("3 steps read the run %d times and the inbox %d times", n, m)
	}
	// Past half the lease the header is read again (and the lease renewed).
	g.clock.Advance(20 * time.Second)
	runs = g.count.runs.Load()
	if _, err := r.SubmitAdvance(ctx, "c", payment(5), inputter); err != nil {
		t.Fatal(err)
	}
	if g.count.runs.Load() != runs+1 || g.dest.count() != 5 {
		t.Fatalf("%d reads of an aging lease's run, %d mutations", g.count.runs.Load()-runs, g.dest.count())
	}
}

// A run quarantined while this runner holds its lease is not advanced from
// the header the runner remembers: the pass is fenced, starts again from
// the store, and finds the run parked. The input is kept, pending.
func TestQuarantineStopsAPassStartedFromARememberedHeader(t *testing.T) {
	g, r := startedFoldRig(t)
	before, _ := g.st.Run(ctx, "c")
	if err := g.st.Quarantine(ctx, "c", "held for inspection"); err != nil {
		t.Fatal(err)
	}
	moved, err := r.SubmitAdvance(ctx, "c", payment(2), inputter)
	if err != nil || moved {
		t.Fatalf("advancing a quarantined run: moved %v, %v", moved, err)
	}
	after, _ := g.st.Run(ctx, "c")
	pending, _ := g.st.Inbox(ctx, "c", true)
	if after.Head != before.Head || g.dest.count() != 1 || len(pending) != 1 {
		t.Fatalf("head %d → %d, %d mutations, %d pending", before.Head, after.Head, g.dest.count(), len(pending))
	}
	if moved, err := r.Advance(ctx, "c"); err != nil || moved {
		t.Fatalf("advance of a quarantined run: moved %v, %v", moved, err)
	}
}

// An input submitted from elsewhere after this runner's last pass is not
// overtaken by one handed to SubmitAdvance: the pass that took the inbox as
// empty is refused at its first commit, made again from the store, and
// accepts the two in the order they arrived.
func TestSubmitAdvanceDoesNotOvertakeAnEarlierSubmission(t *testing.T) {
	g, r := startedFoldRig(t)
	if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
		t.Fatal(err)
	}
	// Straight to the store, as another process would.
	body := []byte(`{"amount":3,"id":"p3","payee":"p"}`)
	if err := g.st.Submit(ctx, store.Inbound{ID: "elsewhere", RunID: "c", Kind: KindInput, ActorRole: "agent", Actor: "other",
		Capability: "run.input", Body: body, Digest: store.BodyDigest(body)}); err != nil {
		t.Fatal(err)
	}
	commits, inboxes := g.count.commits.Load(), g.count.inboxes.Load()
	if moved, err := r.SubmitAdvance(ctx, "c", payment(4), inputter); err != nil || !moved {
		t.Fatalf("moved %v, %v", moved, err)
	}
	ins, _ := g.st.Intents(ctx, "c")
	var order []string
	for _, in := range ins {
		order = append(order, in.ID)
	}
	if fmt.Sprint(order) != "[intent:p1 intent:p2 intent:p3 intent:p4]" || g.dest.count() != 4 {
		t.Fatalf("intents in order %v, %d mutations", order, g.dest.count())
	}
	// One refused commit, then both steps in one pass: three commits (the
	// first step's receipt goes with the second's intent); the inbox read
	// once, by the pass made again.
	if c, i := g.count.commits.Load()-commits, g.count.inboxes.Load()-inboxes; c != 4 || i != 1 {
		t.Fatalf("%d commits and %d inbox reads", c, i)
	}
	if pending, _ := g.st.Inbox(ctx, "c", true); len(pending) != 0 {
		t.Fatalf("pending %+v", pending)
	}
}
