package storetest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// RunKeepsNone holds a store to what store.Store.Commit promises its
// caller: once Commit returns, the store holds none of the tick's byte
// slices, nor its slices of records, and the caller may write over every
// one of them. Runs are driven at once, C of them (C = 1 and C = 8), each
// through steps of a governed step's two commits: a durable tick (an
// input submitted and consumed, an intent begun, a grant consumed every
// other step) and a lagging receipt tick (store.Tick.MayLag), then ticks
// the store refuses (a stale head, a receipt for an intent it does not
// know), which a store that keeps the lagging tick's transaction open may
// answer by running the lagging tick again. Two stores take the same
// steps: right after each Commit returns, whatever it returned, every
// body, every record of every slice of the tick handed to one of them is
// overwritten; the other's are left alone. Every caller's outcome, every
// record read back, and the replay of each run's chain from the bodies
// read must be the same in both, byte for byte, and be what the steps
// handed.
func RunKeepsNone(t *testing.T, open Opener) {
	for _, c := range []int{1, 8} {
		t.Run(fmt.Sprintf("C=%d", c), func(t *testing.T) {
			clock := NewClock()
			poisoned := open(t, clock.Now)
			t.Cleanup(func() { poisoned.Close() })
			twin := open(t, clock.Now)
			t.Cleanup(func() { twin.Close() })
			const steps = 6
			gotP := driveKeepsNone(t, poisoned, c, steps, true)
			gotT := driveKeepsNone(t, twin, c, steps, false)
			for i := range c {
				id := keepsNoneRun(i)
				if gotP[i] != gotT[i] {
					t.Fatalf("run %s: callers' outcomes differ with the tick's slices overwritten after Commit:\n%s\nwithout:\n%s", id, gotP[i], gotT[i])
				}
				a, b := recordText(t, poisoned, id), recordText(t, twin, id)
				if a != b {
					t.Fatalf("run %s: the records read back differ with the tick's slices overwritten after Commit:\n%s\nwithout:\n%s", id, a, b)
				}
				replayKeepsNone(t, poisoned, id, steps)
				replayKeepsNone(t, twin, id, steps)
			}
		})
	}
}

func keepsNoneRun(i int) string { return fmt.Sprintf("keeps-none-%d", i) }

// keepsNoneTicks are a step's ticks of run id, built afresh on every call,
// so that each store is handed slices of its own. head is the run's head
// before the step.
func keepsNoneTicks(id string, step int, head int64) (durable, lagging store.Tick, refused []store.Tick) {
	in := Inb(id, fmt.Sprintf("in-%d", step), "input", fmt.Sprintf(`{"input":%d,"run":%q}`, step, id))
	intent := In(fmt.Sprintf("%s-i%d", id, step), fmt.Sprintf("%s-k%d", id, step), fmt.Sprintf("content %d", step))
	ck := func(seq int64, stage string) *store.Checkpoint {
		b := []byte(fmt.Sprintf(`{"run":%q,"seq":%d,"stage":%q,"state":%q}`, id, seq, stage, strings.Repeat("s", 64*step)))
		return &store.Checkpoint{FormatVersion: 1, BuildDigest: "build-" + id, Body: b, Digest: store.BodyDigest(b)}
	}
	tr := func(kind string) store.TraceRecord {
		return store.TraceRecord{Kind: kind, Body: []byte(fmt.Sprintf(`{"kind":%q,"run":%q,"step":%d}`, kind, id, step))}
	}
	durable = store.Tick{ExpectHead: head, State: "EXECUTE", ExpectInboxEmpty: true,
		Events: []store.Event{
			Ev("accepted", fmt.Sprintf(`{"seq":%d,"input":%q}`, step, in.Digest)),
			Ev("control", fmt.Sprintf(`{"event":"EVENT_ACCEPTED","step":%d}`, step)),
			Ev("control", fmt.Sprintf(`{"event":"EFFECT_COMMITTED","step":%d}`, step)),
		},
		Checkpoint: ck(head+3, "execute"),
		Intents:    []store.Intent{intent},
		Begin:      []string{intent.ID},
		Submit:     []store.Inbound{in},
		Consume:    []string{in.ID},
		Trace:      []store.TraceRecord{tr("decide")},
	}
	if step%2 == 1 {
		durable.Intents[0].ApprovalID = keepsNoneGrant(id, step)
		durable.Approvals = []store.ApprovalUse{{ApprovalID: keepsNoneGrant(id, step), IntentID: intent.ID,
			Check: func(store.Approval, time.Time) error { return nil }}}
	}
	rc := []byte(fmt.Sprintf(`{"intent_id":%q,"outcome":"confirmed_success","step":%d}`, intent.ID, step))
	lagging = store.Tick{ExpectHead: head + 3, State: "INGEST", MayLag: true,
		Events: []store.Event{
			Ev("control", fmt.Sprintf(`{"event":"RECEIPT","step":%d}`, step)),
			Ev("accepted", fmt.Sprintf(`{"receipt":%q,"step":%d}`, intent.ID, step)),
		},
		Checkpoint: ck(head+5, "ingest"),
		Results:    []store.AttemptResult{{IntentID: intent.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone, Detail: "applied"}},
		Receipts:   []store.Receipt{{IntentID: intent.ID, Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}},
		Trace:      []store.TraceRecord{tr("receipt")},
	}
	// Refused after the lagging tick: a head the run has left, and (with
	// the right head) a receipt for an intent the store does not know.
	stale := lagging
	stale.MayLag, stale.ExpectHead = false, head
	stale.Events = []store.Event{Ev("control", fmt.Sprintf(`{"event":"STALE","step":%d}`, step))}
	stale.Checkpoint = ck(head+1, "stale")
	stale.Results, stale.Receipts = nil, nil
	stale.Trace = []store.TraceRecord{tr("stale")}
	unknown := stale
	unknown.ExpectHead = head + 5
	unknown.Events = []store.Event{Ev("control", fmt.Sprintf(`{"event":"UNKNOWN","step":%d}`, step))}
	unknown.Checkpoint = ck(head+6, "unknown")
	unknown.Receipts = []store.Receipt{{IntentID: id + "-nope", Outcome: "confirmed_success", Body: []byte(`{"nope":1}`), Digest: store.BodyDigest([]byte(`{"nope":1}`))}}
	unknown.Trace = []store.TraceRecord{tr("unknown")}
	return durable, lagging, []store.Tick{stale, unknown}
}

func keepsNoneGrant(id string, step int) string { return fmt.Sprintf("%s-g%d", id, step) }

// poisonTick overwrites every byte of every body in k and every record of
// every slice it holds, through the slices themselves: what a caller that
// reuses its buffers does once Commit has returned.
func poisonTick(k store.Tick) {
	bad := func(b []byte) {
		for i := range b {
			b[i] = '#'
		}
	}
	for i := range k.Events {
		bad(k.Events[i].Body)
		k.Events[i] = store.Event{Seq: -1, Kind: "poisoned", Body: k.Events[i].Body, Digest: "sha256:poisoned", PrevHash: "x", ChainHash: "y"}
	}
	if cp := k.Checkpoint; cp != nil {
		bad(cp.Body)
		*cp = store.Checkpoint{Seq: -1, FormatVersion: -1, BuildDigest: "poisoned", Body: cp.Body, Digest: "sha256:poisoned"}
	}
	for i := range k.Intents {
		bad(k.Intents[i].Body)
		k.Intents[i] = store.Intent{ID: "poisoned", RunID: "poisoned", EffectType: "poisoned", IdempotencyKey: "poisoned", Body: k.Intents[i].Body, Digest: "sha256:poisoned"}
	}
	for i := range k.Approvals {
		k.Approvals[i] = store.ApprovalUse{ApprovalID: "poisoned", IntentID: "poisoned"}
	}
	for i := range k.Results {
		k.Results[i] = store.AttemptResult{IntentID: "poisoned", N: -1, Status: "poisoned", Outbox: "poisoned"}
	}
	for i := range k.Receipts {
		bad(k.Receipts[i].Body)
		k.Receipts[i] = store.Receipt{IntentID: "poisoned", Outcome: "poisoned", Body: k.Receipts[i].Body, Digest: "sha256:poisoned"}
	}
	for i := range k.Consume {
		k.Consume[i] = "poisoned"
	}
	for i := range k.Begin {
		k.Begin[i] = "poisoned"
	}
	for i := range k.Submit {
		bad(k.Submit[i].Body)
		k.Submit[i] = store.Inbound{ID: "poisoned", RunID: "poisoned", Kind: "poisoned", Body: k.Submit[i].Body, Digest: "sha256:poisoned"}
	}
	for i := range k.Trace {
		bad(k.Trace[i].Body)
		k.Trace[i] = store.TraceRecord{Kind: "poisoned", Body: k.Trace[i].Body}
	}
}

// driveKeepsNone takes c runs through steps each, at once, and returns
// each run's outcomes of its callers, in order.
func driveKeepsNone(t *testing.T, s store.Store, c, steps int, poison bool) []string {
	t.Helper()
	out := make([]string, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	for i := range c {
		id := keepsNoneRun(i)
		must(t, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "INGEST"}))
		for step := 1; step <= steps; step += 2 {
			body := []byte(fmt.Sprintf(`{"approval_id":%q}`, keepsNoneGrant(id, step)))
			must(t, s.GrantApproval(ctx, store.Approval{ID: keepsNoneGrant(id, step), RunID: id, RequestDigest: store.BodyDigest([]byte("req")),
				Nonce: keepsNoneGrant(id, step), Body: body, Digest: store.BodyDigest(body), ExpiresAt: NewClock().Now().Add(time.Hour)}))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := s.AcquireLease(ctx, id, "w", time.Hour)
			if err != nil {
				errs[i] = err
				return
			}
			var log strings.Builder
			commit := func(what string, k store.Tick) error {
				err := s.Commit(ctx, l, k)
				if poison {
					poisonTick(k)
				}
				fmt.Fprintf(&log, "%s: %s\n", what, store.CodeOf(err))
				if err != nil && store.CodeOf(err) == "" {
					return err
				}
				return nil
			}
			head := int64(0)
			for step := 1; step <= steps; step++ {
				durable, lagging, refused := keepsNoneTicks(id, step, head)
				if err := commit(fmt.Sprintf("step %d durable", step), durable); err != nil {
					errs[i] = err
					return
				}
				if err := commit(fmt.Sprintf("step %d lagging", step), lagging); err != nil {
					errs[i] = err
					return
				}
				for j, k := range refused {
					if err := commit(fmt.Sprintf("step %d refused %d", step, j), k); err != nil {
						errs[i] = err
						return
					}
				}
				head += 5
			}
			out[i] = log.String()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	return out
}

// stored is what a store reads back of a run through its separate reads.
type stored struct {
	run        store.Run
	inbox      []store.Inbound
	events     []store.Event
	checkpoint store.Checkpoint // zero when the run has none
	intents    []store.Intent
	receipts   []store.Receipt
	trace      []store.TraceRecord
}

// readStored reads run id back through the store's separate reads; a run
// without a checkpoint reads as one with a zero checkpoint.
func readStored(t *testing.T, s store.Store, id string) stored {
	t.Helper()
	var r stored
	var err error
	r.run, err = s.Run(ctx, id)
	must(t, err)
	r.inbox, err = s.Inbox(ctx, id, false)
	must(t, err)
	r.events, err = s.Events(ctx, id, 0)
	must(t, err)
	r.checkpoint, err = s.Checkpoint(ctx, id)
	if store.CodeOf(err) != store.CodeNotFound {
		must(t, err)
	}
	r.intents, err = s.Intents(ctx, id)
	must(t, err)
	r.receipts, err = s.Receipts(ctx, id)
	must(t, err)
	r.trace, err = s.Trace(ctx, id)
	must(t, err)
	return r
}

// recordText is every record of run id the store reads back, as text.
func recordText(t *testing.T, s store.Store, id string) string {
	t.Helper()
	var b bytes.Buffer
	if rr, ok := s.(RecordReader); ok {
		r := ReadRecord(t, ctx, rr, id)
		r.Run.Lease.ExpiresAt, r.Run.CreatedAt, r.Run.UpdatedAt = time.Time{}, time.Time{}, time.Time{}
		fmt.Fprintf(&b, "%+v\n", r.Run)
		for _, e := range r.Events {
			fmt.Fprintf(&b, "event %d %s %s %s %s %d %q\n", e.Seq, e.Kind, e.Digest, e.PrevHash, e.ChainHash, e.Generation, e.Body)
		}
		fmt.Fprintf(&b, "checkpoint %d %d %s %s %q\n", r.Checkpoint.Seq, r.Checkpoint.FormatVersion, r.Checkpoint.BuildDigest, r.Checkpoint.Digest, r.Checkpoint.Body)
		for _, in := range r.Intents {
			fmt.Fprintf(&b, "intent %+v %q\n", in, in.Body)
		}
		for _, a := range r.Attempts {
			fmt.Fprintf(&b, "attempt %s %d %s %d %q\n", a.IntentID, a.N, a.Status, a.Generation, a.Detail)
		}
		for _, a := range r.Approvals {
			fmt.Fprintf(&b, "approval %s %s %s %s %q\n", a.ID, a.Status, a.ConsumedBy, a.Digest, a.Body)
		}
		for _, rc := range r.Receipts {
			fmt.Fprintf(&b, "receipt %s %s %s %q\n", rc.IntentID, rc.Outcome, rc.Digest, rc.Body)
		}
		for _, tr := range r.Trace {
			fmt.Fprintf(&b, "trace %s %q\n", tr.Kind, tr.Body)
		}
		for _, in := range r.Inbox {
			fmt.Fprintf(&b, "inbound %s %d %s %v %s %q\n", in.ID, in.Seq, in.Kind, in.Consumed, in.Digest, in.Body)
		}
		return b.String()
	}
	r := readStored(t, s, id)
	run, cp, ins, rcs, tr, inb := r.run, r.checkpoint, r.intents, r.receipts, r.trace, r.inbox
	run.Lease.ExpiresAt, run.CreatedAt, run.UpdatedAt = time.Time{}, time.Time{}, time.Time{}
	fmt.Fprintf(&b, "%+v\n", run)
	for _, e := range r.events {
		fmt.Fprintf(&b, "event %d %s %s %s %s %d %q\n", e.Seq, e.Kind, e.Digest, e.PrevHash, e.ChainHash, e.Generation, e.Body)
	}
	fmt.Fprintf(&b, "checkpoint %d %d %s %s %q\n", cp.Seq, cp.FormatVersion, cp.BuildDigest, cp.Digest, cp.Body)
	for _, in := range ins {
		fmt.Fprintf(&b, "intent %+v %q\n", in, in.Body)
		as, err := s.Attempts(ctx, in.ID)
		must(t, err)
		for _, a := range as {
			fmt.Fprintf(&b, "attempt %s %d %s %d %q\n", a.IntentID, a.N, a.Status, a.Generation, a.Detail)
		}
	}
	for _, rc := range rcs {
		fmt.Fprintf(&b, "receipt %s %s %s %q\n", rc.IntentID, rc.Outcome, rc.Digest, rc.Body)
	}
	for _, r := range tr {
		fmt.Fprintf(&b, "trace %s %q\n", r.Kind, r.Body)
	}
	for _, in := range inb {
		fmt.Fprintf(&b, "inbound %s %d %s %v %s %q\n", in.ID, in.Seq, in.Kind, in.Consumed, in.Digest, in.Body)
	}
	return b.String()
}

// replayKeepsNone replays run id from what the store reads back: each
// event's digest and chain hash taken again from its bytes, and every
// body, the checkpoint's, the intents', the receipts', the trace's and the
// inbox's, what the steps handed, in order.
func replayKeepsNone(t *testing.T, s store.Store, id string, steps int) {
	t.Helper()
	var want store.Tick
	head := int64(0)
	for step := 1; step <= steps; step++ {
		durable, lagging, _ := keepsNoneTicks(id, step, head)
		for _, k := range []store.Tick{durable, lagging} {
			want.Events = append(want.Events, k.Events...)
			want.Intents = append(want.Intents, k.Intents...)
			want.Receipts = append(want.Receipts, k.Receipts...)
			want.Submit = append(want.Submit, k.Submit...)
			want.Trace = append(want.Trace, k.Trace...)
			want.Checkpoint = k.Checkpoint
		}
		head += 5
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("run %s replayed: "+format, append([]any{id}, args...)...)
	}
	run, err := s.Run(ctx, id)
	must(t, err)
	evs, err := s.Events(ctx, id, 0)
	must(t, err)
	if len(evs) != len(want.Events) || run.Head != int64(len(want.Events)) || run.State != "INGEST" {
		fail("%d events, head %d in %s; want %d in INGEST", len(evs), run.Head, run.State, len(want.Events))
	}
	prev := store.GenesisHash
	for i, e := range evs {
		w := want.Events[i]
		if e.Seq != int64(i+1) || e.Kind != w.Kind || !bytes.Equal(e.Body, w.Body) || e.Digest != store.BodyDigest(e.Body) ||
			e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			fail("event %d is %d %s %q (chain %s after %s), want %s %q after %s", i+1, e.Seq, e.Kind, e.Body, e.ChainHash, e.PrevHash, w.Kind, w.Body, prev)
		}
		prev = e.ChainHash
	}
	if run.HeadHash != prev {
		fail("head hash %s, chain ends at %s", run.HeadHash, prev)
	}
	cp, err := s.Checkpoint(ctx, id)
	must(t, err)
	if cp.Seq != run.Head || cp.BuildDigest != want.Checkpoint.BuildDigest || !bytes.Equal(cp.Body, want.Checkpoint.Body) || cp.Digest != store.BodyDigest(cp.Body) {
		fail("checkpoint %d %s %q, want %d %s %q", cp.Seq, cp.BuildDigest, cp.Body, run.Head, want.Checkpoint.BuildDigest, want.Checkpoint.Body)
	}
	ins, err := s.Intents(ctx, id)
	must(t, err)
	if len(ins) != len(want.Intents) {
		fail("%d intents, want %d", len(ins), len(want.Intents))
	}
	for i, in := range ins {
		w := want.Intents[i]
		if in.ID != w.ID || in.IdempotencyKey != w.IdempotencyKey || in.ApprovalID != w.ApprovalID || !bytes.Equal(in.Body, w.Body) ||
			in.Digest != store.BodyDigest(in.Body) || in.Outbox != store.OutboxDone || in.Attempts != 1 {
			fail("intent %d is %+v %q, want %+v %q", i, in, in.Body, w, w.Body)
		}
		as, err := s.Attempts(ctx, in.ID)
		must(t, err)
		if len(as) != 1 || as[0].Status != store.AttemptSucceeded || as[0].Detail != "applied" {
			fail("attempts of %s: %+v", in.ID, as)
		}
	}
	rcs, err := s.Receipts(ctx, id)
	must(t, err)
	if len(rcs) != len(want.Receipts) {
		fail("%d receipts, want %d", len(rcs), len(want.Receipts))
	}
	for i, rc := range rcs {
		if w := want.Receipts[i]; rc.IntentID != w.IntentID || !bytes.Equal(rc.Body, w.Body) || rc.Digest != store.BodyDigest(rc.Body) {
			fail("receipt %d is %s %q, want %s %q", i, rc.IntentID, rc.Body, w.IntentID, w.Body)
		}
	}
	tr, err := s.Trace(ctx, id)
	must(t, err)
	if len(tr) != len(want.Trace) {
		fail("%d trace records, want %d", len(tr), len(want.Trace))
	}
	for i, r := range tr {
		if w := want.Trace[i]; r.Kind != w.Kind || !bytes.Equal(r.Body, w.Body) {
			fail("trace record %d is %s %q, want %s %q", i, r.Kind, r.Body, w.Kind, w.Body)
		}
	}
	inb, err := s.Inbox(ctx, id, false)
	must(t, err)
	if len(inb) != len(want.Submit) {
		fail("%d inbound events, want %d", len(inb), len(want.Submit))
	}
	for i, in := range inb {
		if w := want.Submit[i]; in.ID != w.ID || !in.Consumed || !bytes.Equal(in.Body, w.Body) || in.Digest != store.BodyDigest(in.Body) {
			fail("inbound event %d is %s %q, want %s %q", i, in.ID, in.Body, w.ID, w.Body)
		}
	}
}
