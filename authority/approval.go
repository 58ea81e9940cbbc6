package authority

import (
	"slices"

	"flrh.dev/flrh/protocol"
)

// Approver is the person behind an approval, as the approvals ledger knows
// them (never as the approval claims them).
type Approver struct {
	ID     string   `json:"id"`
	Kind   string   `json:"kind"` // "human"; anything else cannot approve
	Role   string   `json:"role"` // "human_approver"
	Scopes []string `json:"scopes"`
}

// ApproverRole is the only role whose grants count.
const ApproverRole = "human_approver"

// NewApprovalContext builds and digests an approval context.
func NewApprovalContext(policyVersion, approverScope string, requestedAt int64, b Binding) ApprovalContext {
	return newApprovalContext(nil, policyVersion, approverScope, requestedAt, b)
}

// newApprovalContext is NewApprovalContext with the digest written
// through a's writer (a may be nil).
func newApprovalContext(a *strArena, policyVersion, approverScope string, requestedAt int64, b Binding) ApprovalContext {
	c := ApprovalContext{PolicyVersion: policyVersion, ApproverScope: approverScope, RequestedAt: requestedAt, Binding: b}
	c.ContextDigest = c.computeDigest(a)
	return c
}

// NewApprovalRequest builds the exact-hash approval request for a
// proposal under an authority snapshot and an approval context.
func NewApprovalRequest(p protocol.EffectProposal, s AuthoritySnapshot, c ApprovalContext) ApprovalRequest {
	return buildRequest(nil, p, s, c)
}

// Grant is what a person's "approve" produces: an approval bound to every
// member of the request.
func Grant(q ApprovalRequest, issuedAt int64) Approval {
	a := Approval{
		Kind: "HApproval", RequestDigest: q.RequestDigest, Decision: "grant", Capability: q.Capability,
		AuthorityDigest: q.AuthorityDigest, AdapterVersion: q.AdapterVersion, IssuedAt: issuedAt,
		ContextDigest: q.ContextDigest, PolicyVersion: q.PolicyVersion, ApproverScope: q.ApproverScope,
		Binding: q.Binding(),
	}
	a.ApprovalDigest = a.ComputeDigest()
	return a
}

// Ledger is the approvals ledger's view needed to judge a grant: which
// nonces were consumed (and by which approval) and which approvals were
// revoked. It is a value; Consume and Revoke return new ledgers.
type Ledger struct {
	Consumed map[string]string `json:"consumed"` // nonce -> approval digest
	Revoked  map[string]bool   `json:"revoked"`  // approval digest -> revoked
}

func (l Ledger) clone() Ledger {
	n := Ledger{Consumed: make(map[string]string, len(l.Consumed)+1), Revoked: make(map[string]bool, len(l.Revoked)+1)}
	for k, v := range l.Consumed {
		n.Consumed[k] = v
	}
	for k, v := range l.Revoked {
		n.Revoked[k] = v
	}
	return n
}

// Revoke records a revocation. Revocation is possible until the approval
// is consumed by an intent commit; after that it changes nothing (the
// effect is already committed) and is refused.
func (l Ledger) Revoke(a Approval) (Ledger, *Rejection) {
	if d, ok := l.Consumed[a.Nonce]; ok && d == a.ApprovalDigest {
		return l, reject("APPROVAL_ALREADY_CONSUMED", "/approval/consumed")
	}
	n := l.clone()
	n.Revoked[a.ApprovalDigest] = true
	return n, nil
}

// Consume marks a grant used. The runner calls Revalidate and then Consume
// inside the transaction that commits the intent, so the approval is used
// exactly once and atomically with the intent.
func (l Ledger) Consume(a Approval) (Ledger, *Rejection) {
	if _, ok := l.Consumed[a.Nonce]; ok {
		return l, reject("APPROVAL_ALREADY_CONSUMED", "/approval/nonce")
	}
	if l.Revoked[a.ApprovalDigest] {
		return l, reject("APPROVAL_REVOKED", "/approval/revoked")
	}
	n := l.clone()
	n.Consumed[a.Nonce] = a.ApprovalDigest
	return n, nil
}

// Revalidate judges a grant against the exact request the current state
// would make, the ledger, the person who issued it and the time now. The
// runner calls it when planning and again inside its commit transaction
// with the transaction's own time reading: expiry is exclusive (an approval
// is dead at expires_at). Every failure is fail-closed with its code; a
// stale grant sends the run back to PLAN_EFFECTS for a new approval.
func Revalidate(a Approval, by Approver, q ApprovalRequest, l Ledger, now int64) *Rejection {
	return revalidate(nil, a, by, q, l, now)
}

// revalidate is Revalidate with the digests written through ar's writer
// (ar may be nil).
func revalidate(ar *strArena, a Approval, by Approver, q ApprovalRequest, l Ledger, now int64) *Rejection {
	const root = "/approval"
	if a.Kind != "HApproval" {
		return reject("MALFORMED_APPROVAL", root+"/kind")
	}
	if a.ApprovalDigest != a.computeDigest(ar) {
		return reject("APPROVAL_DIGEST_MISMATCH", root+"/approval_digest")
	}
	if q.RequestDigest != q.computeDigest(ar) {
		return reject("APPROVAL_REQUEST_DRIFT", "/approval_request/request_digest")
	}
	if by.Kind != "human" || by.Role != ApproverRole {
		return &Rejection{Code: "APPROVAL_ISSUER_NOT_HUMAN", Path: root, Expected: ApproverRole, Actual: by.Role}
	}
	if by.ID != a.Actor {
		return &Rejection{Code: "APPROVAL_ACTOR_MISMATCH", Path: root + "/actor", Expected: a.Actor, Actual: by.ID}
	}
	if !slices.Contains(by.Scopes, a.ApproverScope) {
		return &Rejection{Code: "APPROVAL_SCOPE_MISMATCH", Path: root + "/approver_scope", Expected: a.ApproverScope}
	}
	if a.Decision != "grant" {
		return reject("APPROVAL_DENIED", root+"/decision")
	}
	if a.Revoked || l.Revoked[a.ApprovalDigest] {
		return reject("APPROVAL_REVOKED", root+"/revoked")
	}
	if _, used := l.Consumed[a.Nonce]; used || a.Consumed {
		return reject("APPROVAL_ALREADY_CONSUMED", root+"/consumed")
	}
	// Every bound member compared in the same order, the first mismatch
	// reported; the strings are compared as strings (boxing each pair as
	// a value of any took two allocations apiece).
	type pair struct{ field, got, want string }
	mismatch := func(field string, want, got any) *Rejection {
		return &Rejection{Code: "APPROVAL_BINDING_MISMATCH", Path: root + "/" + field, Expected: scalar(want), Actual: scalar(got)}
	}
	for _, p := range [...]pair{
		{"request_digest", a.RequestDigest, q.RequestDigest},
		{"capability", a.Capability, q.Capability},
		{"authority_digest", a.AuthorityDigest, q.AuthorityDigest},
		{"adapter_version", a.AdapterVersion, q.AdapterVersion},
		{"context_digest", a.ContextDigest, q.ContextDigest},
		{"policy_version", a.PolicyVersion, q.PolicyVersion},
		{"approver_scope", a.ApproverScope, q.ApproverScope},
		{"run_id", a.RunID, q.RunID},
		{"workflow_version", a.WorkflowVersion, q.WorkflowVersion},
		{"action_digest", a.ActionDigest, q.ActionDigest},
		{"artifact_digest", a.ArtifactDigest, q.ArtifactDigest},
		{"destination_digest", a.DestinationDigest, q.DestinationDigest},
		{"visibility", a.Visibility, q.Visibility},
		{"scope", a.Scope, q.Scope},
		{"actor", a.Actor, q.Actor},
	} {
		if p.got != p.want {
			return mismatch(p.field, p.want, p.got)
		}
	}
	if a.ExpiresAt != q.ExpiresAt {
		return mismatch("expires_at", q.ExpiresAt, a.ExpiresAt)
	}
	for _, p := range [...]pair{
		{"nonce", a.Nonce, q.Nonce},
		{"rationale", a.Rationale, q.Rationale},
	} {
		if p.got != p.want {
			return mismatch(p.field, p.want, p.got)
		}
	}
	if a.IssuedAt < q.RequestedAt || a.IssuedAt > now || now >= a.ExpiresAt {
		return &Rejection{Code: "APPROVAL_EXPIRED", Path: root + "/expires_at", Expected: a.ExpiresAt, Actual: now}
	}
	return nil
}
