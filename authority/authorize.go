package authority

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// PublishedBatch is R's atomic publication of one epoch: the batch header
// and its proposals and verdicts, paired by position.
type PublishedBatch struct {
	Batch                protocol.StableProposalBatch  `json:"batch"`
	Proposals            []protocol.EffectProposal     `json:"effect_proposals"`
	Verdicts             []protocol.EligibilityVerdict `json:"eligibility_verdicts"`
	PublishedBatchDigest string                        `json:"published_batch_digest"`
}

// ActionSpec is the concrete content of one proposal's action, as the
// domain produced it: where it goes, in which scope, with which
// parameters, and the approval-binding facts a person would see. It is
// data: nothing in it can authorize anything.
type ActionSpec struct {
	ProposalID     string         `json:"proposal_id"`
	Destination    string         `json:"destination"`
	Scope          string         `json:"scope"`
	Parameters     map[string]any `json:"parameters"`
	ArtifactDigest string         `json:"artifact_digest"`
	Visibility     string         `json:"visibility"`
	// Nonce and Rationale for a new approval request; the runner supplies
	// a nonce from its recorded identifier inputs so replay is exact. An
	// empty nonce is derived from the request's content.
	Nonce     string `json:"nonce"`
	Rationale string `json:"rationale"`
}

// PolicySnapshot is the operator configuration Authorize judges under.
type PolicySnapshot struct {
	Policy    *Policy
	Manifests map[string]ToolManifest // by effect type
	Keyring   Keyring
	// Approval policy: its version, who may approve (scope and the actor
	// asked), and how long a request stays open (logical time units).
	ApprovalPolicyVersion string
	ApproverScope         string
	Approver              string
	ApprovalTTL           int64
}

// PresentedApproval is a grant read from the approvals ledger, with the
// request it answers and the person the ledger says issued it.
type PresentedApproval struct {
	Request  ApprovalRequest `json:"request"`
	Approval Approval        `json:"approval"`
	Approver Approver        `json:"approver"`
}

// Input is everything Authorize reads. It reads nothing else: no clock
// (Now is the caller's logical time), no keys but the keyring, no ledger
// but Ledger.
type Input struct {
	Batch PublishedBatch
	// Checked, when SealBatch checked this very batch under this profile,
	// spares the batch check (see CheckedBatch); otherwise it is ignored.
	Checked       CheckedBatch
	ProfileDigest string
	Actions       []ActionSpec
	Policy        PolicySnapshot
	// Capabilities are operator-issued chains (root first). Capabilities
	// are never read from proposals, parameters or any model output.
	Capabilities [][]SignedCapability
	// Verified are chains already verified by the policy's keyring (see
	// Keyring.Verify); only their validity window and coverage are checked
	// here, before Capabilities and exactly as for them (in order, each
	// one that is not live or does not cover the ticket audited), so a
	// caller that verified its chains once passes them here instead of in
	// Capabilities and gets the same outcome without the signatures.
	Verified  []VerifiedCapability
	Approvals []PresentedApproval
	Ledger    Ledger
	// PreviewsShown lists preview digests a person has been shown;
	// Confirmations lists action digests a person confirmed.
	PreviewsShown []string
	Confirmations []string
	// Choices are options chosen in Contestable Gate Mode: by people, from
	// their CHOOSE_OPTION control events, or by the controller where the
	// policy delegates the choice; any other choice is ignored (and
	// audited).
	Choices []Choice
	// Resumed are people's RESUME of deliberation on proposals H escalated
	// or held, presented when such a proposal is decided again: the gates
	// read resumed(t). One by anyone but a person holding mrp.resume is
	// ignored (and audited).
	Resumed []Resumption
	// Signals are the turn's non-gate signals (watchdog, verification,
	// clarification, attunement).
	Signals []Signal
	// PrevFHR is the digest of the run's previous FHR, chaining the turns.
	PrevFHR string
	// ScorecardDigest is the digest of the turn's AIF scorecard, if any; the
	// FHR records it.
	ScorecardDigest string
	// Machine is the run's MRP machine before this batch.
	Machine mrp.Machine
	// FHRTo, when not nil, is a buffer the FHR's canonical bytes are
	// appended to, as Decisions.FHRCanonical: a caller that records the
	// FHR gets the bytes its seal wrote instead of writing them again.
	FHRTo []byte
	// NoControlEvents says the caller reads no Outcome's ControlEvent:
	// every outcome's is nil, and the digests only it binds (the input's,
	// the capability evidence's, the policy verdict's and the event's id)
	// are not taken. Every other member of the decisions, the FHR and
	// the machine are the same as without it.
	NoControlEvents bool
	// Memo, when set, records the digests of the decision's preimages,
	// and gives those of byte-identical preimages recorded by an earlier
	// decision given the same memo (see DigestMemo).
	Memo           *DigestMemo
	Now            int64
	EffectSequence int64
	Turn           int64
}

// ControllerRole is the role of the active-inference controller when it
// chooses among options on its own. Such a choice counts only where the
// gate policy derives AutonomousChoice(t) for the ticket (see
// Policy.Delegates).
const ControllerRole = "aif_controller"

// AutonomousChoice is the relation a gate policy derives, autonomous_choice(t),
// to let the controller choose among the options offered for ticket t.
const AutonomousChoice = "autonomous_choice"

// Choice is a choice among the options offered for a proposal: a person's,
// or the controller's where the policy delegates it.
type Choice struct {
	ProposalID string    `json:"proposal_id"`
	Option     string    `json:"option"`
	Actor      mrp.Actor `json:"actor"`
}

// Resumption is a person's RESUME of deliberation on a proposal H
// escalated or held.
type Resumption struct {
	ProposalID string    `json:"proposal_id"`
	Actor      mrp.Actor `json:"actor"`
}

// ResumedFact states that a person resumed deliberation on the ticket.
func ResumedFact(ticketID string) logic.Fact {
	return logic.Fact{Rel: "resumed", Args: []logic.Value{logic.Sym(ticketID)}}
}

// ChosenFact states that a person chose an option for the ticket.
func ChosenFact(ticketID, option string) logic.Fact {
	return logic.Fact{Rel: "chosen", Args: []logic.Value{logic.Sym(ticketID), logic.Sym(option)}}
}

// Outcome is the decision for one proposal.
type Outcome struct {
	ProposalID string     `json:"proposal_id"`
	Ticket     Ticket     `json:"ticket"`
	Evaluation Evaluation `json:"evaluation"`
	Resolution Resolution `json:"resolution"`
	// Kind is what came of it: INTENT, APPROVAL_REQUEST, OPTIONS,
	// HELD, ESCALATED or REJECTED.
	Kind            string                 `json:"kind"`
	Event           string                 `json:"event"`
	ControlEvent    *ControlEvent          `json:"control_event"`
	Intent          *protocol.EffectIntent `json:"intent"`
	ApprovalRequest *ApprovalRequest       `json:"approval_request"`
	// Approval is the grant the intent consumes; the runner revalidates
	// and consumes it inside the commit transaction.
	Approval  *PresentedApproval `json:"approval"`
	Options   []string           `json:"options"`
	Rejection *Rejection         `json:"rejection"`
	// Authority is the authority snapshot the intent was authorized under.
	Authority *AuthoritySnapshot `json:"authority"`
	// Audit lists every presented capability or approval that could not
	// be used for this proposal, with its typed reason.
	Audit    []string  `json:"audit"`
	Held     string    `json:"held"`
	MRPState mrp.State `json:"mrp_state"`
	Refusal  bool      `json:"refusal"`
	// Quorum is, for an approval request the gate policy asks more than
	// one person to answer (its QuorumRelation), how many, and
	// QuorumReason the rule instance that asks for them; 0 and nil
	// otherwise.
	Quorum       int     `json:"quorum,omitempty"`
	QuorumReason *Reason `json:"quorum_reason,omitempty"`
	// ApproverReason is, for an approval request whose approver the gate
	// policy named (its ApproverRelation), the rule instance that names
	// it; the request's actor is the approver.
	ApproverReason *Reason `json:"approver_reason,omitempty"`
}

// Outcome kinds.
const (
	OutcomeIntent          = "INTENT"
	OutcomeApprovalRequest = "APPROVAL_REQUEST"
	OutcomeOptions         = "OPTIONS"
	OutcomeHeld            = "HELD"
	OutcomeEscalated       = "ESCALATED"
	OutcomeRejected        = "REJECTED"
)

// Decisions is Authorize's result for a batch.
type Decisions struct {
	Outcomes []Outcome `json:"outcomes"`
	// Event is the run-FSM event the batch implies from PLAN_EFFECTS:
	// EFFECT_AUTHORIZED when any intent was authorized; else
	// APPROVAL_REQUIRED when any proposal waits (an approval request,
	// options, an escalation or a hold); else NO_EFFECTS (nothing proposed,
	// or everything rejected).
	Event   string      `json:"event"`
	Machine mrp.Machine `json:"machine"`
	FHR     mrp.FHR     `json:"fhr"`
	// FHRCanonical is FHRTo with FHR.AppendCanonical's bytes appended,
	// when FHRTo was given and mrp.FHR.SealAppend wrote them; nil
	// otherwise (the caller then writes them itself). It is not part of
	// the decisions' encoding.
	FHRCanonical []byte `json:"-"`
}

// Authorize decides, for each proposal of a stable batch, whether and how
// it may reach the world. It is pure: the same input gives the same
// decisions, byte for byte. A malformed batch is one typed rejection and
// decides nothing; every other failure is a per-proposal rejection.
func Authorize(in Input) (Decisions, error) {
	// The decisions' digests and ids share one buffer; their preimages,
	// the batch check's included, share one plainSeen and one preimage
	// buffer. A batch of one proposal has its records, these included, in
	// one allocation.
	var arena strArena
	var single *singleRecords
	var shared *decisionShared
	if n := len(in.Batch.Proposals); n == 1 {
		single = new(singleRecords)
		shared = &single.shared
	} else if n > 1 {
		shared = new(decisionShared)
	}
	if shared != nil {
		arena.seen, arena.scratch = shared.scratch.plainSeen(), &shared.scratch
		arena.memo = in.Memo
		defer shared.scratch.done()
	}
	if !in.Checked.covers(in.Batch, in.ProfileDigest) {
		if err := checkBatch(in.Batch, in.ProfileDigest, &arena); err != nil {
			return Decisions{}, err
		}
	} else if in.Checked.plainIDs {
		// The same bytes as the sealed copy's, found plain when sealed.
		arena.plain(in.Batch.Batch.BatchDigest)
		arena.plain(in.Batch.Batch.BatchID)
		arena.plain(in.Batch.PublishedBatchDigest)
	}
	in.Batch = pairVerdicts(in.Batch)
	if in.Policy.Policy == nil {
		return Decisions{}, reject("MALFORMED_AUTHORITY_SNAPSHOT", "/policy")
	}
	arena.plain(in.Policy.Policy.digest)
	if in.EffectSequence < 1 {
		return Decisions{}, reject("MALFORMED_COMMAND", "/effect_sequence")
	}
	for i, s := range in.Signals {
		if s.Kind == KindGate {
			return Decisions{}, &Rejection{Code: "MALFORMED_COMMAND", Path: fmt.Sprintf("/signals/%d", i), Expected: "non-gate signal"}
		}
		if err := validSignal(s); err != nil {
			return Decisions{}, &Rejection{Code: "MALFORMED_COMMAND", Path: fmt.Sprintf("/signals/%d", i), Actual: err.Error()}
		}
	}
	m := in.Machine
	switch m.State {
	case "":
		m = mrp.New(mrp.Budgets{})
	case mrp.Hold, mrp.Options, mrp.Test, mrp.Decide, mrp.Failsafe, mrp.Exit, mrp.Escalate:
	default:
		return Decisions{}, &Rejection{Code: "INVALID_CONTROL_STATE", Path: "/machine/state", Actual: scalar(string(m.State))}
	}
	before := len(m.Journey)
	// The runtime cannot trust itself without operator key material or
	// once its watchdog fired: enter Degraded Safe Mode, visibly, until a
	// person leaves it.
	cause := ""
	if len(in.Policy.Keyring) == 0 {
		cause = mrp.SafeModeKeys
	}
	for _, s := range in.Signals {
		if s.Kind == KindWatchdog {
			cause = mrp.SafeModeWatchdog
		}
	}
	if cause != "" && !m.SafeMode {
		if next, err := mrp.Step(m, mrp.Event{Trigger: mrp.EnterSafeMode, Actor: mrp.Actor{ID: "authority", Kind: mrp.ActorSystem, Role: "policy_evaluator"}, Cause: cause}); err == nil {
			m = next
		}
	}
	seq := in.EffectSequence
	out := Decisions{Outcomes: []Outcome{}}
	fhr := mrp.FHR{Turn: in.Turn, Scorecard: in.ScorecardDigest, Prev: in.PrevFHR, Signals: []mrp.SignalRecord{}, Resolutions: []mrp.ResolutionRecord{}, Tickets: []mrp.TicketView{}}
	var recs *decisionRecords // a batch of one proposal's, else each its own
	if n := len(in.Batch.Proposals); n == 1 {
		// One allocation for the records of a batch of one: each list is
		// cut from its array with the array's capacity, so one that
		// outgrows it is copied out as an append would copy it.
		r := single
		recs = &r.d
		out.Outcomes, fhr.Signals, fhr.Resolutions, fhr.Tickets = r.o[:0:1], r.s[:0:len(r.s)], r.r[:0:1], r.t[:0:1]
	} else if n > 1 {
		out.Outcomes, fhr.Resolutions, fhr.Tickets = make([]Outcome, 0, n), make([]mrp.ResolutionRecord, 0, n), make([]mrp.TicketView, 0, n)
	}
	for i := range in.Batch.Proposals {
		// Each outcome is decided where it is kept: no copy of it.
		out.Outcomes = out.Outcomes[:i+1]
		o := &out.Outcomes[i]
		decideOne(o, &in, i, &in.Batch.Proposals[i], &m, seq, &arena, recs)
		if o.Intent != nil {
			seq++
		}
		for _, s := range o.Resolution.Signals {
			fhr.Signals = append(fhr.Signals, mrp.SignalRecord{Ticket: o.Ticket.TicketID, Tier: s.Tier, Kind: s.Kind, Source: s.Source, Decision: s.Decision.String(), Rule: s.Reason.Rule})
		}
		fhr.Resolutions = append(fhr.Resolutions, mrp.ResolutionRecord{Ticket: o.Ticket.TicketID, HighestTier: o.Resolution.HighestTier, Decision: o.Resolution.Decision.String(), Move: o.Resolution.Move, Contestable: o.Resolution.Contestable, Options: nonNil(o.Resolution.Options), Ties: len(o.Resolution.Ties), Outcome: o.Kind})
		if o.Ticket.TicketID != "" {
			fhr.Tickets = append(fhr.Tickets, o.Ticket.Reduced())
		}
	}
	out.Event = EventNoEffects
	for k := range out.Outcomes {
		if o := &out.Outcomes[k]; o.Kind != OutcomeRejected && o.Kind != OutcomeIntent {
			// Someone or something is still owed (an approval, a choice, a
			// person after escalation, a test, a clarification): the run
			// waits rather than moving on to completion.
			out.Event = EventApprovalRequired
		}
	}
	for k := range out.Outcomes {
		if out.Outcomes[k].Kind == OutcomeIntent {
			out.Event = EventEffectAuthorized
		}
	}
	fhr.Budgets, fhr.State, fhr.SafeMode = m.Budgets, m.State, m.SafeMode
	fhr.Transitions = transitionsOf(m.Journey, before, single)
	var sealed mrp.FHR
	var err error
	// The FHR's digest is cut from the decision's strings; it is the last
	// of them, so an arena without room for it gets a buffer of its size
	// alone rather than a chunk nothing else will use.
	arena.roomFor(fhrDigestLen, fhrDigestLen)
	if in.FHRTo != nil {
		var canon []byte
		var ok bool
		if sealed, canon, ok, err = fhr.SealAppendIn(in.FHRTo, &arena.sb); ok {
			out.FHRCanonical = canon
		}
	} else {
		sealed, err = fhr.SealIn(&arena.sb)
	}

	if err != nil {
		return Decisions{}, &Rejection{Code: "CANONICALIZATION_VIOLATION", Path: "/fhr", Actual: err.Error()}
	}
	out.FHR, out.Machine = sealed, m
	return out, nil
}

// transitionsOf returns the FHR's transitions, the entries of journey
// from before on, as a list of their own: in a batch of one (single set)
// the journey's array itself when it is the records' journey room (the
// decision's step was the journey's first entry; neither list is written
// again), else a copy in that room while it holds one entry; otherwise a
// new list. It is never nil.
func transitionsOf(journey []mrp.Entry, before int, single *singleRecords) []mrp.Entry {
	made := journey[before:]
	if single == nil {
		return append([]mrp.Entry{}, made...)
	}
	room := single.d.journey[:]
	if len(made) > 0 && &made[0] == &room[0] {
		return made[:len(made):len(made)]
	}
	if len(journey) > 0 && &journey[0] == &room[0] {
		// The room holds the journey's first entry, before this decision's.
		return append([]mrp.Entry{}, made...)
	}
	return append(room[:0], made...)
}

// fhrDigestLen is the length of an FHR's digest, "sha256:" and 64 hex
// digits.
const fhrDigestLen = 7 + 64

// intentRecords holds what decideOne returns with an intent: the intent,
// room for its preconditions, the authority snapshot it was authorized
// under and its control event.
type intentRecords struct {
	intent protocol.EffectIntent
	pre    [4]string
	snap   AuthoritySnapshot
	event  ControlEvent
}

// decisionRecords holds the lists and records decideOne returns for one
// proposal: its gates' evaluation (whose signals, in order already, are
// also its resolution's) and, with an intent, the intent's records.
type decisionRecords struct {
	ev     evalRecords
	intent intentRecords
	// effects is room for the ticket's sorted side effects, view for
	// the ticket's reduced view the MRP step is given (mrp.Step leaks
	// its event, so a view on the stack would be moved to the heap).
	effects [4]SideEffect
	view    mrp.TicketView
	// journey is room for the machine's journey when the step is the
	// first entry (mrp.StepIn). In a batch of one the FHR's transitions
	// are then the journey's array; otherwise journey is their room.
	journey [1]mrp.Entry
}

// singleRecords holds what Authorize returns for a batch of one proposal:
// the outcome, its FHR resolution and ticket, room for its signals and
// the decision's own records (the transitions' room among them).
type singleRecords struct {
	d      decisionRecords
	o      [1]Outcome
	r      [1]mrp.ResolutionRecord
	t      [1]mrp.TicketView
	s      [2]mrp.SignalRecord
	shared decisionShared
}

// decisionShared is what every preimage of one Authorize call shares:
// the buffer they are written in and, with it (pooled, outside the
// decision's records), the strings found plain.
type decisionShared struct {
	scratch preimageScratch
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkBatch checks a batch's self-consistency: pairing, identity and the
// profile-bound digests. Hashes are not authentication; this only proves
// the batch is the one R published under that profile.
func checkBatch(b PublishedBatch, profile string, a *strArena) *Rejection {
	if r := checkBatchIdentity(b, profile, a); r != nil {
		return r
	}
	d, err := publishedBatchSum(b, a)
	if err != nil {
		r := reject("CANONICALIZATION_VIOLATION", "/published_batch")
		r.Actual = err.Error()
		return r
	}
	if b.PublishedBatchDigest != string(d[:]) {
		return reject("PUBLISHED_BATCH_DIGEST_MISMATCH", "/published_batch/published_batch_digest")
	}
	// Equal to the digest just computed: plain.
	a.plain(b.PublishedBatchDigest)
	return nil
}

// checkBatchIdentity is checkBatch short of the published-batch digest.
func checkBatchIdentity(b PublishedBatch, profile string, a *strArena) *Rejection {
	if r := checkBatchShape(b); r != nil {
		return r
	}
	sum, err := stableBatchSum(profile, b.Batch.LogicalTime, b.Batch.LowWatermark, b.Batch.ProposalIDs, b.Batch.EligibilityVerdictIDs, b.Batch.DataflowVersion, a)
	if err != nil {
		// The digest is the "invalid:" form, compared as before.
		want := invalidDigest(err)
		if id := b.Batch.BatchID; b.Batch.BatchDigest != want || !strings.HasPrefix(id, "batch:") || id[len("batch:"):] != hexOf(want) {
			return reject("BATCH_DIGEST_MISMATCH", "/published_batch/batch/batch_digest")
		}
		return nil
	}
	// Compared as bytes: the digest's string is never needed.
	if id := b.Batch.BatchID; b.Batch.BatchDigest != string(sum[:]) || !strings.HasPrefix(id, "batch:") || id[len("batch:"):] != string(sum[len("sha256:"):]) {
		return reject("BATCH_DIGEST_MISMATCH", "/published_batch/batch/batch_digest")
	}
	// The digest is the one just computed and the id "batch:" and its hex
	// digits: both plain, and written next in the published batch.
	a.plain(b.Batch.BatchDigest)
	a.plain(b.Batch.BatchID)
	return nil
}

// checkBatchShape is checkBatchIdentity short of the stable-batch digest:
// the pairing of proposals and verdicts, and each proposal's form.
func checkBatchShape(b PublishedBatch) *Rejection {
	if len(b.Proposals) != len(b.Verdicts) || len(b.Proposals) != len(b.Batch.ProposalIDs) || len(b.Verdicts) != len(b.Batch.EligibilityVerdictIDs) {
		return reject("BATCH_IDENTITY_MISMATCH", "/published_batch")
	}
	if len(b.Proposals) <= smallBatch {
		return checkBatchShapeSmall(b)
	}
	return checkBatchShapeMaps(b)
}

// smallBatch is the largest batch checkBatchShape pairs by scanning its
// lists instead of through sets: up to here the scans compare fewer
// strings than hashing each id takes (at most smallBatch² / 2 per list).
const smallBatch = 16

// checkBatchShapeMaps is checkBatchShape for a batch of any size, its
// identities paired through sets.
func checkBatchShapeMaps(b PublishedBatch) *Rejection {
	// R publishes the proposals and the verdicts each in its own canonical
	// order, and the batch header lists both id sets sorted; none of these
	// orders pairs a proposal with its verdict. Pairing is by proposal id:
	// a total bijection, every id in the header's sets.
	ids, vids := map[string]bool{}, map[string]bool{}
	for _, id := range b.Batch.ProposalIDs {
		if ids[id] {
			return reject("BATCH_IDENTITY_MISMATCH", "/published_batch/batch/proposal_ids")
		}
		ids[id] = true
	}
	for _, id := range b.Batch.EligibilityVerdictIDs {
		if vids[id] {
			return reject("BATCH_IDENTITY_MISMATCH", "/published_batch/batch/eligibility_verdict_ids")
		}
		vids[id] = true
	}
	verdictOf := map[string]bool{}
	for j, v := range b.Verdicts {
		if !vids[v.VerdictID] || verdictOf[v.ProposalID] {
			return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/eligibility_verdicts/%d", j))
		}
		verdictOf[v.ProposalID] = true
	}
	seen := map[string]bool{}
	for i, p := range b.Proposals {
		if !ids[p.ProposalID] || !verdictOf[p.ProposalID] {
			return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/effect_proposals/%d", i))
		}
		if seen[p.ProposalID] {
			return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/effect_proposals/%d/proposal_id", i))
		}
		seen[p.ProposalID] = true
		if r := checkProposalForm(p, i); r != nil {
			return r
		}
	}
	return nil
}

// checkProposalForm is checkBatchShape's check of one proposal's form.
func checkProposalForm(p protocol.EffectProposal, i int) *Rejection {
	if !ValidID(p.ProposalID) || !ValidID(p.EffectType) || !ValidID(p.CorrelationID) || !cjson.ValidDigest(p.ActionDigest) || !cjson.ValidDigest(p.DestinationDigest) {
		return reject("MALFORMED_PROPOSAL", fmt.Sprintf("/published_batch/effect_proposals/%d", i))
	}
	if p.Versions.Canonicalization != Canonicalization {
		return reject("UNSUPPORTED_CANONICALIZATION", fmt.Sprintf("/published_batch/effect_proposals/%d/versions/canonicalization", i))
	}
	return nil
}

// checkBatchShapeSmall is checkBatchShapeMaps for a batch of at most
// smallBatch proposals (the lengths already checked equal): each set
// membership is a scan of the list the set would hold, in the same order
// of checks, so the same batch gets the same rejection
// (TestCheckBatchShapeSmallIsMaps).
func checkBatchShapeSmall(b PublishedBatch) *Rejection {
	pids, vids := b.Batch.ProposalIDs, b.Batch.EligibilityVerdictIDs
	for i, id := range pids {
		if slices.Contains(pids[:i], id) {
			return reject("BATCH_IDENTITY_MISMATCH", "/published_batch/batch/proposal_ids")
		}
	}
	for i, id := range vids {
		if slices.Contains(vids[:i], id) {
			return reject("BATCH_IDENTITY_MISMATCH", "/published_batch/batch/eligibility_verdict_ids")
		}
	}
	for j, v := range b.Verdicts {
		if !slices.Contains(vids, v.VerdictID) || verdictFor(b.Verdicts[:j], v.ProposalID) {
			return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/eligibility_verdicts/%d", j))
		}
	}
	for i, p := range b.Proposals {
		if !slices.Contains(pids, p.ProposalID) || !verdictFor(b.Verdicts, p.ProposalID) {
			return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/effect_proposals/%d", i))
		}
		for _, q := range b.Proposals[:i] {
			if q.ProposalID == p.ProposalID {
				return reject("BATCH_IDENTITY_MISMATCH", fmt.Sprintf("/published_batch/effect_proposals/%d/proposal_id", i))
			}
		}
		if r := checkProposalForm(p, i); r != nil {
			return r
		}
	}
	return nil
}

// verdictFor reports whether one of vs is for the proposal id.
func verdictFor(vs []protocol.EligibilityVerdict, id string) bool {
	for k := range vs {
		if vs[k].ProposalID == id {
			return true
		}
	}
	return false
}

// pairVerdicts returns a copy of a checked batch whose verdicts are
// reordered to stand at their proposals' positions, the order the rest of
// Authorize reads them in. The digests were checked on the batch as
// published.
func pairVerdicts(b PublishedBatch) PublishedBatch {
	inOrder := true
	for i, p := range b.Proposals {
		inOrder = inOrder && b.Verdicts[i].ProposalID == p.ProposalID
	}
	if inOrder {
		// Already at their proposals' positions (always so for one
		// proposal): the slice is only read from here on, so it is kept.
		return b
	}
	byProposal := make(map[string]protocol.EligibilityVerdict, len(b.Verdicts))
	for _, v := range b.Verdicts {
		byProposal[v.ProposalID] = v
	}
	paired := make([]protocol.EligibilityVerdict, len(b.Proposals))
	for i, p := range b.Proposals {
		paired[i] = byProposal[p.ProposalID]
	}
	b.Verdicts = paired
	return b
}

// PublishedBatchDigest is the outer digest of a published batch.
func PublishedBatchDigest(b PublishedBatch) string {
	d, err := publishedBatchDigest(b)
	if err != nil {
		return invalidDigest(err)
	}
	return d
}

// ticketID derives a proposal's ticket id within its batch.
func ticketID(a *strArena, proposalID, batchID string) string {
	w := a.writer(256)
	w.ticketIDPreimage(proposalID, batchID)
	id := w.mustDigestAsIn(a, "ticket:")
	// "ticket:" and hex digits (or the invalid form's code): plain, and
	// written again in the preview's and the ticket's preimages.
	a.plain(id)
	return id
}

func (w *canonWriter) ticketIDPreimage(proposalID, batchID string) {
	w.lit(`{"batch_id":`)
	w.val(batchID)
	w.lit(`,"kind":"ActionTicketIDPreimage","proposal_id":`)
	w.val(proposalID)
	w.lit(`}`)
}

func findAction(as []ActionSpec, id string) (ActionSpec, bool) {
	for _, a := range as {
		if a.ProposalID == id {
			return a, true
		}
	}
	return ActionSpec{}, false
}

// decideOne decides one proposal and steps the machine for it. The
// outcome is written in place, in o (the decision's records), rather than
// built on the stack and copied there.
func decideOne(o *Outcome, in *Input, i int, p *protocol.EffectProposal, m *mrp.Machine, seq int64, a *strArena, rec *decisionRecords) {
	*o = Outcome{ProposalID: p.ProposalID, Options: []string{}, Audit: []string{}}
	// ptr is the proposal's pointer, built only for a rejection.
	ptr := func() string { return "/published_batch/effect_proposals/" + strconv.Itoa(i) }
	reject := func(code, path, held string) {
		o.Kind, o.Rejection = OutcomeRejected, &Rejection{Code: code, Path: path, Actual: held}
		if o.Ticket.TicketID != "" {
			// Sealed by this decision: only its status and digest change.
			if u, err := o.Ticket.apply(TicketRefuse); err == nil {
				o.Ticket = o.Ticket.applied(a, u)
			}
		}
		o.MRPState, o.Refusal = m.State, m.Refusal
	}
	switch in.Batch.Verdicts[i].Status {
	case "eligible":
	case "ineligible":
		reject("PROPOSAL_INELIGIBLE", fmt.Sprintf("/published_batch/eligibility_verdicts/%d/status", i), "")
		return
	case "conflicted":
		reject("PROPOSAL_CONFLICTED", fmt.Sprintf("/published_batch/eligibility_verdicts/%d/status", i), "")
		return
	default:
		reject("MALFORMED_VERDICT", fmt.Sprintf("/published_batch/eligibility_verdicts/%d/status", i), "")
		return
	}
	manifest, ok := in.Policy.Manifests[p.EffectType]
	if !ok {
		reject("UNKNOWN_EFFECT_TYPE", ptr()+"/effect_type", p.EffectType)
		return
	}
	spec, _ := findAction(in.Actions, p.ProposalID)
	declared := p.DeclaredRiskHint
	if declared == "unknown" {
		declared = ""
	}
	pre := manifest.DeclaredRisk
	if pre == "" {
		pre = RiskHighRiskExternal
	}
	var effects []SideEffect
	if rec != nil {
		effects = rec.effects[:]
	}
	t, err := buildTicketIn(TicketSpec{
		TicketID: ticketID(a, p.ProposalID, in.Batch.Batch.BatchID),
		Action:   p.EffectType, Destination: spec.Destination, Scope: spec.Scope, Parameters: spec.Parameters,
		SideEffects: manifest.SideEffects, DeclaredRisk: declared, AssessedRisk: pre,
		RequiredParameters: manifest.RequiredParameters,
	}, effects)
	if err != nil {
		reject("MALFORMED_TICKET", "/actions", err.Error())
		return
	}
	// Capability: the first presented operator chain that verifies now and
	// covers the ticket. Nothing else can supply one.
	var cap Capability
	var haveCap bool
	if len(in.Verified) > 0 {
		// A verified chain is judged as a presented one would be — live
		// now, covering the ticket, audited when not — so handing over
		// chains verified once gives the same outcome, byte for byte, as
		// presenting them to be verified again.
		for _, v := range in.Verified {
			var err error
			if !in.Policy.Keyring.hasFingerprint(v.keyring) {
				err = &CapabilityError{"UNTRUSTED_KEY", v.c.ID, "verified under another keyring"}
			} else if err = v.liveAt(in.Now); err == nil {
				err = v.c.Covers(t)
			}
			if err != nil {
				o.Audit = append(o.Audit, err.Error())
				continue
			}
			cap, haveCap = v.c, true
			break
		}
	}
	for _, chain := range in.Capabilities {
		if haveCap {
			break
		}
		c, err := in.Policy.Keyring.VerifyChain(chain, in.Now)
		if err == nil {
			err = c.Covers(t)
		}
		if err != nil {
			o.Audit = append(o.Audit, err.Error())
			continue
		}
		cap, haveCap = c, true
	}
	// The capability and mode facts stay on the stack (Evaluate and
	// Delegates copy the arguments of the facts they are given and keep
	// nothing of them): they are stored into an array by index, never
	// appended, and joinFacts copies them when a choice or a resumption
	// adds facts of its own.
	var base [2]logic.Fact
	nb := 0
	if haveCap {
		base[nb] = CapabilityFact(t.TicketID, cap.ID)
		nb++
	}
	if m.SafeMode {
		base[nb] = ModeFact("degraded_safe")
		nb++
	}
	var more []logic.Fact
	resumedBy := ""
	if len(in.Choices) > 0 || len(in.Resumed) > 0 {
		more, resumedBy = deliberationFacts(o, in, p, m, t, base[:nb])
	}
	if rec == nil {
		rec = new(decisionRecords)
	}
	// The ticket's parameter names, sorted once for the gates, the action
	// digest and the preview (on the stack for up to sixteen).
	var keysArr [16]string
	keys := appendSortedKeys(keysArr[:0], t.Parameters)
	// The reasons' fact strings are cut from the decision's arena.
	ev := in.Policy.Policy.evaluateIn(&rec.ev, a, t, keys, joinFacts(base[:nb], more)...)
	risk := ev.AssessedRisk
	declaredRank, _ := riskRank(manifest.DeclaredRisk)
	if assessedRank, _ := riskRank(risk); declaredRank > assessedRank {
		risk = manifest.DeclaredRisk
	}
	if risk == "" {
		risk = RiskHighRiskExternal // unassessed is treated as the most consequential
	}
	t = t.withRisk(risk, manifest.RequiredParameters).sealKeyed(a, keys)
	o.Ticket, o.Evaluation = t, ev
	// The gates' signals are handed over as they are unless more are
	// added. Neither list is written again, so the resolution's sorted
	// list is the one handed over when that is in order already (one
	// signal always is): Evaluation.Signals and Resolution.Signals then
	// share their array.
	signals := ev.Signals
	if len(in.Signals) > 0 || t.Completeness != Complete {
		signals = append(append([]Signal(nil), ev.Signals...), in.Signals...)
	}
	if t.Completeness != Complete {
		signals = append(signals, Signal{Tier: 3, Kind: KindClarification, Source: "ticket", Reason: Reason{Rule: "ticket-incomplete", Facts: t.MissingFields, Absent: []string{}, Detail: "the action is not fully specified"}})
	}
	res, err := resolveShared(signals)
	if err != nil {
		reject("MALFORMED_COMMAND", "/signals", err.Error())
		return
	}
	// A person who resumed deliberation on a proposal H escalated has
	// answered the escalation: a tier-1 ESCALATE becomes ASK_FIRST, so the
	// action still waits for an exact-hash approval (decision 0612).
	if resumedBy != "" && res.Decision == Escalate && res.Move == mrp.MoveEscalate {
		res.Decision, res.Move = AskFirst, mrp.MoveAskFirst
		o.Audit = append(o.Audit, fmt.Sprintf("escalation answered by %q's RESUME: the action asks first", resumedBy))
	}
	o.Resolution = res
	if res.Decision == ShapeDecision || res.Decision == AskFirst {
		if shaped, err := Shape(t, res.Constraints...); err == nil {
			t = shaped
		} else {
			res.Decision, res.Move = Refuse, mrp.MoveRefuse
			o.Resolution = res
		}
		// The shaped action must still be covered (a narrowed scope may
		// fall outside the capability).
		if haveCap {
			if err := cap.Covers(t); err != nil {
				o.Audit = append(o.Audit, "shaped action: "+err.Error())
				haveCap = false
			}
		}
	}
	// Both events as Advance applies them (one it refuses changes
	// nothing), the ticket sealed once: t is this decision's own. A
	// ticket neither event names is not copied.
	if shown, confirmed := slices.Contains(in.PreviewsShown, t.PreviewDigest), slices.Contains(in.Confirmations, t.ActionDigest); shown || confirmed {
		u := t
		if shown {
			u, _ = u.apply(TicketShowPreview)
		}
		if confirmed && u.PreviewShown {
			u, _ = u.apply(TicketConfirm)
		}
		t = t.applied(a, u)
	}
	o.Ticket = t
	if (res.Decision == Allow || res.Decision == ShapeDecision || res.Decision == AskFirst) && !haveCap {
		// Authority is external: no operator capability, no effect, whatever
		// the policy says.
		res.Decision, res.Move = Refuse, mrp.MoveRefuse
		o.Resolution = res
		step(m, mrp.Tier1Refuse, nil, "no operator capability covers the action")
		reject("CAPABILITY_MISSING", ptr(), "no operator-signed capability covers this action")
		return
	}
	snap := AuthoritySnapshot{
		Kind: "HAuthoritySnapshot", AuthorityVersion: in.Policy.Policy.Version, ProposalID: p.ProposalID,
		EffectType: p.EffectType, Capability: cap.ID, Decision: "allow", AssessedRisk: risk,
		AdapterVersion: p.Versions.Tool, DestinationDigest: p.DestinationDigest,
		ValidFrom: cap.NotBefore, ValidUntil: cap.Expiry,
	}
	snap.AuthorityDigest = snap.computeDigest(a)
	needApproval := res.Decision == AskFirst || risk == RiskHighRiskExternal
	// A valid exact-hash grant satisfies ASK_FIRST and stands for the
	// person having seen the preview and confirmed the action.
	// Who must approve: the approver the gates name for this ticket, or
	// the approval policy's ("" when the gates name several).
	approver := in.Policy.Approver
	if q := ev.asked; q != nil && q.approvers != nil {
		approver = ""
	} else if q != nil && q.approver != "" {
		approver = q.approver
	}
	var grant *PresentedApproval
	if needApproval && res.Decision <= AskFirst && res.Move <= mrp.MoveAskFirst && res.Move != mrp.MoveOptions && len(in.Approvals) > 0 {
		grant, t = grantFor(o, a, in, p, snap, t, spec, approver)
	}
	trigger := mrp.TriggerFor(res.Move, res.HighestTier == 0 && res.Move == mrp.MoveRefuse)
	if grant != nil && res.Move == mrp.MoveAskFirst {
		trigger = mrp.Tier1Allow
	}
	rec.view = t.Reduced()
	cause := a.cat(t.TicketID, ": ", res.Decision.String(), "/", res.Move.String())
	var room []mrp.Entry
	if len(m.Journey) == 0 {
		room = rec.journey[:]
	}
	stepIn(m, room, trigger, &rec.view, cause, res.Options...)
	o.MRPState, o.Refusal = m.State, m.Refusal
	switch {
	case res.Decision == Refuse || res.Move >= mrp.MoveRefuse:
		why := "refused"
		if len(res.Signals) > 0 {
			why = res.Signals[len(res.Signals)-1].Reason.Rule
			for _, s := range res.Signals {
				if s.Decision == Refuse || s.Tier == 0 {
					why = s.Source + ":" + s.Reason.Rule
					break
				}
			}
		}
		reject("AUTHORITY_DENIED", ptr(), why)
		return
	case res.Move == mrp.MoveEscalate:
		o.Kind, o.Held = OutcomeEscalated, "escalated to a person"
		return
	case res.Contestable:
		o.Kind, o.Options = OutcomeOptions, res.Options
		return
	case needApproval && grant == nil:
		if res.Move != mrp.MoveProceed && res.Move != mrp.MoveConstrain && res.Move != mrp.MoveAskFirst {
			o.Kind, o.Held = OutcomeHeld, "held: "+res.Move.String()
			return
		}
		if t.Completeness != Complete {
			o.Kind, o.Held = OutcomeHeld, "held: ticket incomplete"
			return
		}
		// How many people must approve, and who, is the gates' to say, in
		// the evaluation that decided the action goes to a person (a policy
		// that failed to evaluate refused it above).
		if q := ev.asked; q != nil {
			if q.approvers != nil {
				o.Kind, o.Held = OutcomeHeld, "held: the gate policy names more than one approver for this action: "+strings.Join(q.approvers, ", ")
				return
			}
			if q.quorum > 1 {
				o.Quorum, o.QuorumReason = q.quorum, q.quorumWhy
			}
			o.ApproverReason = q.approverWhy
		}
		requestApproval(o, a, in, i, p, t, snap, spec, seq, risk, approver)
		return
	}
	if !m.Admits(rec.view) {
		o.Kind = OutcomeHeld
		ok, why := rec.view.Decidable()
		switch {
		case m.SafeMode && !rec.view.VerificationOnly:
			o.Held = "held: degraded safe mode runs verification-class actions only"
		case !ok:
			o.Held = "held: " + why
		default:
			o.Held = "held: MRP is in " + string(m.State)
		}
		return
	}
	// The intent's action digest is the proposal's; a shaped ticket is a
	// different action, bound by the ticket's own action digest.
	prop := p
	if len(t.Constraints) > 0 {
		shaped := *p
		shaped.ActionDigest = t.ActionDigest
		prop = &shaped
	}
	var approvalDigest *string
	event := EventEffectAuthorized
	if grant != nil {
		d := grant.Approval.ApprovalDigest
		approvalDigest, event = &d, EventApprovalGranted
		o.Approval = grant
	}
	r := &rec.intent
	r.snap = snap
	r.intent = buildIntent(a, r.pre[:0:len(r.pre)], prop, &in.Batch.Batch, snap, seq, approvalDigest)
	intent := &r.intent
	o.Kind, o.Event, o.Intent, o.Authority = OutcomeIntent, event, intent, &r.snap
	if grant == nil {
		if in.NoControlEvents {
			return
		}
		w := a.writer(1024)
		w.policyVerdictPreimage(in.ProfileDigest, in.Batch.Verdicts[i], snap)
		verdict := w.mustDigestIn(a)
		// In authorizedPayloadNames' order; all but the policy and the
		// published batch digests are this package's own.
		vals := [...]string{snap.AuthorityDigest, capabilityEvidenceDigest(a, prop, &snap), inputDigest(a, in, i, seq),
			intent.IntentID, in.Policy.Policy.Digest, verdict, in.Batch.PublishedBatchDigest}
		const ours = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5
		r.event = controlEventFrom(a, event, authorizedPayloadNames, vals[:], ours)
		o.ControlEvent = &r.event
		return
	}
	if !in.NoControlEvents {
		grantedEvent(o, a, in, i, seq, &snap, intent, grant, event)
	}
}

// deliberationFacts returns the facts the proposal's choices and
// resumptions add, and who resumed it, auditing in o those that may not.
// Apart from decideOne: most decisions have neither.
func deliberationFacts(o *Outcome, in *Input, p *protocol.EffectProposal, m *mrp.Machine, t Ticket, base []logic.Fact) (more []logic.Fact, resumedBy string) {
	for _, c := range in.Choices {
		if c.ProposalID != p.ProposalID {
			continue
		}
		capName, _ := mrp.RequiredCapability(mrp.ChooseOption)
		person := c.Actor.Kind == mrp.ActorHuman && slices.Contains(mrp.HumanRoles, c.Actor.Role) && slices.Contains(c.Actor.Capabilities, capName)
		// The controller (a pure, replayable scorer, never a model) may
		// choose only where the policy itself delegates the choice for
		// this very ticket, and never in Degraded Safe Mode.
		delegated := c.Actor.Kind == mrp.ActorSystem && c.Actor.Role == ControllerRole && !m.SafeMode &&
			in.Policy.Policy.Delegates(t, joinFacts(base, more)...)
		if !ValidID(c.Option) || (!person && !delegated) {
			o.Audit = append(o.Audit, fmt.Sprintf("choice %q by %q (%s): not a person holding %s, nor a controller the policy delegates to", c.Option, c.Actor.ID, c.Actor.Kind, capName))
			continue
		}
		more = append(more, ChosenFact(t.TicketID, c.Option))
	}
	for _, r := range in.Resumed {
		if r.ProposalID != p.ProposalID {
			continue
		}
		capName, _ := mrp.RequiredCapability(mrp.Resume)
		if r.Actor.Kind != mrp.ActorHuman || !slices.Contains(mrp.HumanRoles, r.Actor.Role) || !slices.Contains(r.Actor.Capabilities, capName) {
			o.Audit = append(o.Audit, fmt.Sprintf("resumption by %q (%s): not a person holding %s", r.Actor.ID, r.Actor.Kind, capName))
			continue
		}
		more = append(more, ResumedFact(t.TicketID))
		resumedBy = r.Actor.ID
		break
	}
	return more, resumedBy
}

// grantFor returns the first of the proposal's presented approvals that
// is still valid, and the ticket it confirms (t when none), auditing in o
// those that are not. Apart from decideOne: most decisions present none.
func grantFor(o *Outcome, a *strArena, in *Input, p *protocol.EffectProposal, snap AuthoritySnapshot, t Ticket, spec ActionSpec, approver string) (*PresentedApproval, Ticket) {
	for k := range in.Approvals {
		pa := in.Approvals[k]
		if pa.Request.ProposalID != p.ProposalID {
			continue
		}
		// The request must name the approver the gates (or the approval
		// policy) name for the action now.
		if pa.Request.Actor != approver {
			o.Audit = append(o.Audit, fmt.Sprintf("approval %s: APPROVER_CHANGED: the request names %q; the policy names %q", pa.Approval.ApprovalDigest, pa.Request.Actor, approver))
			continue
		}
		want := expectedRequest(a, *p, snap, t, spec, pa.Request)
		if pa.Request != want {
			o.Audit = append(o.Audit, fmt.Sprintf("approval %s: APPROVAL_REQUEST_DRIFT: the request no longer matches the action", pa.Approval.ApprovalDigest))
			continue
		}
		if r := revalidate(a, pa.Approval, pa.Approver, want, in.Ledger, in.Now); r != nil {
			o.Audit = append(o.Audit, fmt.Sprintf("approval %s: %s at %s", pa.Approval.ApprovalDigest, r.Code, r.Path))
		} else {
			u, _ := t.apply(TicketShowPreview)
			u, _ = u.apply(TicketConfirm)
			t = t.applied(a, u)
			o.Ticket = t
			return &pa, t
		}
	}
	return nil, t
}

// requestApproval writes in o the approval request a decision that must
// ask first makes, and its control event. Apart from decideOne: most
// decisions request none.
func requestApproval(o *Outcome, a *strArena, in *Input, i int, p *protocol.EffectProposal, t Ticket, snap AuthoritySnapshot, spec ActionSpec, seq int64, risk, approver string) {
	ctx := newContext(a, in, *p, t, spec, approver)
	q := buildRequest(a, *p, snap, ctx)
	o.Kind, o.Event, o.ApprovalRequest = OutcomeApprovalRequest, EventApprovalRequired, &q
	if in.NoControlEvents {
		return
	}
	o.ControlEvent = controlEvent(a, EventApprovalRequired, inputDigest(a, in, i, seq), map[string]string{
		"action_digest": ctx.ActionDigest, "risk_classification": risk,
		"published_batch_digest": in.Batch.PublishedBatchDigest, "authority_digest": snap.AuthorityDigest,
		"approval_context_digest": ctx.ContextDigest, "approval_request_digest": q.RequestDigest,
		"policy_digest": in.Policy.Policy.Digest,
	}, requestPayloadNames)
}

// grantedEvent writes in o the control event of an intent authorized by
// an exact-hash approval. Apart from decideOne: most intents need none.
func grantedEvent(o *Outcome, a *strArena, in *Input, i int, seq int64, snap *AuthoritySnapshot, intent *protocol.EffectIntent, grant *PresentedApproval, event string) {
	approvalDigest := &grant.Approval.ApprovalDigest
	evidence := map[string]string{
		"published_batch_digest": in.Batch.PublishedBatchDigest, "authority_digest": snap.AuthorityDigest,
		"intent_id": intent.IntentID, "policy_digest": in.Policy.Policy.Digest,
		"exact_hash_approval_digest": *approvalDigest, "approval_digest": *approvalDigest,
		"approval_request_digest": grant.Request.RequestDigest, "approval_context_digest": grant.Request.ContextDigest,
	}
	o.ControlEvent = controlEvent(a, event, inputDigest(a, in, i, seq), evidence, grantedPayloadNames)
}

// The member names of the three payloads decideOne builds, command digest
// included, in canonical (sorted) order, so their preimages are written
// without collecting and sorting the map's keys each time. A list that
// does not name exactly the payload's members is not used
// (controlEventPreimage); TestPayloadNamesAreThePayloads holds each to the
// payload it belongs to.
var (
	authorizedPayloadNames = []string{"authority_digest", "capability_digest", "command_digest", "intent_id", "policy_digest", "policy_verdict", "published_batch_digest"}
	grantedPayloadNames    = []string{"approval_context_digest", "approval_digest", "approval_request_digest", "authority_digest", "command_digest", "exact_hash_approval_digest", "intent_id", "policy_digest", "published_batch_digest"}
	requestPayloadNames    = []string{"action_digest", "approval_context_digest", "approval_request_digest", "authority_digest", "command_digest", "policy_digest", "published_batch_digest", "risk_classification"}
)

// joinFacts returns base followed by more. base is returned as it is when
// there is nothing to add; otherwise its facts go into a new array with
// their arguments copied and their names as extraRel gives them, so that
// base's own arrays never reach the heap.
func joinFacts(base, more []logic.Fact) []logic.Fact {
	if len(more) == 0 {
		return base
	}
	out := make([]logic.Fact, 0, len(base)+len(more))
	for _, f := range base {
		out = append(out, logic.Fact{Rel: extraRel(f.Rel), Neg: f.Neg, Args: slices.Clone(f.Args)})
	}
	return append(out, more...)
}

// step advances the machine with a runtime trigger; a trigger the machine
// does not admit in its state is recorded there as refused and changes
// nothing, which is the conservative outcome.
func step(m *mrp.Machine, t mrp.Trigger, v *mrp.TicketView, cause string, options ...string) {
	stepIn(m, nil, t, v, cause, options...)
}

// stepIn is step with room for the journey (mrp.StepIn).
func stepIn(m *mrp.Machine, room []mrp.Entry, t mrp.Trigger, v *mrp.TicketView, cause string, options ...string) {
	next, _ := mrp.StepIn(*m, mrp.Event{Trigger: t, Actor: mrp.Actor{ID: "authority", Kind: mrp.ActorSystem, Role: "policy_evaluator"}, Ticket: v, Cause: cause, Options: options}, room)
	*m = next
}

// newContext builds the approval context a new request binds, naming
// approver, its digest written through a's writer.
func newContext(a *strArena, in *Input, p protocol.EffectProposal, t Ticket, spec ActionSpec, approver string) ApprovalContext {
	b := Binding{
		RunID: p.CorrelationID, WorkflowVersion: p.Versions.Workflow, ActionDigest: p.ActionDigest,
		ArtifactDigest: spec.ArtifactDigest, DestinationDigest: p.DestinationDigest,
		Visibility: spec.Visibility, Scope: t.Scope, Actor: approver,
		ExpiresAt: in.Now + in.Policy.ApprovalTTL, Nonce: spec.Nonce, Rationale: spec.Rationale,
	}
	if len(t.Constraints) > 0 {
		b.ActionDigest = t.ActionDigest
	}
	if b.ArtifactDigest == "" {
		b.ArtifactDigest = t.ActionDigest
	}
	if b.Visibility == "" {
		b.Visibility = "visibility:external"
	}
	if b.Rationale == "" {
		b.Rationale = "rationale:policy"
	}
	if b.Nonce == "" {
		b.Nonce = approvalNonce(p.ProposalID, in.Batch.Batch.BatchID, in.Now, t.TicketDigest)
	}
	return newApprovalContext(a, in.Policy.ApprovalPolicyVersion, in.Policy.ApproverScope, in.Now, b)
}

// approvalNonce is the nonce of an approval request H makes for a
// proposal of a batch at a time, over the ticket's digest: "nonce:" and
// the hex digits of the digest of its preimage, written as a template
// (TestTemplatesAreCjson). A string the template refuses leaves the nonce
// to the encoder, whose "invalid:" form it has always been.
func approvalNonce(proposalID, batchID string, requestedAt int64, ticketDigest string) string {
	w := pooledWriter(384)
	w.noncePreimage(proposalID, batchID, requestedAt, ticketDigest)
	if w.err != nil {
		w.release()
		return "nonce:" + hexOf(mustDigest(map[string]any{"kind": "ApprovalNoncePreimage", "proposal_id": proposalID, "batch_id": batchID, "requested_at": requestedAt, "ticket_digest": ticketDigest}))
	}
	return w.mustDigestAs("nonce:")
}

// noncePreimage writes what an approval nonce binds.
func (w *canonWriter) noncePreimage(proposalID, batchID string, requestedAt int64, ticketDigest string) {
	w.lit(`{"batch_id":`)
	w.val(batchID)
	w.lit(`,"kind":"ApprovalNoncePreimage","proposal_id":`)
	w.val(proposalID)
	w.lit(`,"requested_at":`)
	w.int(requestedAt)
	w.lit(`,"ticket_digest":`)
	w.val(ticketDigest)
	w.lit(`}`)
}

// expectedRequest is the request the current state would make, keeping
// the presented request's own time, nonce, rationale and approver: every
// field derived from the proposal, the ticket and the authority must be
// what it is now. Its digests are written through a's writer.
func expectedRequest(a *strArena, p protocol.EffectProposal, s AuthoritySnapshot, t Ticket, spec ActionSpec, presented ApprovalRequest) ApprovalRequest {
	b := presented.Binding()
	b.RunID, b.WorkflowVersion, b.DestinationDigest = p.CorrelationID, p.Versions.Workflow, p.DestinationDigest
	b.ActionDigest = p.ActionDigest
	if len(t.Constraints) > 0 {
		b.ActionDigest = t.ActionDigest
	}
	b.Scope = t.Scope
	if spec.ArtifactDigest != "" {
		b.ArtifactDigest = spec.ArtifactDigest
	}
	if spec.Visibility != "" {
		b.Visibility = spec.Visibility
	}
	c := newApprovalContext(a, presented.PolicyVersion, presented.ApproverScope, presented.RequestedAt, b)
	return buildRequest(a, p, s, c)
}

func inputDigest(a *strArena, in *Input, i int, seq int64) string {
	w := a.writer(512)
	w.inputPreimage(seq, in.Now, in.Policy.Policy.Digest, int64(i), in.Batch.PublishedBatchDigest, in.ProfileDigest)
	return w.mustDigestIn(a)
}

func (w *canonWriter) inputPreimage(seq, now int64, policy string, index int64, batch, profile string) {
	if 0 <= seq && seq < int64(len(inputMidstates)) {
		w.from = inputMidstates[seq]
	}
	w.lit(`{"contract_version":"` + ContractVersion + `","effect_sequence":`)
	w.int(seq)
	w.lit(`,"kind":"AuthorizeInputPreimage","now":`)
	w.int(now)
	w.lit(`,"policy_digest":`)
	w.val(policy)
	w.lit(`,"proposal_index":`)
	w.int(index)
	w.lit(`,"published_batch_digest":`)
	w.val(batch)
	w.lit(`,"r_profile_digest":`)
	w.val(profile)
	w.lit(`}`)
}

func controlEvent(a *strArena, event, commandDigest string, evidence map[string]string, names []string) *ControlEvent {
	auth := eventAuthority[event]
	// evidence is always a map its caller built for this event alone; it
	// becomes the payload.
	payload := evidence
	payload["command_digest"] = commandDigest
	return &ControlEvent{Type: event, ActorRole: auth[0], Capability: auth[1], EventID: controlEventID(a, event, auth, payload, names), Payload: payload}
}

// controlEventFrom is controlEvent for a payload given as its member
// names in sorted order (package constants, held to the payloads by
// TestPayloadNamesAreThePayloads) and their values, command digest
// included: the preimage is written from the values without looking each
// up in the map, which is built for the event. Bit k of ours marks
// vals[k] as a digest or id this package wrote (see known).
func controlEventFrom(a *strArena, event string, names, vals []string, ours uint32) ControlEvent {
	auth := eventAuthority[event]
	payload := make(map[string]string, len(names))
	for k, n := range names {
		payload[n] = vals[k]
	}
	w := controlEventPreimageFrom(a, event, auth, names, vals, ours)
	return ControlEvent{Type: event, ActorRole: auth[0], Capability: auth[1], EventID: w.mustDigestAsIn(a, "event:"), Payload: payload}
}

// controlEventPreimageFrom writes the preimage controlEventPreimage
// writes for the payload names[k]: vals[k], its strings tested through
// a's plainSeen (see strArena.writer).
func controlEventPreimageFrom(a *strArena, event string, auth [2]string, names, vals []string, ours uint32) canonWriter {
	w := a.writer(1024)
	w.from = eventMidstate(event)
	w.controlEventHead(auth)
	w.lit(`{`)
	for k, n := range names {
		if k > 0 {
			w.lit(`,"`)
		} else {
			w.lit(`"`)
		}
		w.lit(n)
		w.lit(`":`)
		if ours&(1<<k) != 0 {
			w.ours(vals[k])
		} else {
			w.val(vals[k])
		}
	}
	w.lit(`},"type":`)
	w.val(event)
	w.lit(`}`)
	return w
}

// controlEventHead writes a control event preimage's members before its
// payload's value.
func (w *canonWriter) controlEventHead(auth [2]string) {
	w.lit(`{"actor_role":`)
	w.val(auth[0])
	w.lit(`,"capability":`)
	w.val(auth[1])
	w.lit(`,"contract_version":"` + ContractVersion + `","kind":"M4AControlEventPreimage","payload":`)
}

// controlEventDigest digests a control event's preimage.
func controlEventDigest(event string, auth [2]string, payload map[string]string) string {
	w := controlEventPreimage(event, auth, payload, nil)
	return w.mustDigest()
}

// controlEventID is "event:" and the hex of controlEventDigest.
func controlEventID(a *strArena, event string, auth [2]string, payload map[string]string, names []string) string {
	w := controlEventPreimage(event, auth, payload, names)
	return w.mustDigestAsIn(a, "event:")
}

// controlEventPreimage writes a control event's preimage. names, when the
// caller knows them, are the payload's member names in sorted order; nil,
// or a list that is not exactly the payload's members, means the map's own
// keys, sorted here.
func controlEventPreimage(event string, auth [2]string, payload map[string]string, names []string) canonWriter {
	var keysArr [16]string
	if len(names) != len(payload) {
		names = appendSortedKeys(keysArr[:0], payload)
	}
	w := pooledWriter(1024)
	w.from = eventMidstate(event)
	w.controlEventHead(auth)
	w.open()
	for _, k := range names {
		v, ok := payload[k]
		if !ok {
			// As many names as members, but not these: the list is not
			// the payload's, so write the payload's own keys instead.
			w.release()
			return controlEventPreimage(event, auth, payload, appendSortedKeys(keysArr[:0], payload))
		}
		w.str(k, v)
	}
	w.close()
	w.lit(`,"type":`)
	w.val(event)
	w.lit(`}`)
	return w
}

// CommitCheck is what the runner calls inside the transaction that commits
// an authorized intent, with that transaction's own time reading and its
// view of the approvals ledger. It re-checks that the authority is still
// live (valid_until is exclusive) and, when the intent consumes an
// approval, revalidates the grant against its request and consumes it. It
// returns the ledger to write in the same transaction. Any rejection means
// the intent must not be committed: the run returns to PLAN_EFFECTS.
func CommitCheck(o Outcome, l Ledger, now int64) (Ledger, *Rejection) {
	if o.Kind != OutcomeIntent || o.Intent == nil || o.Authority == nil {
		return l, reject("INVALID_CONTROL_STATE", "/intent")
	}
	s := *o.Authority
	if s.AuthorityDigest != s.ComputeDigest() || s.AuthorityDigest != o.Intent.AuthorityDigest {
		return l, reject("AUTHORITY_DIGEST_MISMATCH", "/authority/authority_digest")
	}
	if now < s.ValidFrom || now >= s.ValidUntil {
		return l, &Rejection{Code: "AUTHORITY_EXPIRED", Path: "/authority/valid_until", Expected: s.ValidUntil, Actual: now}
	}
	if o.Approval == nil {
		if o.Intent.ApprovalRequired || o.Intent.ApprovalDigest != nil {
			return l, reject("APPROVAL_FIELD_DRIFT", "/intent/approval_digest")
		}
		return l, nil
	}
	a := o.Approval
	if o.Intent.ApprovalDigest == nil || *o.Intent.ApprovalDigest != a.Approval.ApprovalDigest {
		return l, reject("APPROVAL_DIGEST_MISMATCH", "/intent/approval_digest")
	}
	if r := Revalidate(a.Approval, a.Approver, a.Request, l, now); r != nil {
		return l, r
	}
	return l.Consume(a.Approval)
}
