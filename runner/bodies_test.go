package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// keptBodies is a store that keeps, by reference, every byte slice a tick
// hands to Commit, with a copy of each taken when it was handed: what a
// store may do, since store.Store does not promise that Commit lets go of
// a tick's bytes when it returns (the tests' capturing stores keep whole
// ticks and read their bodies later).
type keptBodies struct {
	store.Store
	mu     sync.Mutex
	held   [][]byte
	copies [][]byte
	names  []string
	lagged int
}

func (s *keptBodies) keep(name string, b []byte) {
	s.held = append(s.held, b)
	s.copies = append(s.copies, bytes.Clone(b))
	s.names = append(s.names, name)
}

func (s *keptBodies) Commit(ctx context.Context, l store.Lease, tick store.Tick) error {
	s.mu.Lock()
	n := len(s.held)
	if tick.MayLag {
		s.lagged++
	}
	if cp := tick.Checkpoint; cp != nil {
		s.keep(fmt.Sprintf("%s checkpoint at %d", l.RunID, tick.ExpectHead), cp.Body)
	}
	for i, e := range tick.Events {
		s.keep(fmt.Sprintf("%s event %d (%s)", l.RunID, tick.ExpectHead+int64(i)+1, e.Kind), e.Body)
	}
	for _, in := range tick.Intents {
		s.keep(l.RunID+" intent "+in.ID, in.Body)
	}
	for _, rc := range tick.Receipts {
		s.keep(l.RunID+" receipt "+rc.IntentID, rc.Body)
	}
	for _, in := range tick.Submit {
		s.keep(l.RunID+" inbound "+in.ID, in.Body)
	}
	for _, tr := range tick.Trace {
		s.keep(l.RunID+" trace "+tr.Kind, tr.Body)
	}
	s.mu.Unlock()
	err := s.Store.Commit(ctx, l, tick)
	if err != nil {
		s.mu.Lock()
		s.held, s.copies, s.names = s.held[:n], s.copies[:n], s.names[:n]
		s.mu.Unlock()
	}
	return err
}

func (s *keptBodies) Unwrap() store.Store { return s.Store }

// changed names the kept slices whose bytes are no longer those handed.
func (s *keptBodies) changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i, b := range s.held {
		if !bytes.Equal(b, s.copies[i]) {
			out = append(out, s.names[i])
		}
	}
	return out
}

// The byte slices a tick hands to the store (checkpoint, events, intents,
// receipts, inbound events, trace records) are never written again by the
// runner: a store may keep them past Commit (store.Store does not say it
// may not), and the SQLite store keeps a lagging tick's rows for the next
// write of its transaction (decisions 1174, 1186). Governed steps of three
// runs interleave, each step's receipt commit lagging into the next
// step's; after them every slice handed holds the bytes it held then. A
// runner that encodes a checkpoint, a control record or a state into a
// buffer it reuses fails here (decision 1718).
func TestCommittedBodiesAreNotReused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wf, st, sb, reg := refundOnSQLite(ctx, t)
	kept := &keptBodies{Store: st}
	r, err := runner.New(runner.Config{Store: kept, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "node-1"})
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
	for _, id := range runs {
		if _, err := r.Advance(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for step := 1; step <= 3; step++ {
		for i, id := range runs {
			if moved, err := r.SubmitAdvance(ctx, id, refundInput(fmt.Sprintf("%s-%d", id, step), 40+i+step), agent); err != nil || !moved {
				t.Fatalf("run %s step %d: moved %v, %v", id, step, moved, err)
			}
		}
	}
	if kept.lagged == 0 || len(sb.Mutations()) != 4*len(runs) {
		t.Fatalf("%d lagging commits, %d mutations: not the governed steps asked for", kept.lagged, len(sb.Mutations()))
	}
	if ch := kept.changed(); len(ch) > 0 {
		t.Fatalf("%d of %d bodies handed to Commit were written again afterwards, first %s", len(ch), len(kept.held), ch[0])
	}
}
