package workflow

import (
	"encoding/json"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// pendingWriter writes the state's pending approval requests member by
// member, as cjson writes them nested in the state (one level down, where
// no array is a set): byte for byte what appendNested writes for the list
// (TestPendingWriterIsNested). A string outside the string rule, or a
// nested part that fails, turns ok false, and the state's encoding falls
// back to cjson.Marshal, whose bytes and errors are the contract.
type pendingWriter struct {
	b  []byte
	ok bool
}

func (w *pendingWriter) lit(s string) { w.b = append(w.b, s...) }

func (w *pendingWriter) str(s string) {
	if w.ok {
		w.b, w.ok = appendChecked(w.b, s)
	}
}

func (w *pendingWriter) int(n int64) { w.b = cjson.AppendInt(w.b, n) }

// strs writes a list of strings; nilAs is what a nil list writes ("null"
// for a plain slice, "[]" for a protocol.IDSet, whose MarshalJSON writes
// nil as the empty array). An IDSet's own bytes are encoding/json's; cjson
// keeps them when they are canonical and writes the strings again when
// they are not (an escape cjson does not use), so for strings within the
// string rule both give each string as cjson writes it.
func (w *pendingWriter) strs(ss []string, nilAs string) {
	if ss == nil {
		w.lit(nilAs)
		return
	}
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

// raw writes a raw JSON member through cjson, as the state's reflection
// writes it (canonical bytes copied, anything else encoded again).
func (w *pendingWriter) raw(r json.RawMessage) {
	if w.ok {
		w.b, w.ok = appendNested(w.b, r)
	}
}

func (w *pendingWriter) pendings(ps []pending) {
	w.b = append(w.b, '[')
	for i := range ps {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.pending(&ps[i])
	}
	w.b = append(w.b, ']')
}

func (w *pendingWriter) pending(p *pending) {
	w.lit(`{"action":`)
	w.raw(p.Action)
	w.lit(`,"batch":`)
	w.batch(&p.Batch)
	if len(p.Choices) > 0 {
		w.lit(`,"choices":[`)
		for i := range p.Choices {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			c := &p.Choices[i]
			w.lit(`{"actor":`)
			w.actor(&c.Actor)
			w.lit(`,"option":`)
			w.str(c.Option)
			w.lit(`,"proposal_id":`)
			w.str(c.ProposalID)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	w.lit(`,"destination":`)
	w.raw(p.Dest)
	w.lit(`,"effect_sequence":`)
	w.int(p.EffectSeq)
	w.lit(`,"intent_id":`)
	w.str(p.IntentID)
	w.lit(`,"machine":`)
	if w.ok {
		if mb, err := p.Machine.AppendCanonical(w.b); err == nil {
			w.b = mb
		} else {
			w.ok = false
		}
	}
	w.lit(`,"now":`)
	w.int(p.Now)
	if p.Quorum != 0 {
		w.lit(`,"quorum":`)
		w.int(int64(p.Quorum))
	}
	w.lit(`,"request":`)
	w.request(&p.Request)
	w.lit(`,"request_id":`)
	w.str(p.RequestID)
	if len(p.Resumed) > 0 {
		w.lit(`,"resumed":[`)
		for i := range p.Resumed {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			r := &p.Resumed[i]
			w.lit(`{"actor":`)
			w.actor(&r.Actor)
			w.lit(`,"proposal_id":`)
			w.str(r.ProposalID)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	w.lit(`,"turn":`)
	w.int(p.Turn)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) actor(a *mrp.Actor) {
	w.lit(`{"capabilities":`)
	w.strs(a.Capabilities, "null")
	w.lit(`,"id":`)
	w.str(a.ID)
	w.lit(`,"kind":`)
	w.str(a.Kind)
	w.lit(`,"role":`)
	w.str(a.Role)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) request(q *authority.ApprovalRequest) {
	w.lit(`{"action_digest":`)
	w.str(q.ActionDigest)
	w.lit(`,"actor":`)
	w.str(q.Actor)
	w.lit(`,"adapter_version":`)
	w.str(q.AdapterVersion)
	w.lit(`,"approver_scope":`)
	w.str(q.ApproverScope)
	w.lit(`,"artifact_digest":`)
	w.str(q.ArtifactDigest)
	w.lit(`,"authority_digest":`)
	w.str(q.AuthorityDigest)
	w.lit(`,"capability":`)
	w.str(q.Capability)
	w.lit(`,"context_digest":`)
	w.str(q.ContextDigest)
	w.lit(`,"destination_digest":`)
	w.str(q.DestinationDigest)
	w.lit(`,"expires_at":`)
	w.int(q.ExpiresAt)
	w.lit(`,"kind":`)
	w.str(q.Kind)
	w.lit(`,"nonce":`)
	w.str(q.Nonce)
	w.lit(`,"policy_version":`)
	w.str(q.PolicyVersion)
	w.lit(`,"proposal_id":`)
	w.str(q.ProposalID)
	w.lit(`,"rationale":`)
	w.str(q.Rationale)
	w.lit(`,"request_digest":`)
	w.str(q.RequestDigest)
	w.lit(`,"request_id":`)
	w.str(q.RequestID)
	w.lit(`,"requested_at":`)
	w.int(q.RequestedAt)
	w.lit(`,"run_id":`)
	w.str(q.RunID)
	w.lit(`,"scope":`)
	w.str(q.Scope)
	w.lit(`,"visibility":`)
	w.str(q.Visibility)
	w.lit(`,"workflow_version":`)
	w.str(q.WorkflowVersion)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) batch(pb *authority.PublishedBatch) {
	s := &pb.Batch
	w.lit(`{"batch":{"batch_digest":`)
	w.str(s.BatchDigest)
	w.lit(`,"batch_id":`)
	w.str(s.BatchID)
	w.lit(`,"cause_id":`)
	w.str(s.CauseID)
	w.lit(`,"dataflow_version":`)
	w.str(s.DataflowVersion)
	w.lit(`,"eligibility_verdict_ids":`)
	w.strs(s.EligibilityVerdictIDs, "[]")
	w.lit(`,"kind":`)
	w.str(s.Kind)
	w.lit(`,"logical_time":`)
	w.int(s.LogicalTime)
	w.lit(`,"low_watermark":`)
	w.int(s.LowWatermark)
	w.lit(`,"proposal_ids":`)
	w.strs(s.ProposalIDs, "[]")
	w.lit(`},"effect_proposals":`)
	if pb.Proposals == nil {
		w.lit("null")
	} else {
		w.b = append(w.b, '[')
		for i := range pb.Proposals {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.proposal(&pb.Proposals[i])
		}
		w.b = append(w.b, ']')
	}
	w.lit(`,"eligibility_verdicts":`)
	if pb.Verdicts == nil {
		w.lit("null")
	} else {
		w.b = append(w.b, '[')
		for i := range pb.Verdicts {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.verdict(&pb.Verdicts[i])
		}
		w.b = append(w.b, ']')
	}
	w.lit(`,"published_batch_digest":`)
	w.str(pb.PublishedBatchDigest)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) proposal(p *protocol.EffectProposal) {
	w.lit(`{"action_digest":`)
	w.str(p.ActionDigest)
	w.lit(`,"cause_id":`)
	w.str(p.CauseID)
	w.lit(`,"correlation_id":`)
	w.str(p.CorrelationID)
	w.lit(`,"declared_risk_hint":`)
	w.str(p.DeclaredRiskHint)
	w.lit(`,"destination_digest":`)
	w.str(p.DestinationDigest)
	w.lit(`,"effect_type":`)
	w.str(p.EffectType)
	w.lit(`,"goal_id":`)
	w.str(p.GoalID)
	w.lit(`,"kind":`)
	w.str(p.Kind)
	w.lit(`,"obligation_id":`)
	w.str(p.ObligationID)
	w.lit(`,"preconditions":`)
	w.strs(p.Preconditions, "[]")
	w.lit(`,"proposal_dedup_key":`)
	w.str(p.ProposalDedupKey)
	w.lit(`,"proposal_id":`)
	w.str(p.ProposalID)
	w.lit(`,"versions":`)
	w.versions(&p.Versions)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) versions(v *protocol.VersionEnvelope) {
	w.lit(`{"canonicalization":`)
	w.str(v.Canonicalization)
	w.lit(`,"composition_profile":`)
	w.str(v.CompositionProfile)
	w.lit(`,"dataflow":`)
	w.str(v.Dataflow)
	w.lit(`,"event_schema":`)
	w.str(v.EventSchema)
	w.lit(`,"gate":`)
	w.str(v.Gate)
	w.lit(`,"graph_schema":`)
	w.str(v.GraphSchema)
	w.lit(`,"model":`)
	w.str(v.Model)
	w.lit(`,"oracle":`)
	w.str(v.Oracle)
	w.lit(`,"resolver":`)
	w.str(v.Resolver)
	w.lit(`,"rule_set":`)
	w.str(v.RuleSet)
	w.lit(`,"state_schema":`)
	w.str(v.StateSchema)
	w.lit(`,"tool":`)
	w.str(v.Tool)
	w.lit(`,"workflow":`)
	w.str(v.Workflow)
	w.b = append(w.b, '}')
}

func (w *pendingWriter) verdict(e *protocol.EligibilityVerdict) {
	w.lit(`{"cause_id":`)
	w.str(e.CauseID)
	w.lit(`,"kind":`)
	w.str(e.Kind)
	w.lit(`,"proposal_id":`)
	w.str(e.ProposalID)
	w.lit(`,"rule_set_version":`)
	w.str(e.RuleSetVersion)
	w.lit(`,"status":`)
	w.str(e.Status)
	w.lit(`,"support_derivation_ids":`)
	w.strs(e.SupportDerivationIDs, "[]")
	w.lit(`,"verdict_id":`)
	w.str(e.VerdictID)
	w.b = append(w.b, '}')
}
