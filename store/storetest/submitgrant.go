package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// grantWith is an entry handing grant id of run to it, with the grant.
func grantWith(run, entry, id, nonce string, expires time.Time) store.Inbound {
	body := []byte(fmt.Sprintf(`{"approval_id":%q,"nonce":%q}`, id, nonce))
	in := Inb(run, entry, "approve", fmt.Sprintf(`{"approval_id":%q}`, id))
	in.Grant = &store.Approval{ID: id, RunID: run, RequestDigest: store.BodyDigest([]byte("req")), Nonce: nonce,
		Body: body, Digest: store.BodyDigest(body), ExpiresAt: expires}
	return in
}

// An entry submitted with a grant writes both or neither: the grant is
// in the ledger exactly when the entry that hands it to the run is in the
// inbox. A run that ended or does not exist, a grant or an entry that
// clashes with one already written, and a malformed grant each refuse the
// whole submission; submitting the same entry again writes nothing more.
// A tick's or a new run's entries carry no grant.
func testSubmitWithGrant(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	newRun(t, s, "done")
	exp := c.Now().Add(time.Hour)
	noGrant := func(id string) {
		t.Helper()
		if _, err := s.Approval(ctx, id); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("grant %s: %v, want not found", id, err)
		}
	}
	pending := func(run string) int {
		t.Helper()
		in, err := s.Inbox(ctx, run, true)
		must(t, err)
		for _, e := range in {
			if e.Grant != nil {
				t.Fatalf("the store returned entry %s with a grant", e.ID)
			}
		}
		return len(in)
	}

	// Both written; the grant is live and reads back as given.
	in := grantWith("r", "e1", "g1", "n1", exp)
	must(t, s.Submit(ctx, in))
	g, err := s.Approval(ctx, "g1")
	must(t, err)
	if g.Status != store.ApprovalGranted || g.RunID != "r" || g.Nonce != "n1" || string(g.Body) != string(in.Grant.Body) || !g.ExpiresAt.Equal(exp.Truncate(time.Nanosecond)) {
		t.Fatalf("grant read back %+v", g)
	}
	if n := pending("r"); n != 1 {
		t.Fatalf("%d entries pending, want 1", n)
	}
	// The same entry again: taken once, nothing more written.
	must(t, s.Submit(ctx, grantWith("r", "e1", "g1", "n1", exp)))
	if n := pending("r"); n != 1 {
		t.Fatalf("%d entries pending after a resubmission, want 1", n)
	}

	// Refusals write neither the entry nor the grant.
	ld, _ := s.AcquireLease(ctx, "done", "w", time.Hour)
	must(t, s.Commit(ctx, ld, store.Tick{Outcome: "success", State: "SUCCEEDED"}))
	mustCode(t, s.Submit(ctx, grantWith("done", "e2", "g2", "n2", exp)), store.CodeInvalidTransition)
	noGrant("g2")
	mustCode(t, s.Submit(ctx, grantWith("nope", "e3", "g3", "n3", exp)), store.CodeNotFound)
	noGrant("g3")
	// A grant id or nonce already in the ledger: the entry is refused too.
	mustCode(t, s.Submit(ctx, grantWith("r", "e4", "g1", "n4", exp)), store.CodeExists)
	mustCode(t, s.Submit(ctx, grantWith("r", "e5", "g5", "n1", exp)), store.CodeExists)
	noGrant("g5")
	// An entry id taken with other content: the grant is not written.
	clash := grantWith("r", "e1", "g6", "n6", exp)
	mustCode(t, s.Submit(ctx, clash), store.CodeExists)
	noGrant("g6")
	// Malformed grants, checked before the database is touched.
	for name, edit := range map[string]func(in *store.Inbound){
		"another run":     func(in *store.Inbound) { in.Grant.RunID = "done" },
		"no nonce":        func(in *store.Inbound) { in.Grant.Nonce = "" },
		"no expiry":       func(in *store.Inbound) { in.Grant.ExpiresAt = time.Time{} },
		"digest mismatch": func(in *store.Inbound) { in.Grant.Digest = "sha256:00" },
	} {
		bad := grantWith("r", "e7", "g7", "n7", exp)
		edit(&bad)
		if err := s.Submit(ctx, bad); store.CodeOf(err) != store.CodeInvalidInput {
			t.Fatalf("%s: %v, want %s", name, err, store.CodeInvalidInput)
		}
		noGrant("g7")
	}
	if n := pending("r"); n != 1 {
		t.Fatalf("%d entries pending after the refusals, want 1", n)
	}

	// Grants ride with Submit only.
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	mustCode(t, s.Commit(ctx, l, store.Tick{Submit: []store.Inbound{grantWith("r", "e8", "g8", "n8", exp)}, Consume: []string{"e8"}}), store.CodeInvalidInput)
	mustCode(t, s.CreateRun(ctx, store.Run{ID: "new", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, grantWith("new", "e9", "g9", "n9", exp)), store.CodeInvalidInput)
	noGrant("g8")
	noGrant("g9")
	if _, err := s.Run(ctx, "new"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a run created with a grant on its first entry: %v", err)
	}

	// The grant handed over is consumed as any other.
	in1 := In("i1", "k1", "c-i1")
	in1.ApprovalID = "g1"
	must(t, s.Commit(ctx, l, store.Tick{Consume: []string{"e1"}, Intents: []store.Intent{in1}, Approvals: []store.ApprovalUse{{ApprovalID: "g1", IntentID: "i1"}}}))
	if g, err := s.Approval(ctx, "g1"); err != nil || g.Status != store.ApprovalConsumed || g.ConsumedBy != "i1" {
		t.Fatalf("after consumption %+v %v", g, err)
	}
}

// An entry guarded by what its writer saw of the run's pending entries
// of its kind (Inbound.Seen) is refused, with its grant, when the run
// holds one of that kind the writer did not see; entries consumed since,
// and entries of other kinds, do not count. The same entry submitted
// again is still taken once. Writers racing, each having seen none,
// write one entry between them.
func testSubmitSeen(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	exp := c.Now().Add(time.Hour)
	seen := func(in store.Inbound, ids ...string) store.Inbound {
		in.Seen = &store.PendingSeen{IDs: ids}
		return in
	}
	pendingIDs := func() []string {
		t.Helper()
		in, err := s.Inbox(ctx, "r", true)
		must(t, err)
		var ids []string
		for _, e := range in {
			ids = append(ids, e.ID)
		}
		return ids
	}
	must(t, s.Submit(ctx, seen(grantWith("r", "e1", "g1", "n1", exp))))
	err := s.Submit(ctx, seen(grantWith("r", "e2", "g2", "n2", exp)))
	mustCode(t, err, store.CodeHeadMismatch)
	if !strings.Contains(err.Error(), "e1") {
		t.Fatalf("the refusal does not name the entry not seen: %v", err)
	}
	if _, err := s.Approval(ctx, "g2"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a refused entry's grant: %v", err)
	}
	mustCode(t, s.Submit(ctx, seen(grantWith("r", "e2", "g2", "n2", exp), "e0", "x")), store.CodeHeadMismatch)
	must(t, s.Submit(ctx, seen(grantWith("r", "e2", "g2", "n2", exp), "e1")))
	must(t, s.Submit(ctx, seen(grantWith("r", "e2", "g2", "n2", exp)))) // the same again: taken once
	must(t, s.Submit(ctx, seen(Inb("r", "i1", "input", `{}`))))         // another kind
	if got := pendingIDs(); !slices.Equal(got, []string{"e1", "e2", "i1"}) {
		t.Fatalf("pending %v", got)
	}
	mustCode(t, s.Submit(ctx, seen(Inb("r", "i2", "input", `{}`), "e1", "e2")), store.CodeHeadMismatch)

	// Consumed entries are not pending.
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{Consume: []string{"e1", "e2", "i1"}}))
	must(t, s.Submit(ctx, seen(grantWith("r", "e3", "g3", "n3", exp))))
	mustCode(t, s.Submit(ctx, seen(grantWith("r", "e4", "g4", "n4", exp), "")), store.CodeInvalidInput)
	emptyKind := seen(grantWith("r", "e4", "g4", "n4", exp))
	emptyKind.Seen.Kinds = []string{""}
	mustCode(t, s.Submit(ctx, emptyKind), store.CodeInvalidInput)
	// A guard of other kinds: a pending input the writer did not see
	// refuses an approval guarded by approvals and inputs, not one
	// guarded by approvals alone.
	must(t, s.Submit(ctx, Inb("r", "i3", "input", `{}`)))
	guarded := seen(grantWith("r", "e7", "g7", "n7", exp), "e3")
	guarded.Seen.Kinds = []string{"approve", "input"}
	err = s.Submit(ctx, guarded)
	mustCode(t, err, store.CodeHeadMismatch)
	if !strings.Contains(err.Error(), "i3") {
		t.Fatalf("the refusal does not name the entry not seen: %v", err)
	}
	guarded.Seen.IDs = []string{"e3", "i3"}
	must(t, s.Submit(ctx, guarded))
	mustCode(t, s.Submit(ctx, seen(grantWith("r", "e8", "g8", "n8", exp), "e3")), store.CodeHeadMismatch) // e7 unseen
	must(t, s.Commit(ctx, l, store.Tick{Consume: []string{"e7", "i3"}}))
	// A guard rides with Submit alone.
	mustCode(t, s.Commit(ctx, l, store.Tick{Submit: []store.Inbound{seen(Inb("r", "e5", "input", `{}`))}, Consume: []string{"e5"}}), store.CodeInvalidInput)
	mustCode(t, s.CreateRun(ctx, store.Run{ID: "new", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, seen(Inb("new", "e6", "input", `{}`))), store.CodeInvalidInput)

	// Racing writers that each saw e3 alone: one of them writes.
	const writers = 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprint(w)
			errs[w] = s.Submit(ctx, seen(grantWith("r", "race-"+id, "gr-"+id, "nr-"+id, exp), "e3"))
		})
	}
	wg.Wait()
	written := 0
	for _, err := range errs {
		switch store.CodeOf(err) {
		case "":
			written++
		case store.CodeHeadMismatch:
		default:
			t.Fatalf("a racing writer: %v", err)
		}
	}
	if got := pendingIDs(); written != 1 || len(got) != 2 {
		t.Fatalf("%d racing writers wrote; pending %v", written, got)
	}
}
