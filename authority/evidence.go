package authority

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// AuthoritySnapshot is the authority evidence one proposal is judged
// under: which capability covers it, the policy's decision and the risk
// the policy assessed, for which adapter and destination, over which
// logical-time window. Authorize derives it from gates and capabilities;
// ProjectIntent receives it as supplied evidence.
type AuthoritySnapshot struct {
	Kind              string `json:"kind"`
	AuthorityVersion  string `json:"authority_version"`
	ProposalID        string `json:"proposal_id"`
	EffectType        string `json:"effect_type"`
	Capability        string `json:"capability"`
	Decision          string `json:"decision"`
	AssessedRisk      string `json:"assessed_risk"`
	AdapterVersion    string `json:"adapter_version"`
	DestinationDigest string `json:"destination_digest"`
	ValidFrom         int64  `json:"valid_from"`
	ValidUntil        int64  `json:"valid_until"`
	Revoked           bool   `json:"revoked"`
	AuthorityDigest   string `json:"authority_digest"`
}

// ComputeDigest returns the snapshot's authority digest: the snapshot
// without its digest member, bound to the contract version.
func (s AuthoritySnapshot) ComputeDigest() string { return s.computeDigest(nil) }

// computeDigest is ComputeDigest with the digest carved from a.
func (s AuthoritySnapshot) computeDigest(a *strArena) string {
	w := a.writer(768)
	w.cache = &snapshotOpenings
	s.writePreimage(&w)
	return w.mustDigestIn(a)
}

// writePreimage writes the digest's preimage: the snapshot's members but
// its digest, and the contract version, in canonical order.
func (s AuthoritySnapshot) writePreimage(w *canonWriter) {
	w.lit(`{"adapter_version":`)
	w.val(s.AdapterVersion)
	w.lit(`,"assessed_risk":`)
	w.val(s.AssessedRisk)
	w.lit(`,"authority_version":`)
	w.val(s.AuthorityVersion)
	w.lit(`,"capability":`)
	w.val(s.Capability)
	w.lit(`,"contract_version":"` + ContractVersion + `","decision":`)
	w.val(s.Decision)
	w.lit(`,"destination_digest":`)
	// The opening, what a policy's decisions under one capability for one
	// adapter and risk have in common, ends in the digest's usual prefix.
	w.opening = len(w.b) + len(`"sha256:`)
	w.val(s.DestinationDigest)
	w.lit(`,"effect_type":`)
	w.val(s.EffectType)
	w.lit(`,"kind":`)
	w.val(s.Kind)
	w.lit(`,"proposal_id":`)
	w.val(s.ProposalID)
	w.lit(`,"revoked":`)
	w.flag(s.Revoked)
	w.lit(`,"valid_from":`)
	w.int(s.ValidFrom)
	w.lit(`,"valid_until":`)
	w.int(s.ValidUntil)
	w.lit(`}`)
}

func parseSnapshot(v any, p protocol.EffectProposal, observed int64) (AuthoritySnapshot, *Rejection) {
	const root, code = "/authority_snapshot", "MALFORMED_AUTHORITY_SNAPSHOT"
	var s AuthoritySnapshot
	m, r := exact(v, snapshotKeys, code, root)
	if r != nil {
		return s, r
	}
	if r := same(m["kind"], "HAuthoritySnapshot", code, root+"/kind"); r != nil {
		return s, r
	}
	if s.AuthorityVersion, r = idField(m["authority_version"], code, root+"/authority_version"); r != nil {
		return s, r
	}
	want, r := selfDigest(m, "authority_digest")
	if r != nil {
		return s, r
	}
	if r := same(m["authority_digest"], want, "AUTHORITY_DIGEST_MISMATCH", root+"/authority_digest"); r != nil {
		return s, r
	}
	s.Kind, s.AuthorityDigest = "HAuthoritySnapshot", want
	for _, b := range []struct {
		key  string
		want string
		code string
	}{
		{"proposal_id", p.ProposalID, "AUTHORITY_BINDING_MISMATCH"},
		{"effect_type", p.EffectType, "AUTHORITY_BINDING_MISMATCH"},
		{"destination_digest", p.DestinationDigest, "AUTHORITY_BINDING_MISMATCH"},
		{"adapter_version", p.Versions.Tool, "ADAPTER_VERSION_MISMATCH"},
	} {
		if r := same(m[b.key], b.want, b.code, root+"/"+b.key); r != nil {
			return s, r
		}
	}
	s.ProposalID, s.EffectType, s.DestinationDigest, s.AdapterVersion = p.ProposalID, p.EffectType, p.DestinationDigest, p.Versions.Tool
	switch m["decision"] {
	case "allow":
		s.Decision = "allow"
	case "deny":
		return s, reject("AUTHORITY_DENIED", root+"/decision")
	default:
		return s, reject("AUTHORITY_AMBIGUOUS", root+"/decision")
	}
	if m["revoked"] != false {
		return s, reject("AUTHORITY_REVOKED", root+"/revoked")
	}
	if s.ValidFrom, r = logicalTime(m["valid_from"], code, root+"/valid_from"); r != nil {
		return s, r
	}
	if s.ValidUntil, r = logicalTime(m["valid_until"], code, root+"/valid_until"); r != nil {
		return s, r
	}
	// The validity window is half open: valid_until itself is too late.
	if observed < s.ValidFrom || observed >= s.ValidUntil {
		return s, reject("AUTHORITY_EXPIRED", "/observed_at")
	}
	switch risk, _ := m["assessed_risk"].(string); risk {
	case RiskReadOnly, RiskReversible, RiskHighRiskExternal:
		s.AssessedRisk = risk
	default:
		return s, reject(code, root+"/assessed_risk")
	}
	if s.Capability, r = idField(m["capability"], code, root+"/capability"); r != nil {
		return s, r
	}
	return s, nil
}

// Binding is the set of eleven fields an approval is bound to (the loop
// contract's approval binding fields, in their wire spelling). Any change to
// any of them invalidates an approval.
type Binding struct {
	RunID             string `json:"run_id"`
	WorkflowVersion   string `json:"workflow_version"`
	ActionDigest      string `json:"action_digest"`
	ArtifactDigest    string `json:"artifact_digest"`
	DestinationDigest string `json:"destination_digest"`
	Visibility        string `json:"visibility"`
	Scope             string `json:"scope"`
	Actor             string `json:"actor"`
	ExpiresAt         int64  `json:"expires_at"`
	Nonce             string `json:"nonce"`
	Rationale         string `json:"rationale"`
}

func (b Binding) put(m object) {
	m["run_id"], m["workflow_version"], m["action_digest"] = b.RunID, b.WorkflowVersion, b.ActionDigest
	m["artifact_digest"], m["destination_digest"], m["visibility"] = b.ArtifactDigest, b.DestinationDigest, b.Visibility
	m["scope"], m["actor"], m["expires_at"] = b.Scope, b.Actor, b.ExpiresAt
	m["nonce"], m["rationale"] = b.Nonce, b.Rationale
}

// ApprovalContext is what the policy says a person must approve: the
// approval policy, who may approve, when it was asked and the eleven bound
// fields.
type ApprovalContext struct {
	PolicyVersion string
	ApproverScope string
	RequestedAt   int64
	Binding
	ContextDigest string
}

func (c ApprovalContext) object() object {
	m := object{"kind": "HApprovalContext", "policy_version": c.PolicyVersion, "approver_scope": c.ApproverScope, "requested_at": c.RequestedAt}
	c.Binding.put(m)
	return m
}

// ComputeDigest returns the context digest over the context's fields.
func (c ApprovalContext) ComputeDigest() string { return c.computeDigest(nil) }

// computeDigest is ComputeDigest written through a's writer.
func (c ApprovalContext) computeDigest(a *strArena) string {
	if d, ok := c.writeDigest(a); ok {
		return d
	}
	return c.mapDigest()
}

// mapDigest is ComputeDigest through the map and cjson: the definition
// writeDigest is held to, and the answer where it cannot vouch for a string.
func (c ApprovalContext) mapDigest() string {
	m := c.object()
	m["contract_version"] = ContractVersion
	return mustDigest(m)
}

// Wire renders the context as the reference's HApprovalContext object.
func (c ApprovalContext) Wire() map[string]any {
	m := c.object()
	m["context_digest"] = c.ContextDigest
	return m
}

func parseContext(v any, at int64, p protocol.EffectProposal) (ApprovalContext, *Rejection) {
	const root, code = "/approval_context", "MALFORMED_APPROVAL_CONTEXT"
	var c ApprovalContext
	m, r := exact(v, contextKeys, code, root)
	if r != nil {
		return c, r
	}
	if r := same(m["kind"], "HApprovalContext", code, root+"/kind"); r != nil {
		return c, r
	}
	want, r := selfDigest(m, "context_digest")
	if r != nil {
		return c, r
	}
	if r := same(m["context_digest"], want, "APPROVAL_CONTEXT_DIGEST_MISMATCH", root+"/context_digest"); r != nil {
		return c, r
	}
	c.ContextDigest = want
	if c.RequestedAt, r = logicalTime(m["requested_at"], code, root+"/requested_at"); r != nil {
		return c, r
	}
	if c.ExpiresAt, r = logicalTime(m["expires_at"], code, root+"/expires_at"); r != nil {
		return c, r
	}
	if c.RequestedAt != at || c.ExpiresAt <= c.RequestedAt {
		return c, reject("APPROVAL_TIME_DRIFT", root)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"policy_version", &c.PolicyVersion}, {"approver_scope", &c.ApproverScope}, {"run_id", &c.RunID}, {"workflow_version", &c.WorkflowVersion}, {"visibility", &c.Visibility}, {"scope", &c.Scope}, {"actor", &c.Actor}, {"nonce", &c.Nonce}, {"rationale", &c.Rationale}} {
		if *f.dst, r = idField(m[f.key], code, root+"/"+f.key); r != nil {
			return c, r
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"action_digest", &c.ActionDigest}, {"artifact_digest", &c.ArtifactDigest}, {"destination_digest", &c.DestinationDigest}} {
		if *f.dst, r = digestField(m[f.key], code, root+"/"+f.key); r != nil {
			return c, r
		}
	}
	for _, b := range []struct{ key, got, want string }{
		{"run_id", c.RunID, p.CorrelationID},
		{"workflow_version", c.WorkflowVersion, p.Versions.Workflow},
		{"action_digest", c.ActionDigest, p.ActionDigest},
		{"destination_digest", c.DestinationDigest, p.DestinationDigest},
	} {
		if b.got != b.want {
			return c, &Rejection{Code: "APPROVAL_CONTEXT_BINDING_MISMATCH", Path: root + "/" + b.key, Expected: b.want, Actual: b.got}
		}
	}
	return c, nil
}

// ApprovalRequest asks a person for one exact-hash approval. Its digest
// binds the proposal, the authority, the adapter and the whole context.
type ApprovalRequest struct {
	Kind              string `json:"kind"`
	RequestID         string `json:"request_id"`
	ProposalID        string `json:"proposal_id"`
	Capability        string `json:"capability"`
	AuthorityDigest   string `json:"authority_digest"`
	AdapterVersion    string `json:"adapter_version"`
	RequestedAt       int64  `json:"requested_at"`
	ContextDigest     string `json:"context_digest"`
	PolicyVersion     string `json:"policy_version"`
	ApproverScope     string `json:"approver_scope"`
	RunID             string `json:"run_id"`
	WorkflowVersion   string `json:"workflow_version"`
	ActionDigest      string `json:"action_digest"`
	ArtifactDigest    string `json:"artifact_digest"`
	DestinationDigest string `json:"destination_digest"`
	Visibility        string `json:"visibility"`
	Scope             string `json:"scope"`
	Actor             string `json:"actor"`
	ExpiresAt         int64  `json:"expires_at"`
	Nonce             string `json:"nonce"`
	Rationale         string `json:"rationale"`
	RequestDigest     string `json:"request_digest"`
}

// Binding returns the request's eleven bound fields.
func (q ApprovalRequest) Binding() Binding {
	return Binding{q.RunID, q.WorkflowVersion, q.ActionDigest, q.ArtifactDigest, q.DestinationDigest, q.Visibility, q.Scope, q.Actor, q.ExpiresAt, q.Nonce, q.Rationale}
}

func (q ApprovalRequest) core() object {
	m := object{"kind": "HApprovalRequest", "proposal_id": q.ProposalID, "capability": q.Capability, "authority_digest": q.AuthorityDigest, "adapter_version": q.AdapterVersion, "requested_at": q.RequestedAt, "context_digest": q.ContextDigest, "policy_version": q.PolicyVersion, "approver_scope": q.ApproverScope}
	q.Binding().put(m)
	return m
}

func (q ApprovalRequest) object() object {
	m := q.core()
	m["request_id"], m["request_digest"] = q.RequestID, q.RequestDigest
	return m
}

// ComputeDigest returns the request digest over every member but the
// request id and the digest itself.
func (q ApprovalRequest) ComputeDigest() string { return q.computeDigest(nil) }

// computeDigest is ComputeDigest written through a's writer.
func (q ApprovalRequest) computeDigest(a *strArena) string {
	if d, ok := q.writeDigest(a); ok {
		return d
	}
	return q.mapDigest()
}

// mapDigest is ComputeDigest through the map and cjson: the definition
// writeDigest is held to, and the answer where it cannot vouch for a string.
func (q ApprovalRequest) mapDigest() string {
	m := q.core()
	m["contract_version"] = ContractVersion
	return mustDigest(m)
}

// buildRequest builds a request and its digest, written through a's
// writer (a may be nil).
func buildRequest(a *strArena, p protocol.EffectProposal, s AuthoritySnapshot, c ApprovalContext) ApprovalRequest {
	q := ApprovalRequest{
		Kind: "HApprovalRequest", ProposalID: p.ProposalID, Capability: s.Capability,
		AuthorityDigest: s.AuthorityDigest, AdapterVersion: s.AdapterVersion, RequestedAt: c.RequestedAt,
		ContextDigest: c.ContextDigest, PolicyVersion: c.PolicyVersion, ApproverScope: c.ApproverScope,
		RunID: c.RunID, WorkflowVersion: c.WorkflowVersion, ActionDigest: c.ActionDigest,
		ArtifactDigest: c.ArtifactDigest, DestinationDigest: c.DestinationDigest, Visibility: c.Visibility,
		Scope: c.Scope, Actor: c.Actor, ExpiresAt: c.ExpiresAt, Nonce: c.Nonce, Rationale: c.Rationale,
	}
	q.RequestDigest = q.computeDigest(a)
	q.RequestID = "approval-request:" + hexOf(q.RequestDigest)
	return q
}

// Approval is a person's decision on one approval request ("grant" or
// "deny"), bound to the request digest, the authority and all eleven
// fields. Revoked and Consumed are the ledger's view at the time of use.
type Approval struct {
	Kind            string `json:"kind"`
	RequestDigest   string `json:"request_digest"`
	Decision        string `json:"decision"`
	Capability      string `json:"capability"`
	AuthorityDigest string `json:"authority_digest"`
	AdapterVersion  string `json:"adapter_version"`
	IssuedAt        int64  `json:"issued_at"`
	Revoked         bool   `json:"revoked"`
	Consumed        bool   `json:"consumed"`
	ContextDigest   string `json:"context_digest"`
	PolicyVersion   string `json:"policy_version"`
	ApproverScope   string `json:"approver_scope"`
	Binding
	ApprovalDigest string `json:"approval_digest"`
}

func (a Approval) core() object {
	m := object{"kind": a.Kind, "request_digest": a.RequestDigest, "decision": a.Decision, "capability": a.Capability, "authority_digest": a.AuthorityDigest, "adapter_version": a.AdapterVersion, "issued_at": a.IssuedAt, "revoked": a.Revoked, "consumed": a.Consumed, "context_digest": a.ContextDigest, "policy_version": a.PolicyVersion, "approver_scope": a.ApproverScope}
	a.Binding.put(m)
	return m
}

// Wire renders the approval as the reference's HApproval object.
func (a Approval) Wire() map[string]any {
	m := a.core()
	m["approval_digest"] = a.ApprovalDigest
	return m
}

// ComputeDigest returns the approval digest over every other member.
func (a Approval) ComputeDigest() string { return a.computeDigest(nil) }

// computeDigest is ComputeDigest written through ar's writer.
func (a Approval) computeDigest(ar *strArena) string {
	if d, ok := a.writeDigest(ar); ok {
		return d
	}
	return a.mapDigest()
}

// mapDigest is ComputeDigest through the map and cjson: the definition
// writeDigest is held to, and the answer where it cannot vouch for a string.
func (a Approval) mapDigest() string {
	m := a.core()
	m["contract_version"] = ContractVersion
	return mustDigest(m)
}

// parseGrant checks a supplied approval against the request it must
// answer, fail closed, in a fixed order so every tampering has one code.
func parseGrant(v any, q ApprovalRequest, s AuthoritySnapshot, c ApprovalContext, now int64) (Approval, *Rejection) {
	const root, code = "/approval", "MALFORMED_APPROVAL"
	var a Approval
	m, r := exact(v, approvalKeys, code, root)
	if r != nil {
		return a, r
	}
	if r := same(m["kind"], "HApproval", code, root+"/kind"); r != nil {
		return a, r
	}
	want, r := selfDigest(m, "approval_digest")
	if r != nil {
		return a, r
	}
	if r := same(m["approval_digest"], want, "APPROVAL_DIGEST_MISMATCH", root+"/approval_digest"); r != nil {
		return a, r
	}
	if m["decision"] != "grant" {
		return a, reject("APPROVAL_DENIED", root+"/decision")
	}
	if m["revoked"] != false {
		return a, reject("APPROVAL_REVOKED", root+"/revoked")
	}
	if m["consumed"] != false {
		return a, reject("APPROVAL_ALREADY_CONSUMED", root+"/consumed")
	}
	bound := object{"request_digest": q.RequestDigest, "capability": s.Capability, "authority_digest": s.AuthorityDigest, "adapter_version": s.AdapterVersion, "context_digest": c.ContextDigest, "policy_version": c.PolicyVersion, "approver_scope": c.ApproverScope}
	c.Binding.put(bound)
	for _, k := range []string{"request_digest", "capability", "authority_digest", "adapter_version", "context_digest", "policy_version", "approver_scope"} {
		if r := same(m[k], bound[k], "APPROVAL_BINDING_MISMATCH", root+"/"+k); r != nil {
			return a, r
		}
	}
	for _, k := range loopBindingKeys {
		if r := same(m[k], bound[k], "APPROVAL_BINDING_MISMATCH", root+"/"+k); r != nil {
			return a, r
		}
	}
	if a.IssuedAt, r = logicalTime(m["issued_at"], code, root+"/issued_at"); r != nil {
		return a, r
	}
	// Live means issued inside [requested_at, now] and now strictly before
	// the bound expiry: an approval is dead at its expiry instant.
	if a.IssuedAt < c.RequestedAt || a.IssuedAt > now || now >= c.ExpiresAt {
		return a, reject("APPROVAL_EXPIRED", root+"/expires_at")
	}
	a = Approval{
		Kind: "HApproval", RequestDigest: q.RequestDigest, Decision: "grant", Capability: s.Capability,
		AuthorityDigest: s.AuthorityDigest, AdapterVersion: s.AdapterVersion, IssuedAt: a.IssuedAt,
		ContextDigest: c.ContextDigest, PolicyVersion: c.PolicyVersion, ApproverScope: c.ApproverScope,
		Binding: c.Binding, ApprovalDigest: want,
	}
	return a, nil
}

// IdempotencyKey derives the effect idempotency key from the loop
// contract's tuple (run id, transition id, effect sequence, action digest,
// adapter version). It returns the key and the digest it was cut from.
func IdempotencyKey(runID, transitionID string, sequence int64, actionDigest, adapterVersion string) (key, digest string) {
	w := pooledWriter(384)
	w.idempotencyPreimage(runID, transitionID, sequence, actionDigest, adapterVersion)
	digest = w.mustDigest()
	return "effect:" + hexOf(digest), digest
}

// idempotencyPreimage writes the loop contract's idempotency tuple.
func (w *canonWriter) idempotencyPreimage(runID, transitionID string, sequence int64, actionDigest, adapterVersion string) {
	w.lit(`{"action_digest":`)
	w.val(actionDigest)
	w.lit(`,"adapter_version":`)
	w.val(adapterVersion)
	w.lit(`,"contract_version":"` + ContractVersion + `","effect_sequence":`)
	w.int(sequence)
	w.lit(`,"kind":"M4AIdempotencyPreimage","run_id":`)
	w.val(runID)
	w.lit(`,"transition_id":`)
	w.val(transitionID)
	w.lit(`}`)
}

// buildIntent builds the intent of a proposal. Its preconditions are
// appended to pre (nil, or an empty slice with room for them); none are
// nil, as always.
func buildIntent(a *strArena, pre []string, p *protocol.EffectProposal, b *protocol.StableProposalBatch, s AuthoritySnapshot, sequence int64, approvalDigest *string) protocol.EffectIntent {
	transition := "authorize-low-risk"
	if approvalDigest != nil {
		transition = "consume-approval"
	}
	// IdempotencyKey without the digest as a string: the intent id binds
	// its bytes, and only the key is kept.
	iw := a.writer(384)
	iw.idempotencyPreimage(p.CorrelationID, transition, sequence, p.ActionDigest, s.AdapterVersion)
	var idem []byte
	var key string
	if sum, err := iw.sum(); err != nil {
		d := invalidDigest(err)
		idem, key = []byte(d), "effect:"+hexOf(d)
	} else {
		idem, key = sum[:], a.concat("effect:", sum[len("sha256:"):])
	}
	w := a.writer(512)
	w.intentIdentityPreimage(approvalDigest, s.AuthorityDigest, b.BatchID, idem, p.ProposalID)
	intentID := w.mustDigestAsIn(a, "intent:")
	if len(p.Preconditions) == 0 {
		pre = nil
	} else {
		pre = append(pre[:0], p.Preconditions...)
	}
	sortStrings(pre)
	return protocol.EffectIntent{
		Kind: "EffectIntent", IntentID: intentID, ProposalID: p.ProposalID,
		BatchID: b.BatchID, EffectType: p.EffectType, ActionDigest: p.ActionDigest, Capability: s.Capability,
		AuthorityDigest: s.AuthorityDigest, CauseID: p.CauseID, CorrelationID: p.CorrelationID,
		IdempotencyKey: key, DestinationDigest: p.DestinationDigest, GoalID: p.GoalID,
		ObligationID: p.ObligationID, AdapterVersion: s.AdapterVersion, AssessedRisk: s.AssessedRisk,
		ApprovalRequired: approvalDigest != nil, ApprovalDigest: approvalDigest,
		Preconditions: pre, Versions: p.Versions,
	}
}

// intentIdentityPreimage writes what an intent id binds: the approval it
// consumes (or null), the authority, the batch, the idempotency digest and
// the proposal.
func (w *canonWriter) intentIdentityPreimage(approvalDigest *string, authorityDigest, batchID string, idempotencyDigest []byte, proposalID string) {
	if approvalDigest == nil {
		w.lit(`{"approval_digest":null`)
	} else {
		w.lit(`{"approval_digest":`)
		w.val(*approvalDigest)
	}
	w.lit(`,"authority_digest":`)
	w.ours(authorityDigest) // ComputeDigest's, or parseSnapshot's recomputed one
	w.lit(`,"batch_id":`)
	w.val(batchID)
	w.lit(`,"contract_version":"` + ContractVersion + `","idempotency_digest":`)
	w.oursBytes(idempotencyDigest) // IdempotencyKey's
	w.lit(`,"kind":"M4AIntentIdentityPreimage","proposal_id":`)
	w.val(proposalID)
	w.lit(`}`)
}

// policyVerdictPreimage writes the policy-verdict evidence: the R profile,
// the whole eligibility verdict and the authority's decision, digest and
// assessed risk.
func (w *canonWriter) policyVerdictPreimage(profile string, v protocol.EligibilityVerdict, s AuthoritySnapshot) {
	w.from = verdictMidstate(s.AssessedRisk)
	w.lit(`{"assessed_risk":`)
	w.val(s.AssessedRisk)
	w.lit(`,"authority_decision":`)
	w.val(s.Decision)
	w.lit(`,"authority_digest":`)
	w.ours(s.AuthorityDigest) // Authorize's own ComputeDigest
	w.lit(`,"contract_version":"` + ContractVersion + `","eligibility_verdict":`)
	if enc, ok := w.home.keptEncoding(&v); ok {
		w.set(append(w.b, enc...))
	} else {
		w.verdict(v)
	}
	w.lit(`,"kind":"M4APolicyVerdictEvidencePreimage","r_profile_digest":`)
	w.val(profile)
	w.lit(`}`)
}

func policyVerdictDigest(profile string, verdict any, s AuthoritySnapshot) string {
	return mustDigest(object{
		"kind": "M4APolicyVerdictEvidencePreimage", "contract_version": ContractVersion,
		"r_profile_digest": profile, "eligibility_verdict": verdict,
		"authority_decision": s.Decision, "authority_digest": s.AuthorityDigest, "assessed_risk": s.AssessedRisk,
	})
}

func capabilityEvidenceDigest(a *strArena, p *protocol.EffectProposal, s *AuthoritySnapshot) string {
	w := a.writer(640)
	w.capabilityEvidencePreimage(p, s)
	return w.mustDigestIn(a)
}

// capabilityEvidencePreimage writes the capability evidence: the
// capability, the authority, and the proposal's action, destination and
// adapter.
func (w *canonWriter) capabilityEvidencePreimage(p *protocol.EffectProposal, s *AuthoritySnapshot) {
	w.lit(`{"action_digest":`)
	w.val(p.ActionDigest)
	w.lit(`,"adapter_version":`)
	w.val(s.AdapterVersion)
	w.lit(`,"authority_digest":`)
	w.ours(s.AuthorityDigest) // ComputeDigest's, or parseSnapshot's recomputed one
	w.lit(`,"capability":`)
	w.val(s.Capability)
	w.lit(`,"contract_version":"` + ContractVersion + `","destination_digest":`)
	w.val(p.DestinationDigest)
	w.lit(`,"effect_type":`)
	w.val(p.EffectType)
	w.lit(`,"kind":"M4ACapabilityEvidencePreimage","proposal_id":`)
	w.val(p.ProposalID)
	w.lit(`}`)
}

var _ = cjson.Digest
