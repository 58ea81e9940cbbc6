package tripwire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/determinism"
)

func allTrips(bs []Boundary) []Trip {
	var out []Trip
	for _, b := range bs {
		out = append(out, Check(b)...)
	}
	return out
}

func describe(trips []Trip) string {
	var sb strings.Builder
	for _, t := range trips {
		sb.WriteString("\n  " + t.String())
	}
	return sb.String()
}

// Clean tours through every resting state and every final outcome the
// runner produces: none may trip.
var tours = []struct {
	name  string
	final string
	run   func(s *sim)
}{
	{"approved effect", "SUCCEEDED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		s.approve()
		s.pass()
	}},
	{"two approvals, two grants", "SUCCEEDED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}, {Approval: true, Outcome: "failure"}}, Completion: "complete"})
		s.pass()
		s.approve()
		s.pass()
		s.approve()
		s.pass()
	}},
	{"unknown outcome reconciled by a person", "SUCCEEDED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "unknown"}, {Outcome: "success"}}, Completion: "complete"})
		s.pass()
		s.reconcile("confirm")
		s.pass()
	}},
	{"unknown outcome abandoned", "EFFECT_OUTCOME_UNKNOWN", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "unknown"}}, Completion: "complete"})
		s.pass()
		s.reconcile("abandon")
		s.pass()
	}},
	{"transient failure retried", "SUCCEEDED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "transient"}}, Completion: "complete"})
		s.pass()
	}},
	{"several turns", "FAILED_PERMANENT", func(s *sim) {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "success"}}, Completion: "continue"})
		s.pass()
		s.input(inputSpec{Completion: "fail"})
		s.pass()
	}},
	{"denied", "FAILED_PERMANENT", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		s.deny()
		s.pass()
	}},
	{"cancel deferred during reconciliation", "CANCELED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "unknown"}}, Completion: "complete"})
		s.pass()
		s.cancel()
		s.pass()
		s.reconcile("confirm")
		s.pass()
	}},
	{"repeated cancels while a person reconciles", "CANCELED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "unknown"}}, Completion: "continue"})
		s.pass()
		for range 4 {
			s.cancel()
			s.pass()
		}
		s.reconcile("confirm")
		s.pass()
	}},
	{"lease taken over between passes", "SUCCEEDED", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		s.takeover()
		s.approve()
		s.pass()
	}},
}

func TestToursDoNotTrip(t *testing.T) {
	for _, tc := range tours {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim()
			tc.run(s)
			if got := s.stored.cfg.State; got != tc.final {
				t.Fatalf("the tour ended in %s, want %s", got, tc.final)
			}
			if trips := allTrips(s.boundaries); len(trips) > 0 {
				t.Fatalf("a clean run tripped:%s", describe(trips))
			}
		})
	}
}

// TestValidRunsDoNotTrip: runs driven through the real control FSM with
// random inputs, approvals, denials, reconciliations, cancellations and
// lease takeovers never trip a wire.
func TestValidRunsDoNotTrip(t *testing.T) {
	seen := map[string]bool{}
	wanted := []string{"load", "commit", "idle", "links", "INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION",
		"INTENT_COMMITTED", "APPROVAL_GRANTED", "HUMAN_RECEIPT_CONFIRMED", "PENDING_CANCEL", "SUCCEEDED", "FAILED_PERMANENT", "CANCELED", "EFFECT_OUTCOME_UNKNOWN"}
	missing := func() []string {
		var out []string
		for _, w := range wanted {
			if !seen[w] {
				out = append(out, w)
			}
		}
		return out
	}
	// The property is only as good as the runs it saw: keep generating
	// (a few rounds at most) until the runs have reached every resting
	// state, phase and main final state.
	for round := 0; round < 6 && len(missing()) > 0; round++ {
		rapid.Check(t, validRunsDoNotTrip(seen))
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("no generated run reached %v", m)
	}
}

// validRunsDoNotTrip drives one random run and checks every boundary it
// reports; seen collects the states, events and phases the runs reached.
func validRunsDoNotTrip(seen map[string]bool) func(*rapid.T) {
	return func(rt *rapid.T) {
		s := newSim()
		s.forgetful = rapid.Bool().Draw(rt, "forgetful")
		actions := rapid.IntRange(1, 20).Draw(rt, "actions")
		for i := 0; i < actions && !s.final(); i++ {
			if s.stored.cfg.State == "HUMAN_RECONCILIATION" {
				// A person is needed: draw what people do, so that
				// deferred interrupts meet reconciliations often.
				switch rapid.IntRange(0, 5).Draw(rt, "person") {
				case 0, 1:
					s.cancel()
				case 2, 3, 4:
					s.reconcile("confirm")
				case 5:
					s.reconcile("abandon")
				}
				s.pass()
				continue
			}
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0, 1, 2:
				s.input(drawSpec(rt))
			case 3, 4:
				s.approve()
			case 5:
				if rapid.IntRange(0, 3).Draw(rt, "deny") == 0 {
					s.deny()
				}
			case 6:
				s.reconcile(rapid.SampledFrom([]string{"confirm", "confirm", "abandon"}).Draw(rt, "resolution"))
			case 7:
				s.cancel()
			case 8:
				if rapid.Bool().Draw(rt, "writes") {
					// Another runner takes the run over and moves it;
					// this runner comes back with its old memory and
					// must re-acquire.
					oldLease, oldKnown := s.leaseGen, s.known
					s.takeover()
					s.pass()
					s.leaseGen, s.known = oldLease, oldKnown
				} else {
					s.takeover()
				}
			}
			s.pass()
		}
		for i, b := range s.boundaries {
			seen[b.Before.State] = true
			seen[string(b.Phase)] = true
			if len(b.Chain.Links) > 0 {
				seen["links"] = true
			}
			for _, e := range b.Events {
				if e.Record != nil {
					seen[e.Record.Event] = true
				}
			}
			if trips := Check(b); len(trips) > 0 {
				rt.Fatalf("boundary %d (%s in %s) tripped:%s", i, b.Phase, b.Before.State, describe(trips))
			}
		}
	}
}

func drawSpec(rt *rapid.T) inputSpec {
	var spec inputSpec
	for range rapid.IntRange(0, 2).Draw(rt, "effects") {
		spec.Effects = append(spec.Effects, effectSpec{
			Approval: rapid.Bool().Draw(rt, "approval"),
			Outcome:  rapid.SampledFrom([]string{"success", "failure", "unknown", "unknown", "transient"}).Draw(rt, "outcome"),
		})
	}
	spec.Completion = rapid.SampledFrom([]string{"continue", "complete", "complete", "fail"}).Draw(rt, "completion")
	return spec
}

// tamperEvent rewrites one stored event and recomputes the chain after it,
// as a store that repairs rows in place would.
func tamperEvent(s *sim, seq int64) {
	prev := GenesisHash
	for i := range s.links {
		l := &s.links[i]
		if l.Seq == seq {
			l.Digest = digestOf("tampered", seq)
		}
		l.PrevHash = prev
		l.ChainHash = ChainHash(l.PrevHash, l.Seq, l.Digest)
		prev = l.ChainHash
	}
}

// incidents are recorded bad-runner histories. Each names the wire that
// must fire; the same script on a correct runner must not trip at all.
var incidents = []struct {
	name string
	bug  string // the sim's bug ("" when the fault is outside the runner)
	wire string
	run  func(s *sim)
}{
	{"an uninteresting input is consumed and dropped", "consume-without-accept", WireTurnConservation, func(s *sim) {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}},
	{"a receipt is queued twice and accepted twice", "double-ingest", WireTurnConservation, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "success"}}, Completion: "continue"})
		s.pass()
	}},
	{"a receipt queued in one pass is forgotten by the next", "ingest-in-memory", WireTurnConservation, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "success"}, {Outcome: "unknown"}}, Completion: "complete"})
		s.pass() // one effect closes, the other waits for a person
		s.reconcile("confirm")
		s.pass()
	}},
	{"a refused input gets no decision", "refusal-swallowed", WireTurnConservation, func(s *sim) {
		s.input(inputSpec{Completion: "refuse"})
		s.pass()
	}},
	{"an unknown effect is dropped as if closed", "drop-unknown", WireLedgerClosure, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "unknown"}, {Outcome: "success"}}, Completion: "complete"})
		s.pass()
	}},
	{"the checkpoint loses the control head", "dropped-head", WireAppendOnly, func(s *sim) {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}},
	{"the store rewrites an event in place", "", WireAppendOnly, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		if s.bugs["incident"] {
			tamperEvent(s, 2)
		}
		s.approve()
		s.pass()
	}},
	{"one grant is matched to two waiting effects", "grant-reuse", WireApprovalConsumption, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}, {Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		s.approve()
		s.pass()
	}},
	{"a paused runner wakes with its old lease", "", WireFencing, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "continue"})
		s.pass() // runner A holds the run; it rests in WAIT_APPROVAL
		oldLease, oldKnown := s.leaseGen, s.known
		s.takeover() // A pauses; runner B takes the run over
		s.approve()
		s.pass() // B moves the run on under its newer lease
		s.leaseGen, s.known = oldLease, oldKnown
		if s.bugs["incident"] {
			s.bugs["zombie-lease"] = true // A wakes and trusts its old lease
		}
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}},
	{"the run rests with an input in its inbox", "lost-wake", WireWedge, func(s *sim) {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}},
	{"the runner stops in PLAN_EFFECTS", "stuck-in-plan", WireWedge, func(s *sim) {
		s.input(inputSpec{Completion: "continue"})
		s.pass()
	}},
	{"an approval is requested but no effect waits for it", "unmarked-request", WireWedge, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
	}},
	{"approvals expire and are requested again forever", "expiry-loop", WireLivelock, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
	}},
	{"a retry round claims a verified receipt", "self-certified-gain", WireLivelock, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "transient"}}, Completion: "complete"})
		s.pass()
	}},
	{"a new build resumes an old checkpoint", "", WireCodeCoherence, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		if s.bugs["incident"] {
			s.build = digestOf("build", "flrh v2")
		}
		s.approve()
		s.pass()
	}},
	{"a blessed upgrade resumes an old checkpoint", "", "", func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Approval: true, Outcome: "success"}}, Completion: "complete"})
		s.pass()
		if s.bugs["incident"] {
			s.blessed = []string{s.build}
			s.build = digestOf("build", "flrh v2")
		}
		s.approve()
		s.pass()
	}},
	{"an adapter's new outcome is recorded as a receipt", "novel-outcome", WireAlphabet, func(s *sim) {
		s.input(inputSpec{Effects: []effectSpec{{Outcome: "success"}}, Completion: "complete"})
		s.pass()
	}},
	{"a failed run is recorded as a success", "outcome-default", WireAlphabet, func(s *sim) {
		s.input(inputSpec{Completion: "fail"})
		s.pass()
	}},
}

// TestIncidentsTrip is the calibration: each wire fires on the incidents
// recorded for it, and stays quiet on the same history without the fault.
func TestIncidentsTrip(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range incidents {
		t.Run(tc.name, func(t *testing.T) {
			clean := newSim()
			tc.run(clean)
			if trips := allTrips(clean.boundaries); len(trips) > 0 {
				t.Fatalf("the history without the fault tripped:%s", describe(trips))
			}
			bad := newSim("incident")
			if tc.bug != "" {
				bad.bugs[tc.bug] = true
			}
			tc.run(bad)
			trips := allTrips(bad.boundaries)
			if tc.wire == "" {
				if len(trips) > 0 {
					t.Fatalf("a blessed change tripped:%s", describe(trips))
				}
				return
			}
			if !slices.ContainsFunc(trips, func(tr Trip) bool { return tr.Wire == tc.wire }) {
				t.Fatalf("wire %s did not fire; trips:%s", tc.wire, describe(trips))
			}
			covered[tc.wire] = true
		})
	}
	for _, w := range Default().Wires() {
		if !covered[w] {
			t.Errorf("wire %s has no calibrating incident", w)
		}
	}
}

func TestCheckIsPure(t *testing.T) {
	s := newSim("incident", "grant-reuse")
	for _, tc := range incidents {
		if tc.bug == "grant-reuse" {
			tc.run(s)
		}
	}
	if len(s.boundaries) == 0 {
		t.Fatal("no boundaries")
	}
	for i, b := range s.boundaries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			determinism.Check(t, b, Check)
		})
	}
}
