package storetest

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testCreateRunCommit holds a store's CreateRunCommit, when it has one, to
// CreateRunLeased followed by Commit under the lease it grants: two runs
// made the two ways, with the same input and first tick, under the same
// clock, read the same (their ids aside) after that tick and after the
// next; the lease fences as CreateRunLeased's does; and a refused
// creation, whether refused before the transaction or by the tick inside
// it, writes nothing at all.
func testCreateRunCommit(t *testing.T, s store.Store, c *Clock) {
	sc, ok := s.(store.StartCommitter)
	if !ok {
		t.Skip("the store does not create runs with their first tick")
	}
	lc, ok := s.(store.LeasedCreator)
	if !ok {
		t.Fatal("a store that offers CreateRunCommit offers CreateRunLeased")
	}
	const ttl = 10 * time.Second
	mk := func(id string) (store.Run, store.Inbound) {
		return store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", WorkflowDigest: store.BodyDigest([]byte("definition")), State: "CREATED"},
			Inb(id, "input:1", "INPUT", `{"a":1}`)
	}
	cp := []byte(`{"state":"PLAN"}`)
	// An intent whose body names neither run, for the two runs' records
	// to read the same.
	pay := func(id, key string) store.Intent {
		body := []byte(`{"pay":1}`)
		return store.Intent{ID: id, EffectType: "refund", IdempotencyKey: key, ContentDigest: store.BodyDigest([]byte("pay 1")), Body: body, Digest: store.BodyDigest(body)}
	}
	first := func(id string) store.Tick {
		return store.Tick{ExpectHead: 0, State: "EFFECT", Consume: []string{"input:1"},
			Events:     []store.Event{Ev("A", `{"a":1}`), Ev("B", `{"b":2}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, BuildDigest: "build", Body: cp, Digest: store.BodyDigest(cp)},
			Intents:    []store.Intent{pay(id+"/pay", id+"-key")},
			Begin:      []string{id + "/pay"},
			Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}
	}
	run, in := mk("plain")
	pl, err := lc.CreateRunLeased(ctx, run, "w", ttl, in)
	must(t, err)
	must(t, s.Commit(ctx, pl, first("plain")))
	run, in = mk("fused")
	fl, err := sc.CreateRunCommit(ctx, run, "w", ttl, []store.Inbound{in}, first("fused"))
	must(t, err)
	if fl.RunID != "fused" || fl.Generation != 1 {
		t.Fatalf("CreateRunCommit's lease = %+v, want generation 1 on fused", fl)
	}
	if p, l := fmt.Sprintf("%+v", pl), fmt.Sprintf("%+v", fl); same(p, "plain") != same(l, "fused") {
		t.Fatalf("leases differ:\nCreateRunLeased, Commit: %s\nCreateRunCommit:         %s", p, l)
	}
	alike := func(when string) {
		t.Helper()
		if p, l := everything(t, s, "plain"), everything(t, s, "fused"); same(p, "plain") != same(l, "fused") {
			t.Fatalf("%s, the runs differ:\nCreateRunLeased, Commit: %s\nCreateRunCommit:         %s", when, p, l)
		}
		pa, err := s.Attempts(ctx, "plain/pay")
		must(t, err)
		fa, err := s.Attempts(ctx, "fused/pay")
		must(t, err)
		if p, l := fmt.Sprintf("%+v", pa), fmt.Sprintf("%+v", fa); same(p, "plain") != same(l, "fused") {
			t.Fatalf("%s, the attempts differ:\nCreateRunLeased, Commit: %s\nCreateRunCommit:         %s", when, p, l)
		}
	}
	alike("after the first tick")

	// The lease is the run's current one.
	_, err = s.AcquireLease(ctx, "fused", "other", ttl)
	mustCode(t, err, store.CodeLeaseHeld)
	secondTickAlike(t, s, c, ttl, alike, pl, fl)

	// Refusals write nothing: not the run, not its input, not a lease,
	// not the tick.
	before := everything(t, s, "fused")
	_, in = mk("fused")
	_, err = sc.CreateRunCommit(ctx, store.Run{ID: "fused", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, "x", ttl,
		[]store.Inbound{in}, store.Tick{Consume: []string{"input:1"}, Events: []store.Event{Ev("A", `{}`)}})
	mustCode(t, err, store.CodeExists)
	if after := everything(t, s, "fused"); after != before {
		t.Fatalf("a refused creation on a taken id changed the run:\nbefore %s\nafter  %s", before, after)
	}
	badEvent := Ev("A", `{}`)
	badEvent.Digest = "sha256:00"
	for _, b := range []struct {
		id    string
		owner string
		ttl   time.Duration
		tick  store.Tick
		code  store.Code
	}{
		// Refused before the transaction.
		{"x0", "", ttl, store.Tick{}, store.CodeInvalidInput},
		{"x1", "w", 0, store.Tick{}, store.CodeInvalidInput},
		{"x2", "w", ttl, store.Tick{Events: []store.Event{badEvent}}, store.CodeInvalidInput},
		// Refused by the tick inside the transaction, after the run's row
		// and its input are written in it.
		{"x3", "w", ttl, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("A", `{}`)}}, store.CodeHeadMismatch},
		{"x4", "w", ttl, store.Tick{Consume: []string{"input:2"}, Events: []store.Event{Ev("A", `{}`)}}, ""},
		{"x5", "w", ttl, store.Tick{Consume: []string{"input:1"}, Events: []store.Event{Ev("A", `{}`)},
			Intents: []store.Intent{In("x5/pay", "plain-key", "pay 2")}}, ""}, // the key is plain's
	} {
		run, in := mk(b.id)
		l, err := sc.CreateRunCommit(ctx, run, b.owner, b.ttl, []store.Inbound{in}, b.tick)
		if err == nil {
			t.Fatalf("%s: a bad creation was accepted", b.id)
		}
		if b.code != "" {
			mustCode(t, err, b.code)
		}
		if l != (store.Lease{}) {
			t.Fatalf("a refused creation of %q returned a lease: %+v", b.id, l)
		}
		_, err = s.Run(ctx, b.id)
		mustCode(t, err, store.CodeNotFound)
		if in, err := s.Inbox(ctx, b.id, false); err == nil && len(in) != 0 {
			t.Fatalf("a refused creation of %q left inbox entries: %+v", b.id, in)
		}
		if ev, err := s.Events(ctx, b.id, 0); err == nil && len(ev) != 0 {
			t.Fatalf("a refused creation of %q left events: %+v", b.id, ev)
		}
		if its, err := s.Intents(ctx, b.id); err == nil && len(its) != 0 {
			t.Fatalf("a refused creation of %q left intents: %+v", b.id, its)
		}
	}
	runs, err := s.Runs(ctx, "", 100)
	must(t, err)
	if len(runs) != 2 {
		t.Fatalf("after the refusals the store holds %d runs, want 2", len(runs))
	}
	// The run's id is free again: the same creation, made right, succeeds.
	run, in = mk("x3")
	l, err := sc.CreateRunCommit(ctx, run, "w", ttl, []store.Inbound{in}, store.Tick{Consume: []string{"input:1"}, Events: []store.Event{Ev("A", `{}`)}})
	must(t, err)
	if l.Generation != 1 {
		t.Fatalf("lease after refusals %+v, want generation 1", l)
	}
}
