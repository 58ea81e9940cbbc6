package tripwire

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
)

// cleanRun returns the boundaries of a run that needed an approval and a
// person's reconciliation and then succeeded.
func cleanRun(t *testing.T) []Boundary {
	t.Helper()
	s := newSim()
	s.forgetful = true
	s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "unknown"}, {Outcome: "success"}}, Completion: "complete"})
	s.pass()
	s.approve()
	s.pass()
	s.reconcile("confirm")
	s.pass()
	if s.stored.cfg.State != "SUCCEEDED" {
		t.Fatalf("clean run ended in %s", s.stored.cfg.State)
	}
	if trips := allTrips(s.boundaries); len(trips) > 0 {
		t.Fatalf("clean run tripped:%s", describe(trips))
	}
	return s.boundaries
}

// first returns a deep copy of the first boundary that satisfies ok.
func first(t *testing.T, bs []Boundary, ok func(b Boundary) bool) Boundary {
	t.Helper()
	for _, b := range bs {
		if ok(b) {
			var c Boundary
			if err := jsonRoundTrip(b, &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatal("no boundary matches")
	return Boundary{}
}

func commitWith(pred func(b Boundary) bool) func(Boundary) bool {
	return func(b Boundary) bool { return b.Phase == PhaseCommit && pred(b) }
}

func hasEvent(b Boundary, ev string) bool {
	return slices.ContainsFunc(b.Events, func(e Event) bool { return e.Record != nil && e.Record.Event == ev })
}

// Single mutations of clean boundaries, each the smallest form of a defect:
// the named wire must fire on it.
func TestMutationsTrip(t *testing.T) {
	bs := cleanRun(t)
	accepting := commitWith(func(b Boundary) bool { return hasEvent(b, "EVENT_ACCEPTED") && len(b.Consumed) > 0 })
	committing := commitWith(func(b Boundary) bool { return len(b.Intents) > 0 && len(b.Approvals) > 0 })
	receipting := commitWith(func(b Boundary) bool { return len(b.Receipts) > 0 })
	loading := func(b Boundary) bool { return b.Phase == PhaseLoad && len(b.Chain.Links) > 2 }
	resting := func(b Boundary) bool { return b.Phase == PhaseIdle && b.Before.State == "WAIT_APPROVAL" }
	reconciling := func(b Boundary) bool { return b.Phase == PhaseIdle && b.Before.State == "HUMAN_RECONCILIATION" }
	cases := []struct {
		name   string
		pick   func(Boundary) bool
		mutate func(b *Boundary)
		wire   string
	}{
		{"cursor skips", accepting, func(b *Boundary) { b.CursorAfter++ }, WireTurnConservation},
		{"input numbered twice", accepting, func(b *Boundary) { b.CursorBefore-- }, WireTurnConservation},
		{"a decision without a turn", accepting, func(b *Boundary) {
			b.Events = slices.DeleteFunc(b.Events, func(e Event) bool { return e.Kind == EventAccepted })
		}, WireTurnConservation},
		{"an intent vanishes", committing, func(b *Boundary) { b.OpenAfter = nil }, WireLedgerClosure},
		{"an effect owed without an intent", committing, func(b *Boundary) { b.Intents = b.Intents[:0]; b.Approvals = nil }, WireLedgerClosure},
		{"a receipt leaves the outbox open", receipting, func(b *Boundary) {
			for i := range b.Results {
				b.Results[i].Outbox = "retry"
			}
		}, WireLedgerClosure},
		{"a second receipt", receipting, func(b *Boundary) { b.Receipts = append(b.Receipts, b.Receipts[0]) }, WireLedgerClosure},
		{"the stored ledger closes without a receipt", func(b Boundary) bool { return b.Phase == PhaseIdle && len(b.Ledger.Intents) > 0 }, func(b *Boundary) {
			b.Ledger.Intents[0].Outbox, b.Ledger.Intents[0].Receipts = "done", 0
		}, WireLedgerClosure},
		{"a record's bytes differ", accepting, func(b *Boundary) {
			for i := range b.Events {
				if b.Events[i].Record != nil {
					b.Events[i].Digest = cjson.Digest([]byte("other"))
					return
				}
			}
		}, WireAppendOnly},
		{"a link's hash does not recompute", loading, func(b *Boundary) { b.Chain.Links[1].ChainHash = cjson.Digest([]byte("x")) }, WireAppendOnly},
		{"the log shrank", loading, func(b *Boundary) { b.Chain.Known.Seq = b.Chain.Observed.Seq + 1 }, WireAppendOnly},
		{"a grant of another run", committing, func(b *Boundary) { b.Approvals[0].GrantRunID = "run-2" }, WireApprovalConsumption},
		{"a revoked grant", committing, func(b *Boundary) { b.Approvals[0].GrantStatus = "revoked" }, WireApprovalConsumption},
		{"an intent's grant not consumed", committing, func(b *Boundary) { b.Approvals = nil }, WireApprovalConsumption},
		{"a consumed grant nobody rests on", func(b Boundary) bool {
			return b.Phase == PhaseIdle && len(b.Ledger.Approvals) > 0 && b.Ledger.Approvals[0].Status == "consumed"
		},
			func(b *Boundary) {
				for i := range b.Ledger.Intents {
					b.Ledger.Intents[i].ApprovalID = ""
				}
			}, WireApprovalConsumption},
		{"a second grant that does not say it concurs", committing, func(b *Boundary) {
			b.Approvals = append(b.Approvals, Consumption{ApprovalID: "grant:other", IntentID: b.Approvals[0].IntentID, GrantRunID: b.RunID, GrantStatus: "granted"})
		}, WireApprovalConsumption},
		{"a concurring grant for an intent resting on none", committing, func(b *Boundary) {
			for i := range b.Intents {
				b.Intents[i].ApprovalID = ""
			}
			b.Approvals = []Consumption{{ApprovalID: "grant:other", IntentID: b.Intents[0].ID, GrantRunID: b.RunID, GrantStatus: "granted", Concurs: true}}
		}, WireApprovalConsumption},
		{"the named grant said to concur", committing, func(b *Boundary) { b.Approvals[0].Concurs = true }, WireApprovalConsumption},
		{"a concurring grant consumed by no intent of the run", func(b Boundary) bool {
			return b.Phase == PhaseIdle && len(b.Ledger.Approvals) > 0 && b.Ledger.Approvals[0].Status == "consumed"
		}, func(b *Boundary) {
			b.Ledger.Approvals = append(b.Ledger.Approvals, LedgerApproval{ID: "grant:other", RunID: b.RunID, Status: "consumed", ConsumedBy: "intent:elsewhere"})
		}, WireApprovalConsumption},
		{"a stale writer", committing, func(b *Boundary) { b.Lease.Newest = b.Lease.Generation + 1 }, WireFencing},
		{"no lease", committing, func(b *Boundary) { b.Lease = Lease{} }, WireFencing},
		{"generations go backwards", loading, func(b *Boundary) { b.Chain.Links[0].Generation = b.Chain.Links[1].Generation + 1 }, WireFencing},
		{"waiting for an approval nobody was asked for", resting, func(b *Boundary) { b.OpenBefore = nil }, WireWedge},
		{"a cancel left in the inbox", resting, func(b *Boundary) {
			b.Waiting = append(b.Waiting, Inbound{ID: "cancel-9", Kind: "cancel", Digest: cjson.Digest([]byte("c"))})
		}, WireWedge},
		{"reconciliation with nothing unknown", reconciling, func(b *Boundary) { b.OpenBefore = nil }, WireWedge},
		{"an unjudgeable round", commitWith(func(b Boundary) bool { return b.Progress != nil }), func(b *Boundary) { b.Progress.Round.Fingerprint = "nope" }, WireLivelock},
		{"a rule no contract allows", commitWith(func(b Boundary) bool { return b.Progress != nil }), func(b *Boundary) { b.Progress.Rule.WindowRounds = -1 }, WireLivelock},
		{"another workflow", loading, func(b *Boundary) { b.Code.CheckpointWorkflow = cjson.Digest([]byte("wf2")) }, WireCodeCoherence},
		{"another FSM table", loading, func(b *Boundary) { b.Before.Table = cjson.Digest([]byte("table2")) }, WireCodeCoherence},
		{"a checkpoint naming no build", committing, func(b *Boundary) { b.Code.CheckpointBuild = "" }, WireCodeCoherence},
		{"an unknown state", resting, func(b *Boundary) { b.Before.State = "PAUSED" }, WireAlphabet},
		{"an unknown inbox kind", resting, func(b *Boundary) {
			b.Waiting = append(b.Waiting, Inbound{ID: "x", Kind: "approve_all", Digest: cjson.Digest([]byte("x"))})
		}, WireAlphabet},
		{"an unknown stage", resting, func(b *Boundary) { b.OpenBefore[0].Stage = "half_done" }, WireAlphabet},
		{"an unknown attempt status", receipting, func(b *Boundary) { b.Results[0].Status = "probably" }, WireAlphabet},
		{"an unknown control event", accepting, func(b *Boundary) {
			i := slices.IndexFunc(b.Events, func(e Event) bool { return e.Record != nil })
			b.Events[i].Record.Event = "SKIP"
		}, WireAlphabet},
		{"an unknown pending interrupt", reconciling, func(b *Boundary) { b.Before.Pending = []string{"PAUSE"} }, WireAlphabet},
		{"an outcome while live", accepting, func(b *Boundary) { b.Outcome = "success" }, WireAlphabet},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := first(t, bs, tc.pick)
			if trips := Check(b); len(trips) > 0 {
				t.Fatalf("unmutated boundary tripped:%s", describe(trips))
			}
			tc.mutate(&b)
			trips := Check(b)
			if !slices.ContainsFunc(trips, func(tr Trip) bool { return tr.Wire == tc.wire }) {
				t.Fatalf("wire %s did not fire; trips:%s", tc.wire, describe(trips))
			}
			for _, tr := range trips {
				if tr.Where == "" || tr.Explanation == "" || len(tr.Evidence) == 0 {
					t.Errorf("trip without where, explanation or evidence: %+v", tr)
				}
				for _, d := range tr.Evidence {
					if !cjson.ValidDigest(d) {
						t.Errorf("evidence %q is not a digest", d)
					}
				}
			}
		})
	}
}

func TestUnknownPhaseTrips(t *testing.T) {
	trips := Check(Boundary{Phase: "later"})
	if len(trips) != 1 || trips[0].Wire != WireAlphabet {
		t.Fatalf("trips %+v", trips)
	}
}

func TestWiresAtPhases(t *testing.T) {
	s := Default()
	if got := len(s.Wires()); got != 9 {
		t.Fatalf("%d wires", got)
	}
	if !slices.Contains(s.WiresAt(PhaseIdle), WireWedge) || slices.Contains(s.WiresAt(PhaseCommit), WireWedge) {
		t.Fatal("the wedge wire belongs to the idle boundary alone")
	}
	if !slices.Contains(s.WiresAt(PhaseCommit), WireTurnConservation) || slices.Contains(s.WiresAt(PhaseLoad), WireWedge) {
		t.Fatal("turn conservation is checked at commits; wedges only at rest")
	}
}

func TestNewRefusesRestingStatesNothingMoves(t *testing.T) {
	for _, waits := range []map[string][]string{
		{"SUCCEEDED": {"input"}},         // final
		{"LATER": {"input"}},             // undeclared
		{"HONOR_PENDING_INTERRUPT": nil}, // fine: the runner's own events move it
	} {
		_, err := New(Config{Waits: waits})
		_, final := waits["SUCCEEDED"]
		_, undeclared := waits["LATER"]
		if (err != nil) != (final || undeclared) {
			t.Errorf("waits %v: err %v", waits, err)
		}
	}
	if _, err := New(Config{Decisions: []string{"DECIDE"}}); err == nil {
		t.Error("an undeclared decision event was accepted")
	}
}

func TestDispose(t *testing.T) {
	degrade := Trip{Wire: WireWedge, Severity: SeverityDegrade}
	halt := Trip{Wire: WireFencing, Severity: SeverityHalt}
	cases := []struct {
		name  string
		b     Boundary
		trips []Trip
		want  Disposition
	}{
		{"no trips", Boundary{Phase: PhaseIdle}, nil, Disposition{}},
		{"degrade at rest", Boundary{Phase: PhaseIdle}, []Trip{degrade}, Disposition{Freeze: true, Park: ParkSafeMode, Summon: SummonSafeMode}},
		{"halt", Boundary{Phase: PhaseIdle}, []Trip{degrade, halt}, Disposition{Freeze: true, Park: ParkHumanReconciliation, Summon: SummonReconcile}},
		{"degrade with an effect in flight", Boundary{Phase: PhaseCommit, OpenAfter: []Effect{{IntentID: "i", Stage: StageCommitted}}}, []Trip{degrade},
			Disposition{Freeze: true, Park: ParkHumanReconciliation, Summon: SummonReconcile}},
		{"degrade with an effect only planned", Boundary{Phase: PhaseCommit, OpenAfter: []Effect{{IntentID: "i", Stage: StagePlanned}}}, []Trip{degrade},
			Disposition{Freeze: true, Park: ParkSafeMode, Summon: SummonSafeMode}},
	}
	for _, tc := range cases {
		if got := Dispose(tc.b, tc.trips); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A report is a canonical trace record body whose bytes depend only on the
// findings, not on the order the wires reported them.
func TestReportIsCanonicalAndOrderFree(t *testing.T) {
	s := newSim("incident", "grant-reuse")
	s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}, {Approval: true, Outcome: "success"}}, Completion: "complete"})
	s.pass()
	s.approve()
	s.pass()
	var b Boundary
	var trips []Trip
	for _, x := range s.boundaries {
		if ts := Check(x); len(ts) > 1 {
			b, trips = x, ts
			break
		}
	}
	if len(trips) < 2 {
		t.Fatal("the incident gave fewer than two trips")
	}
	r1, err := NewReport(b, trips)
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(trips)
	slices.Reverse(rev)
	r2, err := NewReport(b, rev)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := r1.Encode()
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := r2.Encode()
	if !bytes.Equal(e1, e2) {
		t.Fatal("report bytes depend on trip order")
	}
	canon, err := cjson.Canonicalize(e1)
	if err != nil || !bytes.Equal(canon, e1) {
		t.Fatalf("report is not canonical: %v", err)
	}
	if r1.Kind != ReportKind || r1.Disposition.Park != ParkHumanReconciliation || !strings.Contains(string(e1), `"boundary_digest":"sha256:`) {
		t.Fatalf("report %s", e1)
	}
}

// Check never panics, whatever the boundary holds, and its reports encode.
func TestArbitraryBoundariesDoNotPanic(t *testing.T) {
	bs := cleanRun(t)
	rapid.Check(t, func(rt *rapid.T) {
		b := rapid.SampledFrom(bs).Draw(rt, "base")
		var c Boundary
		if err := jsonRoundTrip(b, &c); err != nil {
			rt.Fatal(err)
		}
		str := rapid.SampledFrom([]string{"", "x", "INGEST", "SUCCEEDED", "done", "input", "cancel", cjson.Digest(nil)})
		n := rapid.Int64Range(-2, 40)
		for range rapid.IntRange(1, 8).Draw(rt, "mutations") {
			switch rapid.IntRange(0, 11).Draw(rt, "field") {
			case 0:
				c.Before.State = str.Draw(rt, "state")
			case 1:
				c.After.Seq = n.Draw(rt, "seq")
			case 2:
				c.Events = append(c.Events, Event{Kind: str.Draw(rt, "kind"), Digest: str.Draw(rt, "d")})
			case 3:
				c.Events = append(c.Events, Event{Kind: EventControl, Record: &control.Record{Event: str.Draw(rt, "ev"), Seq: n.Draw(rt, "rs")}})
			case 4:
				c.Events = append(c.Events, Event{Kind: EventAccepted, Input: &Input{Seq: n.Draw(rt, "is"), Kind: str.Draw(rt, "ik")}})
			case 5:
				c.OpenAfter = append(c.OpenAfter, Effect{IntentID: str.Draw(rt, "id"), Stage: str.Draw(rt, "stage")})
			case 6:
				c.Receipts = append(c.Receipts, Receipt{IntentID: str.Draw(rt, "rid"), Outcome: str.Draw(rt, "out")})
			case 7:
				c.Chain.Links = append(c.Chain.Links, Link{Seq: n.Draw(rt, "ls"), Generation: n.Draw(rt, "lg")})
			case 8:
				c.Chain.Known.Seq = n.Draw(rt, "known")
			case 9:
				c.Progress = &Progress{Rule: control.NoProgress{WindowRounds: n.Draw(rt, "w"), Epsilon: n.Draw(rt, "e")},
					Round: control.Round{Fingerprint: str.Draw(rt, "fp"), PendingEffects: n.Draw(rt, "pe")}}
			case 10:
				c.Phase = Phase(rapid.SampledFrom([]string{"load", "commit", "idle"}).Draw(rt, "phase"))
			case 11:
				c.Ledger = &Ledger{Intents: []LedgerIntent{{ID: str.Draw(rt, "lid"), Outbox: str.Draw(rt, "lob"), Receipts: n.Draw(rt, "lr")}}}
			}
		}
		trips := Check(c)
		if _, err := NewReport(c, trips); err != nil {
			rt.Fatalf("report: %v", err)
		}
	})
}

// AfterCommit extends the known head exactly as the store chains the
// events, and carries the window the round leads to.
func TestAfterCommitFollowsTheStore(t *testing.T) {
	s := newSim()
	s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "transient"}}, Completion: "complete"})
	s.pass()
	s.approve()
	s.pass()
	c := Carry{Known: Head{Seq: 0, Hash: GenesisHash}}
	commits := 0
	for _, b := range s.boundaries {
		if b.Phase != PhaseCommit {
			continue
		}
		if !slices.Equal(b.Progress.Window.Rounds, c.Window.Rounds) {
			t.Fatalf("commit %d: carried window %v, the round met %v", commits, c.Window, b.Progress.Window)
		}
		next, err := AfterCommit(c, b)
		if err != nil {
			t.Fatal(err)
		}
		c = next
		commits++
		want := s.links[c.Known.Seq-1]
		if c.Known.Hash != want.ChainHash || c.Newest != b.Lease.Generation {
			t.Fatalf("commit %d: carried head %+v, the store's %d %s", commits, c.Known, want.Seq, want.ChainHash)
		}
	}
	if commits < 3 || c.Known != s.head() {
		t.Fatalf("%d commits; carried %+v, store %+v", commits, c.Known, s.head())
	}
	if _, err := AfterCommit(Carry{}, Boundary{Phase: PhaseCommit, Events: []Event{{Kind: EventControl}}}); err == nil {
		t.Fatal("extended a head of unknown hash")
	}
	if _, err := AfterCommit(c, Boundary{Phase: PhaseIdle}); err == nil {
		t.Fatal("AfterCommit accepted an idle boundary")
	}
}

// A quorum's grants pass: an intent resting on one grant consumes others
// marked as concurring, in its commit and in the stored ledger after.
func TestConcurringGrantsPass(t *testing.T) {
	bs := cleanRun(t)
	b := first(t, bs, commitWith(func(b Boundary) bool { return len(b.Intents) > 0 && len(b.Approvals) > 0 }))
	b.Approvals = append(b.Approvals, Consumption{ApprovalID: "grant:second", IntentID: b.Approvals[0].IntentID, GrantRunID: b.RunID, GrantStatus: "granted", Concurs: true})
	if trips := Check(b); len(trips) > 0 {
		t.Fatalf("a concurring grant tripped:%s", describe(trips))
	}
	idle := first(t, bs, func(b Boundary) bool {
		return b.Phase == PhaseIdle && len(b.Ledger.Approvals) > 0 && b.Ledger.Approvals[0].Status == "consumed"
	})
	idle.Ledger.Approvals = append(idle.Ledger.Approvals, LedgerApproval{ID: "grant:second", RunID: idle.RunID, Status: "consumed", ConsumedBy: idle.Ledger.Approvals[0].ConsumedBy})
	if trips := Check(idle); len(trips) > 0 {
		t.Fatalf("a concurring grant in the ledger tripped:%s", describe(trips))
	}
}
