package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testCreateRunLeased holds a store's CreateRunLeased, when it has one, to
// CreateRun followed by AcquireLease: two runs made the two ways, with the
// same input, under the same clock, read the same (their ids aside) as
// created, as leased and after the same ticks under their leases; and a
// refused creation writes nothing at all.
func testCreateRunLeased(t *testing.T, s store.Store, c *Clock) {
	lc, ok := s.(store.LeasedCreator)
	if !ok {
		t.Skip("the store does not create runs leased")
	}
	const ttl = 10 * time.Second
	mk := func(id string) (store.Run, store.Inbound) {
		return store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", WorkflowDigest: store.BodyDigest([]byte("definition")), State: "CREATED"},
			Inb(id, "input:1", "INPUT", `{"a":1}`)
	}
	run, in := mk("plain")
	must(t, s.CreateRun(ctx, run, in))
	pl, err := s.AcquireLease(ctx, "plain", "w", ttl)
	must(t, err)
	run, in = mk("leased")
	ll, err := lc.CreateRunLeased(ctx, run, "w", ttl, in)
	must(t, err)
	if ll.RunID != "leased" || ll.Generation != 1 {
		t.Fatalf("CreateRunLeased's lease = %+v, want generation 1 on leased", ll)
	}
	if p, l := fmt.Sprintf("%+v", pl), fmt.Sprintf("%+v", ll); same(p, "plain") != same(l, "leased") {
		t.Fatalf("leases differ:\nCreateRun, AcquireLease: %s\nCreateRunLeased:         %s", p, l)
	}
	alike := func(when string) {
		t.Helper()
		if p, l := everything(t, s, "plain"), everything(t, s, "leased"); same(p, "plain") != same(l, "leased") {
			t.Fatalf("%s, the runs differ:\nCreateRun, AcquireLease: %s\nCreateRunLeased:         %s", when, p, l)
		}
	}
	alike("as created")

	// The lease is the run's current one: it fences others out, and the
	// same owner acquiring again fences it.
	_, err = s.AcquireLease(ctx, "leased", "other", ttl)
	mustCode(t, err, store.CodeLeaseHeld)
	if cl, ok := s.(store.Claimer); ok {
		got, err := cl.ClaimReady(ctx, "other", ttl, 10, nil, time.Time{})
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("runs leased as created were claimed by another owner: %+v", got)
		}
	}

	// The same ticks under each lease.
	cp := []byte(`{"state":"PLAN"}`)
	for _, l := range []store.Lease{pl, ll} {
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "PLAN", Consume: []string{"input:1"},
			Events:     []store.Event{Ev("A", `{"a":1}`), Ev("B", `{"b":2}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, BuildDigest: "build", Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}))
	}
	alike("after the first tick")
	secondTickAlike(t, s, c, ttl, alike, pl, ll)

	// Refusals write nothing: not the run, not its input, not a lease.
	before := everything(t, s, "leased")
	_, err = lc.CreateRunLeased(ctx, store.Run{ID: "leased", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, "x", ttl,
		Inb("leased", "input:9", "INPUT", `{}`))
	mustCode(t, err, store.CodeExists)
	if after := everything(t, s, "leased"); after != before {
		t.Fatalf("a refused creation on a taken id changed the run:\nbefore %s\nafter  %s", before, after)
	}
	badDigest := Inb("x1", "input:1", "INPUT", `{}`)
	badDigest.Digest = "sha256:00"
	for _, b := range []struct {
		run   store.Run
		owner string
		ttl   time.Duration
		first []store.Inbound
	}{
		{store.Run{ID: "x0", WorkflowID: "", State: "CREATED"}, "w", ttl, nil},
		{store.Run{ID: "", WorkflowID: "wf", State: "CREATED"}, "w", ttl, nil},
		{store.Run{ID: "x1", WorkflowID: "wf", State: "CREATED"}, "w", ttl, []store.Inbound{badDigest}},
		{store.Run{ID: "x2", WorkflowID: "wf", State: "CREATED"}, "w", ttl, []store.Inbound{Inb("other", "input:1", "INPUT", `{}`)}},
		{store.Run{ID: "x3", WorkflowID: "wf", State: "CREATED"}, "w", ttl, []store.Inbound{Inb("x3", "i", "INPUT", `{}`), Inb("x3", "i", "INPUT", `{"z":0}`)}},
		// Refused by AcquireLease after CreateRun wrote the run; refused
		// here before anything is written.
		{store.Run{ID: "x4", WorkflowID: "wf", State: "CREATED"}, "", ttl, []store.Inbound{Inb("x4", "i", "INPUT", `{}`)}},
		{store.Run{ID: "x5", WorkflowID: "wf", State: "CREATED"}, "w", 0, []store.Inbound{Inb("x5", "i", "INPUT", `{}`)}},
	} {
		l, err := lc.CreateRunLeased(ctx, b.run, b.owner, b.ttl, b.first...)
		mustCode(t, err, store.CodeInvalidInput)
		if l != (store.Lease{}) {
			t.Fatalf("a refused creation of %q returned a lease: %+v", b.run.ID, l)
		}
		if b.run.ID == "" {
			continue
		}
		_, err = s.Run(ctx, b.run.ID)
		mustCode(t, err, store.CodeNotFound)
		if in, err := s.Inbox(ctx, b.run.ID, false); err == nil && len(in) != 0 {
			t.Fatalf("a refused creation of %q left inbox entries: %+v", b.run.ID, in)
		}
	}
	runs, err := s.Runs(ctx, "", 100)
	must(t, err)
	if len(runs) != 2 {
		t.Fatalf("after the refusals the store holds %d runs, want 2", len(runs))
	}
}

// everything is what a store holds of a run, as text: its header, inbox,
// events, checkpoint, intents, receipts and trace.
func everything(t *testing.T, s store.Store, id string) string {
	t.Helper()
	r := readStored(t, s, id)
	return fmt.Sprintf("run=%+v inbox=%+v events=%+v checkpoint=%+v intents=%+v receipts=%+v trace=%+v",
		r.run, r.inbox, r.events, r.checkpoint, r.intents, r.receipts, r.trace)
}

// same is text with the run's id replaced, for two runs' texts to be
// compared.
func same(text, id string) string { return strings.ReplaceAll(text, id, "RUN") }

// secondTickAlike commits the same second tick (at head 2, a second
// later) under each lease, holds the runs alike, then acquires each run
// again as "w" and holds that the new lease is generation 2, that it
// fences the old one out, and that the runs are still alike: the part of
// testCreateRunLeased and testCreateRunCommit after the runs' first ticks.
func secondTickAlike(t *testing.T, s store.Store, c *Clock, ttl time.Duration, alike func(when string), leases ...store.Lease) {
	t.Helper()
	c.Advance(time.Second)
	for _, l := range leases {
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{Ev("C", `{"c":3}`)},
			Trace: []store.TraceRecord{{Kind: "tick", Body: []byte(`{"n":2}`)}}}))
	}
	alike("after the second tick")
	for _, l := range leases {
		l2, err := s.AcquireLease(ctx, l.RunID, "w", ttl)
		must(t, err)
		if l2.Generation != 2 {
			t.Fatalf("%s: generation after acquiring again = %d, want 2", l.RunID, l2.Generation)
		}
		mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3}), store.CodeFenced)
	}
	alike("acquired again")
}
