package authority

// The approval context, request and approval digests, written member by
// member in key order instead of through a map and cjson's reflection.
// Each writer's bytes are what cjson.Marshal writes for the map its
// ComputeDigest builds; a string the writer cannot vouch for (ok false)
// leaves the digest to that map, whose digest or error code stands
// (TestApprovalDigestWritersAreTheMaps). Given a decision's arena, a
// writer writes in its scratch, so that the decision's DigestMemo serves a
// preimage the decision that made the request wrote before (a grant's
// re-decision builds the same context and request again), and carves its
// digest from the arena; a nil arena is pooledWriter's.

func (c ApprovalContext) writeDigest(ar *strArena) (string, bool) {
	w := ar.writer(512)
	w.open()
	w.str("action_digest", c.ActionDigest)
	w.str("actor", c.Actor)
	w.str("approver_scope", c.ApproverScope)
	w.str("artifact_digest", c.ArtifactDigest)
	w.known("contract_version", ContractVersion)
	w.str("destination_digest", c.DestinationDigest)
	w.num("expires_at", c.ExpiresAt)
	w.known("kind", "HApprovalContext")
	w.str("nonce", c.Nonce)
	w.str("policy_version", c.PolicyVersion)
	w.str("rationale", c.Rationale)
	w.num("requested_at", c.RequestedAt)
	w.str("run_id", c.RunID)
	w.str("scope", c.Scope)
	w.str("visibility", c.Visibility)
	w.str("workflow_version", c.WorkflowVersion)
	w.close()
	d, err := w.digestIn(ar)
	return d, err == nil
}

func (q ApprovalRequest) writeDigest(ar *strArena) (string, bool) {
	w := ar.writer(640)
	w.open()
	w.str("action_digest", q.ActionDigest)
	w.str("actor", q.Actor)
	w.str("adapter_version", q.AdapterVersion)
	w.str("approver_scope", q.ApproverScope)
	w.str("artifact_digest", q.ArtifactDigest)
	w.str("authority_digest", q.AuthorityDigest)
	w.str("capability", q.Capability)
	w.str("context_digest", q.ContextDigest)
	w.known("contract_version", ContractVersion)
	w.str("destination_digest", q.DestinationDigest)
	w.num("expires_at", q.ExpiresAt)
	w.known("kind", "HApprovalRequest")
	w.str("nonce", q.Nonce)
	w.str("policy_version", q.PolicyVersion)
	w.str("proposal_id", q.ProposalID)
	w.str("rationale", q.Rationale)
	w.num("requested_at", q.RequestedAt)
	w.str("run_id", q.RunID)
	w.str("scope", q.Scope)
	w.str("visibility", q.Visibility)
	w.str("workflow_version", q.WorkflowVersion)
	w.close()
	d, err := w.digestIn(ar)
	return d, err == nil
}

func (a Approval) writeDigest(ar *strArena) (string, bool) {
	w := ar.writer(768)
	w.open()
	w.str("action_digest", a.ActionDigest)
	w.str("actor", a.Actor)
	w.str("adapter_version", a.AdapterVersion)
	w.str("approver_scope", a.ApproverScope)
	w.str("artifact_digest", a.ArtifactDigest)
	w.str("authority_digest", a.AuthorityDigest)
	w.str("capability", a.Capability)
	w.boolean("consumed", a.Consumed)
	w.str("context_digest", a.ContextDigest)
	w.known("contract_version", ContractVersion)
	w.str("decision", a.Decision)
	w.str("destination_digest", a.DestinationDigest)
	w.num("expires_at", a.ExpiresAt)
	w.num("issued_at", a.IssuedAt)
	w.str("kind", a.Kind)
	w.str("nonce", a.Nonce)
	w.str("policy_version", a.PolicyVersion)
	w.str("rationale", a.Rationale)
	w.str("request_digest", a.RequestDigest)
	w.boolean("revoked", a.Revoked)
	w.str("run_id", a.RunID)
	w.str("scope", a.Scope)
	w.str("visibility", a.Visibility)
	w.str("workflow_version", a.WorkflowVersion)
	w.close()
	d, err := recentApprovals.digest(&w, ar)
	return d, err == nil
}

// recentApprovals keeps the approvals' preimages most recently digested:
// a grant is digested when issued and again when a decision checks it.
var recentApprovals recentDigests
