package workflow

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
)

// actionSpec reads H's view of a proposal's action: the destination
// object's "id" and "scope" and the action object as parameters.
func actionSpec(proposalID string, a action) authority.ActionSpec {
	dest, _ := a.Destination["id"].(string)
	scope, _ := a.Destination["scope"].(string)
	return authority.ActionSpec{ProposalID: proposalID, Destination: dest, Scope: scope, Parameters: a.Action}
}

func (w *Workflow) input(b authority.PublishedBatch, spec authority.ActionSpec, m mrp.Machine, now, seq, turn int64) authority.Input {
	return authority.Input{Batch: b, ProfileDigest: w.rProfile.Digest(), Actions: []authority.ActionSpec{spec}, Policy: w.policy,
		Verified: w.verified, Machine: m, Now: now, EffectSequence: seq, Turn: turn}
}

// authorize runs H over one published batch (one proposal) and maps the
// outcome to effects. choices are the choices among options presented to
// the gates (none on a first decision), resumed a person's RESUME of a
// held proposal decided again; checked is what SealBatch checked of b, if
// anything. A proposal H holds or escalates is kept for a new decision
// (decision 0612).
func (t *tick) authorize(b authority.PublishedBatch, a action, choices []authority.Choice, resumed []authority.Resumption, checked authority.CheckedBatch) ([]Effect, error) {
	w, st := t.w, t.st
	p := b.Proposals[0]
	spec := actionSpec(p.ProposalID, a)
	before := st.Machine
	turn := st.Turn + 1
	in := w.input(b, spec, before, t.lt, st.EffectSeq, turn)
	in.Choices, in.Checked, in.Resumed = choices, checked, resumed
	in.ScorecardDigest = t.scorecard
	// Nothing a tick returns or notes reads H's control events (the
	// runner's control records come from the run FSM, not from H): H
	// builds none, nor the digests only they bind.
	in.NoControlEvents = true
	// A traced tick has H write the FHR's canonical bytes into the room
	// of its h.fhr note; an untraced one writes no note, so H seals the
	// FHR in its own pooled buffer (the same digest) and no room is made.
	var fhrBuf []byte
	if !t.untraced {
		fhrBuf = fhrNoteBuf(len(st.FHRChain))
		in.FHRTo = fhrBuf[fhrNoteHead:]
	}
	// An approval request is decided again at once with a grant, over
	// the same batch: the memo gives that decision the digests of the
	// preimages it writes again byte for byte.
	memo := digestMemos.Get().(*authority.DigestMemo)
	defer putMemo(memo)
	in.Memo = memo
	d, err := authority.Authorize(in)
	if err != nil {
		return nil, fmt.Errorf("workflow: H refused the batch: %w", err)
	}
	st.Machine, st.Turn = d.Machine, turn
	chain, err := fhrChain(st.FHRChain, d.FHR.Digest)
	if err != nil {
		return nil, err
	}
	st.FHRChain = chain
	if !t.untraced {
		body, ok := fhrNoteFrom(fhrBuf, d.FHRCanonical, d.Event, chain)
		if !ok {
			body, ok = fhrNote(d.FHR, d.Event, chain)
		}
		t.noteBytes("h.fhr", body, ok, func() map[string]any { return fhrNoteMap(d.FHR, d.Event, chain) })
	}
	o := d.Outcomes[0]
	switch o.Kind {
	case authority.OutcomeApprovalRequest, authority.OutcomeOptions, authority.OutcomeHeld, authority.OutcomeEscalated:
		// The state keeps the batch: with its published digest.
		b, checked = w.withPublished(b, checked)
	}
	t.outcome = o.Kind
	t.explainOutcome(o, choices)
	rec := &outcomeRec{proposalID: o.ProposalID, kind: o.Kind, ticketID: o.Ticket.TicketID, mrpState: string(o.MRPState),
		preview: o.Ticket.Preview, held: o.Held, options: o.Options, audit: o.Audit,
		ticketDigest: o.Ticket.TicketDigest, actionDigest: o.Ticket.ActionDigest, assessedRisk: o.Ticket.AssessedRisk}
	if o.Rejection != nil {
		rec.rejection = &[2]string{o.Rejection.Code, o.Rejection.Path}
	}
	payload, err := cjson.Marshal(a.Action)
	if err != nil {
		return nil, err
	}
	switch o.Kind {
	case authority.OutcomeIntent:
		rec.intentID = &o.Intent.IntentID
		t.noteOutcome(rec)
		st.EffectSeq++
		st.Open = append(st.Open, openIntent{IntentID: o.Intent.IntentID, ProposalID: p.ProposalID, EffectType: p.EffectType, ActionDigest: o.Intent.ActionDigest})
		return []Effect{{Intent: *o.Intent, Payload: payload, ContentDigest: cjson.Digest(payload)}}, nil
	case authority.OutcomeApprovalRequest:
		q := *o.ApprovalRequest
		actionJSON, _ := cjson.Marshal(a.Action)
		destJSON, _ := cjson.Marshal(a.Destination)
		pd := pending{RequestID: q.RequestID, Request: q, Batch: b, Action: actionJSON, Dest: destJSON, Machine: before,
			EffectSeq: st.EffectSeq, Now: t.lt, Turn: turn, Choices: choices, Resumed: resumed, Quorum: o.Quorum}
		// The intent a grant would yield, computed now so the run plans
		// exactly the effect a person approves.
		eff, approved, err := w.reauthorizeWith(pd, w.approverNamed(q.Actor), checked, memo)
		if err != nil {
			// Not even a grant would let it through now (a restart in
			// TEST): H holds it, and the run keeps it.
			rec.held = "held: " + err.Error()
			t.noteOutcome(rec)
			t.outcome = authority.OutcomeHeld
			t.keep(o, authority.OutcomeHeld, rec.held, b, a, choices)
			return nil, nil
		}
		pd.IntentID, pd.approved = eff.Intent.IntentID, &approved
		rec.intentID, rec.requestID, rec.requestDigest = &eff.Intent.IntentID, &q.RequestID, &q.RequestDigest
		if o.QuorumReason != nil {
			rec.quorum, rec.quorumRule = o.Quorum, o.QuorumReason.Rule
		}
		t.noteOutcome(rec)
		eff.Approval = &ApprovalNeed{RequestID: q.RequestID, RequestDigest: q.RequestDigest, IntentID: eff.Intent.IntentID, Preview: o.Ticket.Preview, Quorum: o.Quorum}
		if q.Actor != w.approval.Approver {
			eff.Approval.Approver = q.Actor
		}
		st.EffectSeq++
		st.Pending = append(st.Pending, pd)
		st.Open = append(st.Open, openIntent{IntentID: eff.Intent.IntentID, ProposalID: p.ProposalID, EffectType: p.EffectType, ActionDigest: eff.Intent.ActionDigest})
		return []Effect{eff}, nil
	case authority.OutcomeOptions:
		// Nothing reaches the world until someone chooses: the offer keeps
		// what H needs to decide the proposal again with the choice.
		actionJSON, _ := cjson.Marshal(a.Action)
		destJSON, _ := cjson.Marshal(a.Destination)
		t.noteOutcome(rec)
		of := offer{ProposalID: p.ProposalID, TicketID: o.Ticket.TicketID, Options: append([]string{}, o.Options...),
			Batch: b, Action: actionJSON, Dest: destJSON}
		st.Offered = append(slices.DeleteFunc(st.Offered, func(x offer) bool { return x.ProposalID == p.ProposalID }), of)
		return t.offered(of, o.Ticket)
	case authority.OutcomeHeld, authority.OutcomeEscalated:
		// Nothing reaches the world now; the run keeps the proposal and
		// decides it again once deliberation admits a decision.
		t.noteOutcome(rec)
		t.keep(o, o.Kind, o.Held, b, a, choices)
		return nil, nil
	default:
		// REJECTED: nothing reaches the world; the trace (and the MRP
		// machine in the state) records why.
		t.noteOutcome(rec)
		return nil, nil
	}
}

// keep records a proposal H held or escalated, replacing what was kept
// of it before.
func (t *tick) keep(o authority.Outcome, kind, why string, b authority.PublishedBatch, a action, choices []authority.Choice) {
	st := t.st
	actionJSON, _ := cjson.Marshal(a.Action)
	destJSON, _ := cjson.Marshal(a.Destination)
	h := held{ProposalID: o.ProposalID, TicketID: o.Ticket.TicketID, Outcome: kind, Why: why, Since: t.lt,
		Batch: b, Action: actionJSON, Dest: destJSON, Choices: choices}
	st.Held = append(slices.DeleteFunc(st.Held, func(x held) bool { return x.ProposalID == o.ProposalID }), h)
}

// fhrChain links a turn's FHR digest to the run's chain: the digest of
// {"fhr", "kind": "flrh.workflow.fhr-chain", "prev"}, written as cjson
// writes it. A string outside the string rule (never a digest) is left to
// cjson, which reports it.
func fhrChain(prev, fhr string) (string, error) {
	var arr [256]byte // two digests and the members fit: no allocation
	b := append(arr[:0], `{"fhr":`...)
	b, ok := appendStr(b, fhr, true)
	b = append(b, `,"kind":"flrh.workflow.fhr-chain","prev":`...)
	if b, ok = appendStr(b, prev, ok); !ok {
		return cjson.DigestOf(map[string]any{"kind": "flrh.workflow.fhr-chain", "prev": prev, "fhr": fhr})
	}
	return cjson.Digest(append(b, '}')), nil
}

// reauthorize runs H again over the batch an approval request came from,
// exactly as it was decided (same machine, time and sequence), with the
// grant presented. The grant is issued at the request's own logical time:
// the run's logical clock does not move while it waits for a person.
func (w *Workflow) reauthorize(pd pending, by authority.Approver, checked authority.CheckedBatch) (Effect, mrp.Machine, error) {
	return w.reauthorizeWith(pd, by, checked, nil)
}

// reauthorizeWith is reauthorize with H given memo (authority.Input.Memo).
// As for a tick's own decision, H builds no control event
// (authority.Input.NoControlEvents).
func (w *Workflow) reauthorizeWith(pd pending, by authority.Approver, checked authority.CheckedBatch, memo *authority.DigestMemo) (Effect, mrp.Machine, error) {
	act, err1 := plain(pd.Action)
	dest, err2 := plain(pd.Dest)
	if err1 != nil || err2 != nil {
		return Effect{}, mrp.Machine{}, errors.New("workflow state: pending action is not an object")
	}
	a := action{Action: act, Destination: dest}
	p := pd.Batch.Proposals[0]
	in := w.input(pd.Batch, actionSpec(p.ProposalID, a), pd.Machine, pd.Now, pd.EffectSeq, pd.Turn)
	in.Choices, in.Checked, in.Resumed = pd.Choices, checked, pd.Resumed
	in.Approvals = []authority.PresentedApproval{{Request: pd.Request, Approval: authority.Grant(pd.Request, pd.Request.RequestedAt), Approver: by}}
	in.Memo, in.NoControlEvents = memo, true
	d, err := authority.Authorize(in)
	if err != nil {
		return Effect{}, mrp.Machine{}, fmt.Errorf("H refused the batch: %w", err)
	}
	o := d.Outcomes[0]
	if o.Kind != authority.OutcomeIntent || o.Approval == nil {
		why := o.Held
		if len(o.Audit) > 0 {
			why = o.Audit[len(o.Audit)-1]
		}
		if o.Rejection != nil {
			why = o.Rejection.Code
		}
		return Effect{}, mrp.Machine{}, fmt.Errorf("the grant does not authorize %s (%s: %s)", p.ProposalID, o.Kind, why)
	}
	payload, err := cjson.Marshal(act)
	if err != nil {
		return Effect{}, mrp.Machine{}, err
	}
	// The intent names the grant it consumes by the approvals ledger's
	// digest of the stored grant, which the runner fills in at commit; H's
	// own approval object (derived from that grant) stays in H's evidence.
	intent := *o.Intent
	intent.ApprovalDigest = nil
	return Effect{Intent: intent, Payload: payload, ContentDigest: cjson.Digest(payload)}, d.Machine, nil
}

// approverNamed is the approver a request names (the approval policy's,
// or the one the gates named), as the ledger would know them.
func (w *Workflow) approverNamed(name string) authority.Approver {
	return authority.Approver{ID: name, Kind: "human", Role: authority.ApproverRole, Scopes: []string{w.approval.ApproverScope}}
}

// approvedMachine is the MRP machine once the grant for pd was used: H's
// machine from the same turn decided again with the grant. A receipt for
// an approved intent proves the grant was consumed (the runner commits an
// approved intent only after CheckGrant and AuthorizeApproved accepted it),
// and the run accepted nothing in between, so this is the turn's true end.
func (w *Workflow) approvedMachine(pd pending) (mrp.Machine, bool) {
	if pd.approved != nil {
		return *pd.approved, true
	}
	_, m, err := w.reauthorize(pd, w.approverNamed(pd.Request.Actor), authority.CheckedBatch{})
	return m, err == nil
}

// Grant is a person's stored approval, as the approvals ledger holds it.
type Grant struct {
	LedgerRequestDigest string // the request digest the ledger row names
	Body                []byte // the grant document: request_digest, actor, role, …
}

type grantBody struct {
	RequestDigest string `json:"request_digest"`
	Actor         string `json:"actor"`
	Role          string `json:"role"`
}

func (g Grant) decode() (grantBody, error) {
	var b grantBody
	if err := json.Unmarshal(g.Body, &b); err != nil {
		return b, fmt.Errorf("grant body: %w", err)
	}
	return b, nil
}

// CheckGrant checks that a stored grant answers exactly need, from the
// approver the bundle's approval policy names, in the approver role. The
// caller checks wall-clock expiry.
func (w *Workflow) CheckGrant(need ApprovalNeed, g Grant) error {
	b, err := g.decode()
	if err != nil {
		return err
	}
	switch {
	case g.LedgerRequestDigest != need.RequestDigest || b.RequestDigest != need.RequestDigest:
		return errors.New("the grant answers another request: the action, destination or scope changed")
	case b.Role != authority.ApproverRole:
		return fmt.Errorf("the grant was issued in role %q, not %s", b.Role, authority.ApproverRole)
	}
	approver := need.Approver
	if approver == "" {
		approver = w.approval.Approver
	}
	return w.approval.mayAnswer(approver, b.Actor)
}

// AuthorizeApproved authorizes the effect waiting on need once the grant
// is in hand: H decides again with the grant presented, and returns the
// intent that consumes it.
func (w *Workflow) AuthorizeApproved(stateJSON []byte, need ApprovalNeed, g Grant) (Effect, error) {
	if err := w.CheckGrant(need, g); err != nil {
		return Effect{}, err
	}
	st, err := decodeState(stateJSON)
	if err != nil {
		return Effect{}, err
	}
	k := slices.IndexFunc(st.Pending, func(p pending) bool { return p.RequestID == need.RequestID })
	if k < 0 {
		return Effect{}, fmt.Errorf("no approval request %s is pending", need.RequestID)
	}
	pd := st.Pending[k]
	if pd.Request.RequestDigest != need.RequestDigest || pd.IntentID != need.IntentID {
		return Effect{}, errors.New("the pending request differs from the one approved")
	}
	if named := cmp.Or(need.Approver, w.approval.Approver); pd.Request.Actor != named {
		return Effect{}, fmt.Errorf("the pending request names approver %q, not %q", pd.Request.Actor, named)
	}
	// Deliberation ended after the request (a person's EXIT, a closure
	// budget): nothing it left undecided is carried out, the request
	// included.
	if st.Machine.State.Terminal() {
		return Effect{}, fmt.Errorf("deliberation ended (%s) after approval request %s: nothing is carried out after it", st.Machine.State, need.RequestID)
	}
	b, _ := g.decode()
	kind := "human"
	if b.Role != authority.ApproverRole {
		kind = "unknown"
	}
	// H's request names the approver the policy (or its gates) named: a
	// person, or a group for which the member who granted (checked above,
	// recorded in the grant) answers. H sees the name its request bound.
	eff, _, err := w.reauthorize(pd, authority.Approver{ID: pd.Request.Actor, Kind: kind, Role: b.Role, Scopes: []string{w.approval.ApproverScope}}, authority.CheckedBatch{})
	if err != nil {
		return Effect{}, err
	}
	if eff.Intent.IntentID != need.IntentID {
		return Effect{}, fmt.Errorf("H authorized %s, not the planned %s", eff.Intent.IntentID, need.IntentID)
	}
	eff.Approval = &need
	return eff, nil
}

// digestMemos recycles the memos authorize gives H; a memo is emptied
// before it goes back, and one grown past 64 KiB is left to the collector.
var digestMemos = sync.Pool{New: func() any { return new(authority.DigestMemo) }}

func putMemo(m *authority.DigestMemo) {
	if m.Size() <= 64<<10 {
		m.Reset()
		digestMemos.Put(m)
	}
}
