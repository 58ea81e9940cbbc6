package tripwire

import (
	"encoding/json"
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
)

// sim is a model of the runner's outer loop, driven by the real control
// FSM, that reports the boundaries a correct runner would hand to Check.
// Switching on one of its bugs turns it into a model of a bad runner: the
// boundary sequence it then reports is a seeded incident.
type sim struct {
	m     *control.Machine
	runID string
	bugs  map[string]bool
	build string // the running build
	wf    string // the loaded workflow digest

	// durable: what the store holds
	stored struct {
		cfg        control.Configuration
		cursor     int64
		completion string
		open       []Effect
		build      string // the checkpoint's build digest
	}
	intents   []LedgerIntent
	approvals []LedgerApproval
	links     []Link
	inbox     []Inbound
	specs     map[string]inputSpec // inbound id -> what the input asks for
	gen       int64                // the store's current lease generation
	window    control.ProgressWindow

	// the runner's memory and working copy
	known      Head
	leaseGen   int64
	cfg        control.Configuration
	cursor     int64
	completion string
	open       []Effect
	want       map[string]bool   // intent id -> needs an approval
	outcomeOf  map[string]string // intent id -> what its destination will do
	ingest     []Awaiting        // receipts waiting to be accepted
	ingestAt   []Awaiting        // the queue as of the last commit
	snapshot   []Inbound         // the inbox as this pass read it
	tick       Boundary
	n          int

	boundaries []Boundary
	forgetful  bool // the runner restarts before every pass: it reads the whole chain
	blessed    []string
}

// inputSpec is what a simulated input makes the workflow decide.
type inputSpec struct {
	Effects    []effectSpec
	Completion string // continue, complete, fail
}

type effectSpec struct {
	Approval bool
	Outcome  string // success, failure, unknown, transient
}

func newSim(bugs ...string) *sim {
	s := &sim{m: control.Default(), runID: "run-1", bugs: map[string]bool{}, build: digestOf("build", "flrh v1"), wf: digestOf("workflow", "refund@1"),
		specs: map[string]inputSpec{}, want: map[string]bool{}, outcomeOf: map[string]string{}}
	for _, b := range bugs {
		s.bugs[b] = true
	}
	s.stored.cfg = s.m.Initial()
	s.stored.completion = "continue"
	s.gen = 1
	return s
}

func digestOf(name string, v any) string {
	d, err := cjson.DigestOf(map[string]any{"sim": name, "value": v})
	if err != nil {
		panic(err)
	}
	return d
}

func (s *sim) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s-%d", prefix, s.n)
}

// --- what happens outside the runner --------------------------------------

func (s *sim) final() bool { return s.m.Final(s.stored.cfg.State) }

func (s *sim) submit(kind string, body any) Inbound {
	in := Inbound{ID: s.id(kind), Kind: kind, Digest: digestOf(kind, body)}
	s.inbox = append(s.inbox, in)
	return in
}

func (s *sim) input(spec inputSpec) {
	in := s.submit("input", spec)
	s.specs[in.ID] = spec
}

func (s *sim) approve() {
	a := LedgerApproval{ID: s.id("grant"), RunID: s.runID, Status: "granted"}
	s.approvals = append(s.approvals, a)
	s.submit("approve", a.ID)
}

func (s *sim) deny()              { s.submit("deny", "no") }
func (s *sim) cancel()            { s.submit("cancel", "stop") }
func (s *sim) reconcile(r string) { s.submit("reconcile", r) }
func (s *sim) takeover()          { s.gen++ }

// --- one pass ---------------------------------------------------------------

func (s *sim) pass() {
	if s.final() {
		return
	}
	if s.leaseGen != s.gen && !s.bugs["zombie-lease"] {
		// The runner (re-)acquires the lease: the generation grows.
		s.gen++
		s.leaseGen = s.gen
	}
	s.cfg, s.cursor, s.completion = s.stored.cfg, s.stored.cursor, s.stored.completion
	s.open = slices.Clone(s.stored.open)
	if s.bugs["ingest-in-memory"] {
		s.ingest = nil // the queue lived in the last pass's memory
	}
	s.ingestAt = slices.Clone(s.ingest)
	s.boundaries = append(s.boundaries, s.loadBoundary())
	s.snapshot = slices.Clone(s.inbox)
	s.tick = Boundary{}
	for i := 0; i < 40 && s.step(); i++ {
	}
	s.flush()
	s.boundaries = append(s.boundaries, s.idleBoundary())
}

func (s *sim) ledger() *Ledger {
	return &Ledger{Intents: slices.Clone(s.intents), Approvals: slices.Clone(s.approvals)}
}

func (s *sim) head() Head {
	if len(s.links) == 0 {
		return Head{Seq: 0, Hash: GenesisHash}
	}
	l := s.links[len(s.links)-1]
	return Head{Seq: l.Seq, Hash: l.ChainHash}
}

func (s *sim) loadBoundary() Boundary {
	known := s.known
	if known.Hash == "" || s.forgetful {
		known = Head{Seq: 0, Hash: GenesisHash}
	}
	var links []Link
	if known.Seq < s.head().Seq {
		links = slices.Clone(s.links[known.Seq:])
	}
	b := Boundary{Phase: PhaseLoad, RunID: s.runID, Before: s.stored.cfg, After: s.stored.cfg, CursorBefore: s.stored.cursor, CursorAfter: s.stored.cursor,
		OpenBefore: slices.Clone(s.stored.open), OpenAfter: slices.Clone(s.stored.open), Ledger: s.ledger(), AwaitingBefore: slices.Clone(s.ingest),
		Chain: Chain{Known: known, Observed: s.head(), Links: links}, Lease: Lease{Generation: s.leaseGen, Newest: s.leaseGen},
		Code: Code{CheckpointBuild: s.stored.build, RunningBuild: s.build, CheckpointWorkflow: s.wf, RunningWorkflow: s.wf, Blessed: s.blessed}}
	s.known = s.head()
	return b
}

func (s *sim) idleBoundary() Boundary {
	var waiting []Inbound
	for _, in := range s.snapshot {
		if slices.Contains(s.inbox, in) {
			waiting = append(waiting, in)
		}
	}
	return Boundary{Phase: PhaseIdle, RunID: s.runID, Before: s.stored.cfg, After: s.stored.cfg, CursorBefore: s.stored.cursor, CursorAfter: s.stored.cursor,
		OpenBefore: slices.Clone(s.stored.open), OpenAfter: slices.Clone(s.stored.open), Waiting: waiting, Ledger: s.ledger(), AwaitingBefore: slices.Clone(s.ingest),
		Chain: Chain{Known: s.known, Observed: s.head()}, Lease: Lease{Generation: s.leaseGen, Newest: s.leaseGen}}
}

// flush commits the pending tick, as the store would, after reporting its
// commit boundary.
func (s *sim) flush() {
	t := s.tick
	if len(t.Events) == 0 && len(t.Results) == 0 && len(t.Receipts) == 0 && len(t.Consumed) == 0 {
		return
	}
	t.Phase, t.RunID = PhaseCommit, s.runID
	t.Before, t.After = s.stored.cfg, s.cfg
	t.CursorBefore, t.CursorAfter = s.stored.cursor, s.cursor
	t.OpenBefore, t.OpenAfter = slices.Clone(s.stored.open), slices.Clone(s.open)
	t.AwaitingBefore, t.AwaitingAfter = s.ingestAt, slices.Clone(s.ingest)
	if s.m.Final(s.cfg.State) {
		t.Outcome = s.m.Outcome(s.cfg)
		if s.bugs["outcome-default"] {
			t.Outcome = "success"
		}
	}
	t.Chain = Chain{Known: s.known, Observed: s.known}
	t.Lease = Lease{Generation: s.leaseGen, Newest: s.leaseGen}
	cpBuild := s.build
	if s.bugs["stale-build"] && s.stored.build != "" {
		cpBuild = s.stored.build
	}
	t.Code = Code{CheckpointBuild: cpBuild, RunningBuild: s.build, CheckpointWorkflow: s.wf, RunningWorkflow: s.wf}
	t.Progress = s.round(t)
	s.boundaries = append(s.boundaries, t)

	// The store applies the tick.
	prev := s.head()
	for _, e := range t.Events {
		l := Link{Seq: prev.Seq + 1, Digest: e.Digest, PrevHash: prev.Hash, Generation: s.leaseGen}
		l.ChainHash = ChainHash(l.PrevHash, l.Seq, l.Digest)
		s.links = append(s.links, l)
		prev = Head{Seq: l.Seq, Hash: l.ChainHash}
	}
	s.known = s.head()
	for _, in := range t.Intents {
		s.intents = append(s.intents, LedgerIntent{ID: in.ID, Outbox: "in_flight", ApprovalID: in.ApprovalID})
	}
	for _, a := range t.Approvals {
		for i := range s.approvals {
			if s.approvals[i].ID == a.ApprovalID {
				s.approvals[i].Status, s.approvals[i].ConsumedBy = "consumed", a.IntentID
			}
		}
	}
	for _, r := range t.Results {
		for i := range s.intents {
			if s.intents[i].ID == r.IntentID {
				s.intents[i].Outbox = r.Outbox
			}
		}
	}
	for _, r := range t.Receipts {
		for i := range s.intents {
			if s.intents[i].ID == r.IntentID {
				s.intents[i].Receipts++
			}
		}
	}
	for _, c := range t.Consumed {
		s.inbox = slices.DeleteFunc(s.inbox, func(in Inbound) bool { return in.ID == c.ID })
	}
	s.stored.cfg, s.stored.cursor, s.stored.completion = s.cfg, s.cursor, s.completion
	s.stored.open = slices.Clone(s.open)
	s.stored.build = cpBuild
	s.ingestAt = slices.Clone(s.ingest)
	s.tick = Boundary{}
}

// round is the progress round of a commit: cursor, workflow state, open
// effects and control position, and the receipts it verified as gain.
func (s *sim) round(t Boundary) *Progress {
	rule := control.DefaultContract().NoProgress
	fs := digestOf("state", []any{s.completion, s.cursor})
	fp, err := control.Fingerprint(control.FingerprintInput{Cursor: s.cursor, FState: fs, LSupports: fs, RFrontier: fs,
		PendingEffects: digestOf("open", s.open), Evidence: digestOf("control", []any{s.cfg.State, s.cfg.Pending})})
	if err != nil {
		panic(err)
	}
	gain := int64(len(t.Receipts))
	if s.bugs["self-certified-gain"] {
		gain = 1
	}
	p := &Progress{Rule: rule, Window: s.window, Round: control.Round{Fingerprint: fp, Gain: control.Gain{VerifiedReceipts: gain}, PendingEffects: int64(s.owedCount())}}
	next, _, err := rule.Observe(s.window, p.Round)
	if err != nil {
		panic(err)
	}
	s.window = next
	return p
}

func (s *sim) owedCount() int {
	n := 0
	for _, e := range s.open {
		if owed(e.Stage) {
			n++
		}
	}
	return n
}

// --- the runner's steps --------------------------------------------------------

func (s *sim) authority(typ string) (string, string) {
	for _, e := range s.m.Events() {
		if e.ID == typ {
			return e.Authority[0].Role, e.Authority[0].Capability
		}
	}
	panic("no event " + typ)
}

func (s *sim) fire(typ string, guards map[string]bool) {
	role, capability := s.authority(typ)
	base := s.cfg
	base.Context = guards
	s.n++
	res := s.m.Step(base, control.Event{Type: typ, ActorRole: role, Capability: capability, EventID: fmt.Sprintf("%s:%d", s.runID, s.n)})
	rec := res.Record
	kind := EventControl
	if res.Rejection != nil {
		kind = EventRejected
	}
	d, err := cjson.DigestOf(rec)
	if err != nil {
		panic(err)
	}
	s.tick.Events = append(s.tick.Events, Event{Kind: kind, Digest: d, Record: &rec})
	if res.Rejection == nil {
		next := res.Next
		next.Context = nil
		if s.bugs["dropped-head"] {
			// The bad runner rebuilds the configuration to clear its
			// context and loses the head and table on the way.
			next = control.Configuration{State: next.State, Pending: next.Pending, Seq: next.Seq}
		}
		s.cfg = next
	}
}

func (s *sim) take(kind string) (Inbound, bool) {
	for _, in := range s.snapshot {
		if in.Kind != kind || slices.ContainsFunc(s.tick.Consumed, func(c Inbound) bool { return c.ID == in.ID }) {
			continue
		}
		if !slices.ContainsFunc(s.inbox, func(x Inbound) bool { return x.ID == in.ID }) {
			continue
		}
		return in, true
	}
	return Inbound{}, false
}

func (s *sim) consume(in Inbound) { s.tick.Consumed = append(s.tick.Consumed, in) }

func (s *sim) accept(kind, digest string, spec *inputSpec) {
	s.cursor++
	in := Input{Seq: s.cursor, Kind: kind, Digest: digest}
	s.tick.Events = append(s.tick.Events, Event{Kind: EventAccepted, Digest: digestOf("accepted", in), Input: &in})
	s.fire("EVENT_ACCEPTED", nil)
	if spec != nil {
		for _, e := range spec.Effects {
			id := s.id("intent")
			s.open = append(s.open, Effect{IntentID: id, Stage: StagePlanned})
			s.want[id] = e.Approval
			s.outcomeOf[id] = e.Outcome
		}
		s.completion = spec.Completion
	}
	if s.bugs["refusal-swallowed"] && spec != nil && spec.Completion == "refuse" {
		return // the bad runner forgets the decision of a refused input
	}
	s.fire("EPOCH_STABLE", map[string]bool{"frontier_passed": true})
}

func (s *sim) step() bool {
	if s.m.Final(s.cfg.State) {
		return false
	}
	if in, ok := s.take("cancel"); ok {
		s.consume(in)
		s.fire("CANCEL", nil)
		return true
	}
	switch s.cfg.State {
	case "INIT":
		s.fire("START", nil)
	case "INGEST":
		if len(s.ingest) > 0 {
			in := s.ingest[0]
			s.ingest = s.ingest[1:]
			s.accept("receipt", in.Digest, nil)
			return true
		}
		in, ok := s.take("input")
		if !ok || s.bugs["lost-wake"] {
			return false
		}
		s.consume(in)
		spec := s.specs[in.ID]
		if s.bugs["consume-without-accept"] && len(spec.Effects) == 0 {
			return true // the bad runner drops an input it finds uninteresting
		}
		s.accept("input", in.Digest, &spec)
	case "PLAN_EFFECTS":
		var planned, needs []int
		for i, e := range s.open {
			if e.Stage == StagePlanned {
				planned = append(planned, i)
				if s.want[e.IntentID] && e.ApprovalID == "" {
					needs = append(needs, i)
				}
			}
		}
		switch {
		case len(planned) == 0:
			if s.bugs["stuck-in-plan"] {
				return false
			}
			s.fire("NO_EFFECTS", nil)
		case len(needs) > 0:
			for _, i := range needs {
				if !s.bugs["unmarked-request"] {
					s.open[i].Stage = StageAwaitingApproval
				}
			}
			s.fire("APPROVAL_REQUIRED", nil)
			if s.bugs["expiry-loop"] {
				s.flush()
			}
		default:
			s.fire("EFFECT_AUTHORIZED", nil)
		}
	case "WAIT_APPROVAL":
		if in, ok := s.take("deny"); ok {
			s.consume(in)
			s.fire("APPROVAL_DENIED", nil)
			return true
		}
		if s.bugs["expiry-loop"] {
			s.fire("APPROVAL_EXPIRED", nil)
			for i := range s.open {
				if s.open[i].Stage == StageAwaitingApproval {
					s.open[i].Stage = StagePlanned
				}
			}
			s.flush()
			return true
		}
		in, ok := s.take("approve")
		if !ok {
			return false
		}
		s.consume(in)
		grant := s.grantOf(in)
		matched := 0
		for i := range s.open {
			e := &s.open[i]
			if e.Stage == StageAwaitingApproval && e.ApprovalID == "" && (matched == 0 || s.bugs["grant-reuse"]) {
				e.ApprovalID = grant
				matched++
			}
		}
		for _, e := range s.open {
			if e.Stage == StageAwaitingApproval && e.ApprovalID == "" {
				return true
			}
		}
		s.fire("APPROVAL_GRANTED", map[string]bool{"approval_matches": true})
		for i := range s.open {
			if s.open[i].Stage == StageAwaitingApproval {
				s.open[i].Stage = StagePlanned
			}
		}
	case "COMMIT_INTENT":
		for i := range s.open {
			e := &s.open[i]
			if e.Stage != StagePlanned {
				continue
			}
			in := Intent{ID: e.IntentID, Digest: digestOf("intent", e.IntentID), ApprovalID: e.ApprovalID}
			s.tick.Intents = append(s.tick.Intents, in)
			if e.ApprovalID != "" {
				s.tick.Approvals = append(s.tick.Approvals, Consumption{ApprovalID: e.ApprovalID, IntentID: e.IntentID, GrantRunID: s.runID, GrantStatus: "granted"})
			}
			e.Stage = StageCommitted
		}
		s.fire("INTENT_COMMITTED", map[string]bool{"intent_durable": true})
		s.flush()
	case "EXECUTE":
		for i := range s.open {
			e := &s.open[i]
			if e.Stage != StageCommitted {
				continue
			}
			n := int64(1)
			outcome := s.outcomeOf[e.IntentID]
			if outcome == "transient" {
				s.tick.Results = append(s.tick.Results, Result{IntentID: e.IntentID, N: 1, Status: "failed_transient", Outbox: "retry"})
				s.flush()
				n, outcome = 2, "success"
			}
			switch outcome {
			case "success", "failure":
				status, out := "succeeded", "confirmed_success"
				if outcome == "failure" {
					status, out = "failed_permanent", "confirmed_failure"
				}
				if s.bugs["novel-outcome"] {
					out = "partial_success"
				}
				s.close(e, n, status, out)
			default:
				s.tick.Results = append(s.tick.Results, Result{IntentID: e.IntentID, N: n, Status: "unknown", Outbox: "human"})
				e.Stage = StageUnknown
			}
		}
		s.fire("ATTEMPT_RECORDED", nil)
	case "RECONCILE":
		for _, e := range s.open {
			if e.Stage == StageUnknown && !s.bugs["drop-unknown"] {
				s.fire("OUTCOME_UNKNOWN", nil)
				return true
			}
		}
		s.dropClosed()
		s.fire("EFFECT_RESULT_CONFIRMED", nil)
	case "HUMAN_RECONCILIATION":
		in, ok := s.take("reconcile")
		if !ok {
			return false
		}
		s.consume(in)
		if in.Digest == digestOf("reconcile", "abandon") {
			s.fire("ABANDON", nil)
			return true
		}
		for i := range s.open {
			if s.open[i].Stage == StageUnknown {
				s.close(&s.open[i], 1, "reconciled_applied", "confirmed_success")
				break
			}
		}
		for _, e := range s.open {
			if e.Stage == StageUnknown {
				return true
			}
		}
		s.dropClosed()
		s.fire("HUMAN_RECEIPT_CONFIRMED", nil)
	case "HONOR_PENDING_INTERRUPT":
		for _, p := range s.cfg.Pending {
			for _, in := range s.m.Interrupts() {
				if in.Event == p {
					s.fire(in.HonoredBy, nil)
					return true
				}
			}
		}
		s.fire("NO_PENDING_INTERRUPT", nil)
	case "VERIFY_COMPLETION":
		switch {
		case s.completion == "complete" && len(s.open) == 0:
			s.fire("VERIFIED_COMPLETE", map[string]bool{"independent_receipt_closed": true, "no_unknown_effects": true})
		case s.completion == "fail":
			s.fire("VERIFIED_FAILURE", nil)
		default:
			s.fire("MORE_WORK", nil)
		}
	default:
		return false
	}
	return true
}

func (s *sim) grantOf(in Inbound) string {
	for _, a := range s.approvals {
		if digestOf("approve", a.ID) == in.Digest {
			return a.ID
		}
	}
	panic("approve entry without a grant")
}

func (s *sim) close(e *Effect, n int64, status, outcome string) {
	s.tick.Results = append(s.tick.Results, Result{IntentID: e.IntentID, N: n, Status: status, Outbox: "done"})
	r := Receipt{IntentID: e.IntentID, Outcome: outcome, Digest: digestOf("receipt", []any{e.IntentID, n, outcome})}
	s.tick.Receipts = append(s.tick.Receipts, r)
	s.ingest = append(s.ingest, Awaiting{IntentID: e.IntentID, Digest: r.Digest})
	if s.bugs["double-ingest"] {
		s.ingest = append(s.ingest, Awaiting{IntentID: e.IntentID, Digest: r.Digest})
	}
	e.Stage = StageClosed
}

func (s *sim) dropClosed() {
	s.open = slices.DeleteFunc(s.open, func(e Effect) bool {
		return e.Stage == StageClosed || (s.bugs["drop-unknown"] && e.Stage == StageUnknown)
	})
}

func jsonRoundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
