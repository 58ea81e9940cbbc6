package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

var errRefused = errors.New("refused by the check")

// testConcurringApprovals: an intent consumes, with the grant it names,
// the other grants of a quorum (ApprovalUse.Concurs), all in its commit or
// none; a use that concurs with nothing is refused before anything is
// written; a run's record, however read, holds every grant its intents
// consumed.
func testConcurringApprovals(t *testing.T, s store.Store, c *Clock) {
	newRun(t, s, "r")
	newRun(t, s, "plain")
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	exp := c.Now().Add(time.Hour)
	for _, g := range []string{"ap1", "ap2", "ap3", "ap4"} {
		grant(t, s, g, "r", "n-"+g, exp)
	}
	must(t, s.RevokeApproval(ctx, "ap4"))
	in := In("i1", "k1", "c-i1")
	in.ApprovalID = "ap1"
	tick := func(uses ...store.ApprovalUse) store.Tick {
		return store.Tick{ExpectHead: 0, Events: []store.Event{Ev("A", `{}`)}, Intents: []store.Intent{in}, Approvals: uses}
	}
	named := store.ApprovalUse{ApprovalID: "ap1", IntentID: "i1"}
	concur := func(id, intent string) store.ApprovalUse {
		return store.ApprovalUse{ApprovalID: id, IntentID: intent, Concurs: true}
	}
	before := snapshot(t, s, "r")
	for name, c := range map[string]struct {
		tick store.Tick
		code store.Code
	}{
		"concurs for an intent not in the tick": {tick(named, concur("ap2", "i9")), store.CodeInvalidInput},
		"concurs with itself":                   {tick(named, concur("ap1", "i1")), store.CodeInvalidInput},
		"concurs twice":                         {tick(named, concur("ap2", "i1"), concur("ap2", "i1")), store.CodeInvalidInput},
		"concurs without the named grant":       {tick(concur("ap2", "i1")), store.CodeInvalidInput},
		"concurs with an intent naming none": {store.Tick{ExpectHead: 0, Intents: []store.Intent{In("i2", "k2", "c-i2")},
			Approvals: []store.ApprovalUse{concur("ap2", "i2")}}, store.CodeInvalidInput},
		"a revoked grant concurs": {tick(named, concur("ap2", "i1"), concur("ap4", "i1")), store.CodeApprovalUnavailable},
		"a concurring grant's check refuses": {tick(named, store.ApprovalUse{ApprovalID: "ap2", IntentID: "i1", Concurs: true,
			Check: func(store.Approval, time.Time) error { return errRefused }}), store.CodeApprovalRejected},
	} {
		mustCode(t, s.Commit(ctx, l, c.tick), c.code)
		if after := snapshot(t, s, "r"); after != before {
			t.Fatalf("%s: a refused commit wrote something:\nbefore %s\nafter  %s", name, before, after)
		}
		for _, g := range []string{"ap1", "ap2", "ap3"} {
			if a, err := s.Approval(ctx, g); err != nil || a.Status != store.ApprovalGranted {
				t.Fatalf("%s: %s after a refused commit: %+v %v", name, g, a, err)
			}
		}
	}

	must(t, s.Commit(ctx, l, tick(named, concur("ap2", "i1"), concur("ap3", "i1"))))
	for _, g := range []string{"ap1", "ap2", "ap3"} {
		if a, err := s.Approval(ctx, g); err != nil || a.Status != store.ApprovalConsumed || a.ConsumedBy != "i1" {
			t.Fatalf("%s after the commit: %+v %v", g, a, err)
		}
	}
	// A concurring grant is consumed: no other intent takes it.
	in3 := In("i3", "k3", "c-i3")
	in3.ApprovalID = "ap2"
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Intents: []store.Intent{in3},
		Approvals: []store.ApprovalUse{{ApprovalID: "ap2", IntentID: "i3"}}}), store.CodeApprovalUnavailable)

	want := []string{"ap1", "ap2", "ap3"} // the revoked ap4 is no intent's
	ids := func(as []store.Approval) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	parts, ok := s.(store.RecordParts)
	if !ok {
		t.Fatalf("%T does not read a run's record by parts", s)
	}
	if as, err := parts.RunApprovals(ctx, "r"); err != nil || !slices.Equal(ids(as), want) {
		t.Fatalf("RunApprovals: %v %v, want %v", ids(as), err, want)
	}
	rec, err := store.ReadRunRecordByParts(ctx, parts, "r", true)
	if err != nil || !slices.Equal(ids(rec.Approvals), want) {
		t.Fatalf("the record by parts: %v %v, want %v", ids(rec.Approvals), err, want)
	}
	if rr, ok := s.(interface {
		ReadRunRecord(ctx2 context.Context, runID string, all bool) (store.RunRecord, error)
	}); ok {
		one, err := rr.ReadRunRecord(ctx, "r", true)
		if err != nil || !slices.Equal(ids(one.Approvals), want) {
			t.Fatalf("the record read at once: %v %v, want %v", ids(one.Approvals), err, want)
		}
	}
	if rr, ok := s.(interface {
		ReadRunRecords(ctx2 context.Context, runIDs []string, all bool) ([]store.RunRecord, []error)
	}); ok {
		recs, errs := rr.ReadRunRecords(ctx, []string{"plain", "r"}, true)
		if errs[0] != nil || errs[1] != nil || len(recs[0].Approvals) != 0 || !slices.Equal(ids(recs[1].Approvals), want) {
			t.Fatalf("the records read in a batch: %v %v %v, want none and %v", ids(recs[0].Approvals), ids(recs[1].Approvals), errs, want)
		}
	}
}

// quorumRun creates run id in s with an intent that consumed two grants of
// one request: the one it names and another that concurs.
func quorumRun(t *testing.T, s store.Store, c *Clock, id string) {
	t.Helper()
	newRun(t, s, id)
	l, err := s.AcquireLease(ctx, id, "w", time.Hour)
	must(t, err)
	grant(t, s, id+"-g1", id, id+"-n1", c.Now().Add(time.Hour))
	grant(t, s, id+"-g2", id, id+"-n2", c.Now().Add(time.Hour))
	in := In(id+"-i1", id+"-k1", "c-"+id)
	in.ApprovalID = id + "-g1"
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Events: []store.Event{Ev("A", `{}`)}, Intents: []store.Intent{in},
		Approvals: []store.ApprovalUse{{ApprovalID: id + "-g1", IntentID: in.ID}, {ApprovalID: id + "-g2", IntentID: in.ID, Concurs: true}}}))
	must(t, s.ReleaseLease(ctx, l))
}
