package authority

import (
	"crypto/sha256"
	"maps"
	"slices"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// templateString draws the strings preimages are written from: ids and
// digests (plain), printable ASCII with quotes and backslashes, control
// bytes, non-ASCII text, text that is not NFC and bytes that are not UTF-8.
func templateString(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.StringMatching(`[a-z0-9][a-z0-9:._/-]{0,24}`),
		rapid.StringMatching(`sha256:[0-9a-f]{64}`),
		rapid.StringMatching(`[ -~]{0,16}`),
		rapid.StringMatching(`[a-z"\\\n\t\x01é]{0,8}`),
		rapid.SampledFrom([]string{"", "e\u0301", "\xff", "é", "\u212b"}),
		rapid.String(),
	).Draw(t, label)
}

func templateStrings(t *rapid.T, label string) []string {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string { return templateString(t, "s") }), 0, 3).Draw(t, label)
}

func anyStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sameAsCjson holds a template's bytes to cjson's encoding of the same
// members: both refuse, or both write the same bytes; and the writer's
// SHA-256, continued from the midstate the template chose if any, to
// sha256.Sum256 of those bytes.
func sameAsCjson(t *rapid.T, name string, write func(w *canonWriter), want map[string]any) {
	var w canonWriter
	write(&w)
	enc, err := cjson.Encode(want)
	switch {
	case (err == nil) != (w.err == nil):
		t.Fatalf("%s: template error %v, cjson error %v", name, w.err, err)
	case err == nil && string(w.b) != string(enc):
		t.Fatalf("%s: template wrote\n%s\ncjson\n%s", name, w.b, enc)
	case err == nil && w.sum256() != sha256.Sum256(enc):
		t.Fatalf("%s: digest %x (from %v), want %x", name, w.sum256(), w.from != nil, sha256.Sum256(enc))
	}
}

// Every template preimage writer writes cjson's bytes for its members,
// and refuses exactly the strings cjson refuses.
func TestTemplatesAreCjson(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		str := func(label string) string { return templateString(rt, label) }
		num := func(label string) int64 { return rapid.Int64().Draw(rt, label) }
		// usual draws one of the values a preimage's usual opening has
		// (so that its midstate is used) or any string.
		usual := func(label string, vals ...string) string {
			if rapid.Bool().Draw(rt, label+" usual") {
				return rapid.SampledFrom(vals).Draw(rt, label)
			}
			return str(label)
		}
		// "ours" values are this package's own digests: plain by
		// construction, so only such strings are drawn for them.
		digest := func(label string) string { return rapid.StringMatching(`sha256:[0-9a-f]{64}`).Draw(rt, label) }

		pid, bid := str("proposal_id"), str("batch_id")
		sameAsCjson(rt, "ticket id", func(w *canonWriter) { w.ticketIDPreimage(pid, bid) },
			map[string]any{"batch_id": bid, "kind": "ActionTicketIDPreimage", "proposal_id": pid})

		at, td := num("requested_at"), str("ticket_digest")
		nonce := map[string]any{"kind": "ApprovalNoncePreimage", "proposal_id": pid, "batch_id": bid, "requested_at": at, "ticket_digest": td}
		sameAsCjson(rt, "approval nonce", func(w *canonWriter) { w.noncePreimage(pid, bid, at, td) }, nonce)
		if got, want := approvalNonce(pid, bid, at, td), "nonce:"+hexOf(mustDigest(nonce)); got != want {
			rt.Fatalf("approvalNonce = %s, want %s", got, want)
		}

		seq := rapid.OneOf(rapid.Int64Range(-2, 12), rapid.Int64()).Draw(rt, "seq")
		now, idx := num("now"), num("index")
		pol, pub, prof := str("policy"), str("published"), str("profile")
		sameAsCjson(rt, "input", func(w *canonWriter) { w.inputPreimage(seq, now, pol, idx, pub, prof) },
			map[string]any{"contract_version": ContractVersion, "effect_sequence": seq, "kind": "AuthorizeInputPreimage", "now": now,
				"policy_digest": pol, "proposal_index": idx, "published_batch_digest": pub, "r_profile_digest": prof})

		s := AuthoritySnapshot{
			Kind: str("kind"), AuthorityVersion: str("authority_version"), ProposalID: pid, EffectType: str("effect_type"),
			Capability: str("capability"), Decision: usual("decision", "allow"), AssessedRisk: usual("risk", RiskReadOnly, RiskReversible, RiskHighRiskExternal),
			AdapterVersion:    str("adapter"),
			DestinationDigest: str("destination"), ValidFrom: num("from"), ValidUntil: num("until"),
			Revoked: rapid.Bool().Draw(rt, "revoked"), AuthorityDigest: digest("authority_digest"),
		}
		sameAsCjson(rt, "authority snapshot", s.writePreimage, map[string]any{
			"adapter_version": s.AdapterVersion, "assessed_risk": s.AssessedRisk, "authority_version": s.AuthorityVersion,
			"capability": s.Capability, "contract_version": ContractVersion, "decision": s.Decision,
			"destination_digest": s.DestinationDigest, "effect_type": s.EffectType, "kind": s.Kind, "proposal_id": s.ProposalID,
			"revoked": s.Revoked, "valid_from": s.ValidFrom, "valid_until": s.ValidUntil,
		})

		run, tr, ad := str("run"), str("transition"), str("action_digest")
		sameAsCjson(rt, "idempotency", func(w *canonWriter) { w.idempotencyPreimage(run, tr, seq, ad, s.AdapterVersion) },
			map[string]any{"action_digest": ad, "adapter_version": s.AdapterVersion, "contract_version": ContractVersion,
				"effect_sequence": seq, "kind": "M4AIdempotencyPreimage", "run_id": run, "transition_id": tr})

		idem := digest("idempotency")
		var approval *string
		var approvalAny any
		if rapid.Bool().Draw(rt, "approved") {
			a := str("approval")
			approval, approvalAny = &a, a
		}
		sameAsCjson(rt, "intent identity", func(w *canonWriter) { w.intentIdentityPreimage(approval, s.AuthorityDigest, bid, []byte(idem), pid) },
			map[string]any{"approval_digest": approvalAny, "authority_digest": s.AuthorityDigest, "batch_id": bid,
				"contract_version": ContractVersion, "idempotency_digest": idem, "kind": "M4AIntentIdentityPreimage", "proposal_id": pid})

		v := protocol.EligibilityVerdict{
			CauseID: str("cause"), Kind: str("verdict_kind"), ProposalID: pid, RuleSetVersion: str("rule_set"),
			Status: str("status"), SupportDerivationIDs: templateStrings(rt, "supports"), VerdictID: str("verdict_id"),
		}
		sameAsCjson(rt, "policy verdict", func(w *canonWriter) { w.policyVerdictPreimage(prof, v, s) },
			map[string]any{"assessed_risk": s.AssessedRisk, "authority_decision": s.Decision, "authority_digest": s.AuthorityDigest,
				"contract_version": ContractVersion, "kind": "M4APolicyVerdictEvidencePreimage", "r_profile_digest": prof,
				"eligibility_verdict": map[string]any{"cause_id": v.CauseID, "kind": v.Kind, "proposal_id": v.ProposalID,
					"rule_set_version": v.RuleSetVersion, "status": v.Status, "support_derivation_ids": anyStrings(v.SupportDerivationIDs),
					"verdict_id": v.VerdictID}})

		p := protocol.EffectProposal{ProposalID: pid, ActionDigest: ad, DestinationDigest: str("proposal_destination"), EffectType: str("proposal_effect_type")}
		sameAsCjson(rt, "capability evidence", func(w *canonWriter) { w.capabilityEvidencePreimage(&p, &s) },
			map[string]any{"action_digest": p.ActionDigest, "adapter_version": s.AdapterVersion, "authority_digest": s.AuthorityDigest,
				"capability": s.Capability, "contract_version": ContractVersion, "destination_digest": p.DestinationDigest,
				"effect_type": p.EffectType, "kind": "M4ACapabilityEvidencePreimage", "proposal_id": p.ProposalID})

		event, role, capName := str("event"), str("role"), str("event_capability")
		if rapid.Bool().Draw(rt, "usual event") {
			event = rapid.SampledFrom([]string{EventEffectAuthorized, EventApprovalRequired, EventApprovalGranted}).Draw(rt, "event")
			if rapid.Bool().Draw(rt, "its authority") {
				role, capName = eventAuthority[event][0], eventAuthority[event][1]
			}
		}
		payload := map[string]string{}
		for _, k := range rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z_]{1,12}`), 0, 8, rapid.ID[string]).Draw(rt, "payload_names") {
			payload[k] = str("payload_value")
		}
		payloadAny := map[string]any{}
		for k, v := range payload {
			payloadAny[k] = v
		}
		sameAsCjson(rt, "control event", func(w *canonWriter) { *w = controlEventPreimage(event, [2]string{role, capName}, payload, nil) },
			map[string]any{"actor_role": role, "capability": capName, "contract_version": ContractVersion,
				"kind": "M4AControlEventPreimage", "payload": payloadAny, "type": event})

		// The payload written from its sorted names and their values, some
		// marked as this package's own, is the map's preimage.
		names := slices.Sorted(maps.Keys(payload))
		vals := make([]string, len(names))
		var ours uint32
		for k, n := range names {
			if rapid.Bool().Draw(rt, "ours") {
				ours |= 1 << k
				payload[n] = digest("our_value")
				payloadAny[n] = payload[n]
			}
			vals[k] = payload[n]
		}
		sameAsCjson(rt, "control event from values", func(w *canonWriter) {
			*w = controlEventPreimageFrom(nil, event, [2]string{role, capName}, names, vals, ours)
		}, map[string]any{"actor_role": role, "capability": capName, "contract_version": ContractVersion,
			"kind": "M4AControlEventPreimage", "payload": payloadAny, "type": event})

		vs := protocol.VersionEnvelope{Workflow: str("workflow"), StateSchema: str("state_schema"), EventSchema: str("event_schema"),
			GraphSchema: str("graph_schema"), RuleSet: str("rule_set_v"), Dataflow: str("dataflow"), Canonicalization: str("canon"),
			Tool: str("tool"), Model: str("model"), Oracle: str("oracle"), Gate: str("gate_v"), Resolver: str("resolver"),
			CompositionProfile: str("composition")}
		fullProposal := protocol.EffectProposal{Kind: str("proposal_kind"), ProposalID: pid, EffectType: p.EffectType, ActionDigest: ad,
			CauseID: str("proposal_cause"), CorrelationID: run, ProposalDedupKey: str("dedup"), DestinationDigest: p.DestinationDigest,
			GoalID: str("goal"), ObligationID: str("obligation"), DeclaredRiskHint: str("hint"), Preconditions: templateStrings(rt, "preconditions"),
			Versions: vs}
		batch := protocol.StableProposalBatch{Kind: str("batch_kind"), BatchID: bid, BatchDigest: str("batch_digest"), CauseID: str("batch_cause"),
			DataflowVersion: usual("batch_dataflow", "dataflow/0", "dataflow/1", "datafl"), LogicalTime: num("logical_time"), LowWatermark: num("low_watermark"),
			ProposalIDs: templateStrings(rt, "proposal_ids"), EligibilityVerdictIDs: templateStrings(rt, "verdict_ids")}
		sameAsCjson(rt, "stable batch", func(w *canonWriter) {
			w.stableBatchPreimage(prof, batch.LogicalTime, batch.LowWatermark, batch.ProposalIDs, batch.EligibilityVerdictIDs, batch.DataflowVersion)
		}, map[string]any{"contract_version": reactiveContract, "dataflow_version": batch.DataflowVersion, "kind": "M3StableBatchPreimage",
			"logical_time": batch.LogicalTime, "low_watermark": batch.LowWatermark, "ordered_eligibility_verdict_ids": anyStrings(batch.EligibilityVerdictIDs),
			"ordered_proposal_ids": anyStrings(batch.ProposalIDs), "profile_digest": prof})
		versionsMap := map[string]any{"workflow": vs.Workflow, "state_schema": vs.StateSchema, "event_schema": vs.EventSchema,
			"graph_schema": vs.GraphSchema, "rule_set": vs.RuleSet, "dataflow": vs.Dataflow, "canonicalization": vs.Canonicalization,
			"tool": vs.Tool, "model": vs.Model, "oracle": vs.Oracle, "gate": vs.Gate, "resolver": vs.Resolver, "composition_profile": vs.CompositionProfile}
		proposalMap := map[string]any{"kind": fullProposal.Kind, "proposal_id": pid, "effect_type": fullProposal.EffectType, "action_digest": ad,
			"cause_id": fullProposal.CauseID, "correlation_id": run, "proposal_dedup_key": fullProposal.ProposalDedupKey,
			"destination_digest": fullProposal.DestinationDigest, "goal_id": fullProposal.GoalID, "obligation_id": fullProposal.ObligationID,
			"declared_risk_hint": fullProposal.DeclaredRiskHint, "preconditions": anyStrings(fullProposal.Preconditions), "versions": versionsMap}
		verdictMap := map[string]any{"cause_id": v.CauseID, "kind": v.Kind, "proposal_id": v.ProposalID,
			"rule_set_version": v.RuleSetVersion, "status": v.Status, "support_derivation_ids": anyStrings(v.SupportDerivationIDs),
			"verdict_id": v.VerdictID}
		n := rapid.IntRange(0, 2).Draw(rt, "batch_size")
		pb := PublishedBatch{Batch: batch}
		proposalsAny, verdictsAny := []any{}, []any{}
		for k := 0; k < n; k++ {
			pb.Proposals, pb.Verdicts = append(pb.Proposals, fullProposal), append(pb.Verdicts, v)
			proposalsAny, verdictsAny = append(proposalsAny, proposalMap), append(verdictsAny, verdictMap)
		}
		sameAsCjson(rt, "published batch", func(w *canonWriter) { w.publishedBatch(pb) },
			map[string]any{"batch": map[string]any{"batch_digest": batch.BatchDigest, "batch_id": bid, "cause_id": batch.CauseID,
				"dataflow_version": batch.DataflowVersion, "eligibility_verdict_ids": anyStrings(batch.EligibilityVerdictIDs),
				"kind": batch.Kind, "logical_time": batch.LogicalTime, "low_watermark": batch.LowWatermark,
				"proposal_ids": anyStrings(batch.ProposalIDs)},
				"contract_version": reactiveContract, "kind": "M3PublishedBatchPreimage",
				"ordered_effect_proposals": proposalsAny, "ordered_eligibility_verdicts": verdictsAny})

		tk := Ticket{
			TicketID: str("ticket_id"), Action: str("action"), Destination: str("ticket_destination"), Scope: str("scope"),
			Parameters:   map[string]any{"amount": num("amount"), "memo": str("memo")},
			ActionDigest: digest("ticket_action_digest"), Preview: str("preview") + "\n" + str("preview_line"),
			PreviewDigest: digest("preview_digest"), DeclaredRisk: str("declared"), AssessedRisk: str("assessed"),
			Completeness: str("completeness"), MissingFields: templateStrings(rt, "missing"),
			SideEffects:     []SideEffect{SideEffect(str("effect"))},
			PreviewRequired: rapid.Bool().Draw(rt, "preview_required"), PreviewShown: rapid.Bool().Draw(rt, "preview_shown"),
			ConfirmationRequired: rapid.Bool().Draw(rt, "confirmation_required"), ConfirmationReceived: rapid.Bool().Draw(rt, "confirmation_received"),
			Status: rapid.SampledFrom([]string{StatusDraft, StatusAwaitingPreview, StatusAwaitingConfirmation, StatusReady, StatusExecuted, StatusRefused, StatusExpired, StatusCanceled}).Draw(rt, "ticket_status"),
		}
		cs := []any{}
		for i := rapid.IntRange(0, 2).Draw(rt, "constraints"); i > 0; i-- {
			c := Constraint{Gate: str("gate"), Rule: str("rule"), Field: str("field"), Scope: str("constraint_scope")}
			var max any
			if rapid.Bool().Draw(rt, "capped") {
				m := num("max")
				c.Max, max = &m, m
			}
			tk.Constraints = append(tk.Constraints, c)
			cs = append(cs, map[string]any{"field": c.Field, "gate": c.Gate, "max": max, "rule": c.Rule, "scope": c.Scope})
		}
		sameAsCjson(rt, "action", func(w *canonWriter) { w.actionPreimage(tk, nil) },
			map[string]any{"action": tk.Action, "destination": tk.Destination, "kind": "ActionTicketActionPreimage",
				"parameters": tk.Parameters, "scope": tk.Scope, "ticket_version": TicketVersion})
		sameAsCjson(rt, "preview", func(w *canonWriter) { w.previewPreimage(tk) },
			map[string]any{"action_digest": tk.ActionDigest, "kind": "ActionTicketPreviewPreimage", "preview": tk.Preview,
				"ticket_id": tk.TicketID, "ticket_version": TicketVersion})
		sameAsCjson(rt, "ticket", func(w *canonWriter) { w.ticketPreimage(tk) },
			map[string]any{"action": tk.Action, "action_digest": tk.ActionDigest, "assessed_risk": tk.AssessedRisk,
				"confirmation_received": tk.ConfirmationReceived, "confirmation_required": tk.ConfirmationRequired,
				"constraints": cs, "declared_risk": tk.DeclaredRisk, "destination": tk.Destination, "kind": "ActionTicketPreimage",
				"missing_fields": anyStrings(tk.MissingFields), "preview_digest": tk.PreviewDigest,
				"preview_required": tk.PreviewRequired, "preview_shown": tk.PreviewShown, "scope": tk.Scope,
				"side_effects": []any{string(tk.SideEffects[0])}, "ticket_completeness": tk.Completeness,
				"ticket_id": tk.TicketID, "ticket_status": tk.Status, "ticket_version": TicketVersion})
	})
}

// buildIntent's idempotency key and intent id are those of IdempotencyKey
// and the intent identity preimage over its digest string, refusals
// (an "invalid:" digest) included.
func TestBuildIntentIsIdempotencyKey(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		str := func(label string) string { return templateString(rt, label) }
		p := protocol.EffectProposal{ProposalID: str("proposal_id"), CorrelationID: str("run"), ActionDigest: str("action_digest")}
		b := protocol.StableProposalBatch{BatchID: str("batch_id")}
		s := AuthoritySnapshot{AdapterVersion: str("adapter"), AuthorityDigest: rapid.StringMatching(`sha256:[0-9a-f]{64}`).Draw(rt, "authority")}
		seq := rapid.Int64().Draw(rt, "seq")
		var approval *string
		transition := "authorize-low-risk"
		if rapid.Bool().Draw(rt, "approved") {
			a := str("approval")
			approval, transition = &a, "consume-approval"
		}
		got := buildIntent(nil, nil, &p, &b, s, seq, approval)
		key, idem := IdempotencyKey(p.CorrelationID, transition, seq, p.ActionDigest, s.AdapterVersion)
		w := pooledWriter(512)
		w.intentIdentityPreimage(approval, s.AuthorityDigest, b.BatchID, []byte(idem), p.ProposalID)
		if id := w.mustDigestAs("intent:"); got.IdempotencyKey != key || got.IntentID != id {
			rt.Fatalf("intent key %s id %s, want %s %s", got.IdempotencyKey, got.IntentID, key, id)
		}
	})
}
