package runner_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
	"flrh.dev/flrh/verify"
)

// reusingStore stands for a runner that writes over every byte slice it
// handed a tick the moment Commit returns (decision 1724): after the
// store it wraps has taken the tick, each body (checkpoint, events,
// intents, receipts, inbound events, trace records) is overwritten
// (an input's body the runner was handed only when the commit succeeded).
// Whatever reads a committed tick's bytes afterwards, but the store,
// which keeps none of them (store.Store.Commit), reads the overwriting.
// Before the store takes a tick, every body must still be the bytes its
// digest was taken of: a runner that wrote over one too early, before its
// commit, would hand the store other bytes than it decided.
type reusingStore struct {
	store.Store
	poison bool
	mu     sync.Mutex
	lagged int
	bodies int
	proven int // bodies handed with the proof of their digest (store.DigestProof)
	// unproven are the bodies of the runner's own (not a caller's input)
	// handed without the proof of their digest, which the store hashes
	unproven []string
	garbled  []string
}

func (s *reusingStore) Commit(ctx context.Context, l store.Lease, tick store.Tick) error {
	type body struct {
		name   string
		b      []byte
		digest string
		caller bool // an inbound event's, the bytes the runner was handed
		proven bool // handed with store.ProveDigest's proof of its digest
	}
	var all []body
	if cp := tick.Checkpoint; cp != nil {
		all = append(all, body{fmt.Sprintf("%s checkpoint at %d", l.RunID, tick.ExpectHead), cp.Body, cp.Digest, false, cp.Proof.Proves(cp.Body, cp.Digest)})
	}
	for i, e := range tick.Events {
		all = append(all, body{fmt.Sprintf("%s event %d (%s)", l.RunID, tick.ExpectHead+int64(i)+1, e.Kind), e.Body, e.Digest, false, e.Proof.Proves(e.Body, e.Digest)})
	}
	for _, in := range tick.Intents {
		all = append(all, body{l.RunID + " intent " + in.ID, in.Body, in.Digest, false, in.Proof.Proves(in.Body, in.Digest)})
	}
	for _, rc := range tick.Receipts {
		all = append(all, body{l.RunID + " receipt " + rc.IntentID, rc.Body, rc.Digest, false, rc.Proof.Proves(rc.Body, rc.Digest)})
	}
	for _, in := range tick.Submit {
		all = append(all, body{l.RunID + " inbound " + in.ID, in.Body, in.Digest, true, in.Proof.Proves(in.Body, in.Digest)})
	}
	for _, tr := range tick.Trace {
		all = append(all, body{l.RunID + " trace " + tr.Kind, tr.Body, "", false, false})
	}
	s.mu.Lock()
	for _, b := range all {
		if b.digest != "" && !store.DigestMatches(b.b, b.digest) {
			s.garbled = append(s.garbled, b.name)
		}
		if b.proven {
			s.proven++
		} else if b.digest != "" && !b.caller {
			s.unproven = append(s.unproven, b.name)
		}
	}
	if tick.MayLag {
		s.lagged++
	}
	s.bodies += len(all)
	s.mu.Unlock()
	err := s.Store.Commit(ctx, l, tick)
	if s.poison {
		for _, b := range all {
			if b.caller && err != nil {
				// An input handed to SubmitAdvance is the caller's, not a
				// buffer of the runner's: a pass whose commit is refused
				// hands it again when it is made again.
				continue
			}
			for i := range b.b {
				b.b[i] = '#'
			}
		}
	}
	return err
}

func (s *reusingStore) Unwrap() store.Store { return s.Store }

// reuseOutcome is everything a reusingStore's runs leave: each run's
// records as the store reads them back, the destination's mutations, the
// runner's counters, what the steps returned, and whether each run
// verifies and replays.
func reuseRun(ctx context.Context, t *testing.T, poison bool) (string, *reusingStore) {
	t.Helper()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := func() time.Time { return at }
	wf, st, sb, reg := refundOnSQLite(ctx, t, sqlite.Options{Clock: clock})
	rs := &reusingStore{Store: st, poison: poison}
	r, err := runner.New(runner.Config{Store: rs, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "node-1", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	promReg := prometheus.NewRegistry()
	if err := r.Metrics().Register(promReg); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	agent := runner.Actor{Name: "agent", Role: "agent", Capability: "run.input"}
	runs := []string{"a", "b", "c"}
	for i, id := range runs {
		if err := r.Start(ctx, id, wf.ID(), wf.Version(), refundInput(fmt.Sprintf("%s-0", id), 40+i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range runs {
		moved, err := r.Advance(ctx, id)
		fmt.Fprintf(&out, "advance %s: %v %v\n", id, moved, err)
	}
	for step := 1; step <= 3; step++ {
		for i, id := range runs {
			moved, err := r.SubmitAdvance(ctx, id, refundInput(fmt.Sprintf("%s-%d", id, step), 40+i+step), agent)
			fmt.Fprintf(&out, "step %d %s: %v %v\n", step, id, moved, err)
		}
		// An input that arrives behind the runner's back: the next pass,
		// which took the run's inbox as its last pass left it, empty, is
		// refused at its first commit and made again from the store.
		in := fmt.Sprintf(`{"payload":{"amount":%d,"payee":"p","reason":"r","refund_id":"side-%d"},"type":"refund.requested/1"}`, 30+step, step)
		err := st.Submit(ctx, store.Inbound{ID: fmt.Sprintf("side-%d", step), RunID: "b", Kind: runner.KindInput, ActorRole: "agent", Actor: "agent",
			Capability: "run.input", Body: []byte(in), Digest: store.BodyDigest([]byte(in))})
		fmt.Fprintf(&out, "side input %d: %v\n", step, err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		fmt.Fprintf(&out, "idle: %v\n", err)
	}
	for _, id := range runs {
		rec := storetest.ReadRecord(t, ctx, st, id)
		rec.Run.Lease.ExpiresAt = time.Time{}
		fmt.Fprintf(&out, "%+v\n", rec.Run)
		for _, e := range rec.Events {
			fmt.Fprintf(&out, "event %d %s %s %s %s\n", e.Seq, e.Kind, e.Digest, e.ChainHash, e.Body)
		}
		fmt.Fprintf(&out, "checkpoint %d %s %s\n", rec.Checkpoint.Seq, rec.Checkpoint.Digest, rec.Checkpoint.Body)
		for _, in := range rec.Intents {
			fmt.Fprintf(&out, "intent %s %s %s %s\n", in.ID, in.Outbox, in.Digest, in.Body)
		}
		for _, a := range rec.Attempts {
			fmt.Fprintf(&out, "attempt %s %d %s\n", a.IntentID, a.N, a.Status)
		}
		for _, rc := range rec.Receipts {
			fmt.Fprintf(&out, "receipt %s %s %s\n", rc.IntentID, rc.Digest, rc.Body)
		}
		for _, tr := range rec.Trace {
			fmt.Fprintf(&out, "trace %s %s\n", tr.Kind, tr.Body)
		}
		for _, in := range rec.Inbox {
			fmt.Fprintf(&out, "inbound %s %d %v %s\n", in.ID, in.Seq, in.Consumed, in.Digest)
		}
		vr, err := verify.Run(ctx, st, control.Default(), id)
		fmt.Fprintf(&out, "verify %s: %v %v\n", id, err == nil && vr.OK(), err)
		rp, err := verify.Replay(ctx, st, wf, id)
		fmt.Fprintf(&out, "replay %s: %v %v\n", id, err == nil && rp.OK(), err)
	}
	keys := map[string]int{}
	for _, m := range sb.Mutations() {
		keys[m.IdempotencyKey]++
	}
	fmt.Fprintf(&out, "%d mutations under %d keys\n", len(sb.Mutations()), len(keys))
	mfs, err := promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var counters []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter() == nil {
				continue
			}
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			counters = append(counters, fmt.Sprintf("%s{%s} %v", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue()))
		}
	}
	sort.Strings(counters)
	out.WriteString(strings.Join(counters, "\n"))
	return out.String(), rs
}

// Nothing but the store reads a tick's bytes once Commit has returned, so
// the runner may write over them at its next flush (the run's checkpoint
// buffer, decision 1724). Governed steps of three runs interleave, each
// step's receipt commit lagging into the next step's, a pass refused at
// its first commit by an input that arrived behind its back and made
// again: once with every body of every tick overwritten the moment Commit
// returns, once without. The runs' records, the destination's mutations,
// the runner's counters, every step's result and verification and replay
// must be the same byte for byte, and every body handed to the store
// must be the bytes its digest was taken of (which the store, handed the
// proof of a digest, does not check again: store.DigestProof). A runner whose wires, logs,
// metrics or retries read a committed tick's bytes, or a store that reads
// them after Commit returns (a lagging tick run again from its caller's
// bytes), fails here.
func TestNothingButTheStoreReadsCommittedBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plain, _ := reuseRun(ctx, t, false)
	poisoned, rs := reuseRun(ctx, t, true)
	if rs.lagged == 0 || !strings.Contains(plain, "15 mutations under 15 keys") {
		t.Fatalf("%d lagging commits: not the governed steps asked for\n%s", rs.lagged, plain)
	}
	if rs.proven == 0 || len(rs.unproven) > 0 {
		t.Fatalf("%d of %d bodies handed to Commit came with the proof of their digest; %d of the runner's own without, first %v", rs.proven, rs.bodies, len(rs.unproven), rs.unproven[:min(1, len(rs.unproven))])
	}
	if len(rs.garbled) > 0 {
		t.Fatalf("%d of %d bodies handed to Commit were not the bytes their digests were taken of, first %s", len(rs.garbled), rs.bodies, rs.garbled[0])
	}
	if plain != poisoned {
		a, b := strings.Split(plain, "\n"), strings.Split(poisoned, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("with every committed body overwritten once Commit returned, line %d differs:\n%s\nwithout:\n%s", i+1, b[i], a[i])
			}
		}
		t.Fatalf("with every committed body overwritten once Commit returned, %d lines; without, %d", len(b), len(a))
	}
	for _, line := range strings.Split(plain, "\n") {
		if strings.HasPrefix(line, "verify ") || strings.HasPrefix(line, "replay ") {
			if !strings.Contains(line, ": true") {
				t.Fatalf("%s", line)
			}
		}
	}
}
