package authority

import (
	"strings"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

func approvalFixture() (protocol.EffectProposal, AuthoritySnapshot, ApprovalRequest, Approver) {
	p := protocol.EffectProposal{
		Kind: "EffectProposal", ProposalID: "proposal:1", EffectType: "payment.send",
		ActionDigest: "sha256:" + strings.Repeat("1", 64), CorrelationID: "run:1",
		DestinationDigest: "sha256:" + strings.Repeat("2", 64),
		Versions:          protocol.VersionEnvelope{Workflow: "wf/1", Tool: "pay/1"},
	}
	s := AuthoritySnapshot{Kind: "HAuthoritySnapshot", AuthorityVersion: "authority/1", ProposalID: p.ProposalID,
		EffectType: p.EffectType, Capability: "capability:pay", Decision: "allow", AssessedRisk: RiskHighRiskExternal,
		AdapterVersion: "pay/1", DestinationDigest: p.DestinationDigest, ValidFrom: 0, ValidUntil: 1000}
	s.AuthorityDigest = s.ComputeDigest()
	c := NewApprovalContext("approval-policy/1", "scope:payers", 100, Binding{
		RunID: "run:1", WorkflowVersion: "wf/1", ActionDigest: p.ActionDigest,
		ArtifactDigest: "sha256:" + strings.Repeat("3", 64), DestinationDigest: p.DestinationDigest,
		Visibility: "visibility:external", Scope: "scope:team", Actor: "actor:alice", ExpiresAt: 200,
		Nonce: "nonce:1", Rationale: "rationale:rent",
	})
	return p, s, NewApprovalRequest(p, s, c), Approver{ID: "actor:alice", Kind: "human", Role: ApproverRole, Scopes: []string{"scope:payers"}}
}

func TestApprovalGrantRevalidates(t *testing.T) {
	_, _, q, alice := approvalFixture()
	a := Grant(q, 110)
	if r := Revalidate(a, alice, q, Ledger{}, 150); r != nil {
		t.Fatal(r)
	}
	if !strings.HasPrefix(q.RequestID, "approval-request:") || q.RequestDigest != q.ComputeDigest() {
		t.Fatal("request identity is not its digest")
	}
}

// The tamper suite: every case fails closed with its own code.
func TestApprovalTamperSuite(t *testing.T) {
	p, s, q, alice := approvalFixture()
	good := Grant(q, 110)
	redig := func(a Approval) Approval { a.ApprovalDigest = a.ComputeDigest(); return a }
	type tc struct {
		name string
		a    Approval
		by   Approver
		q    ApprovalRequest
		l    Ledger
		now  int64
		code string
	}
	cases := []tc{}
	// Mutate each bound field (re-digested, so only the binding catches it).
	bound := map[string]func(*Approval){
		"run_id":             func(a *Approval) { a.RunID = "run:2" },
		"workflow_version":   func(a *Approval) { a.WorkflowVersion = "wf/2" },
		"action_digest":      func(a *Approval) { a.ActionDigest = "sha256:" + strings.Repeat("9", 64) },
		"artifact_digest":    func(a *Approval) { a.ArtifactDigest = "sha256:" + strings.Repeat("9", 64) },
		"destination_digest": func(a *Approval) { a.DestinationDigest = "sha256:" + strings.Repeat("9", 64) },
		"visibility":         func(a *Approval) { a.Visibility = "visibility:internal" },
		"scope":              func(a *Approval) { a.Scope = "scope:org" },
		"actor":              func(a *Approval) { a.Actor = "actor:mallory" },
		"expires_at":         func(a *Approval) { a.ExpiresAt = 10_000 },
		"nonce":              func(a *Approval) { a.Nonce = "nonce:other" },
		"rationale":          func(a *Approval) { a.Rationale = "rationale:other" },
		"request_digest":     func(a *Approval) { a.RequestDigest = "sha256:" + strings.Repeat("8", 64) },
		"capability":         func(a *Approval) { a.Capability = "capability:other" },
		"authority_digest":   func(a *Approval) { a.AuthorityDigest = "sha256:" + strings.Repeat("7", 64) },
		"adapter_version":    func(a *Approval) { a.AdapterVersion = "pay/2" },
		"context_digest":     func(a *Approval) { a.ContextDigest = "sha256:" + strings.Repeat("6", 64) },
		"policy_version":     func(a *Approval) { a.PolicyVersion = "approval-policy/2" },
	}
	for _, field := range sortedKeys(bound) {
		a := good
		bound[field](&a)
		by := alice
		if field == "actor" {
			by.ID = a.Actor // even the named actor cannot carry a drifted binding
		}
		cases = append(cases, tc{"bound " + field, redig(a), by, q, Ledger{}, 150, "APPROVAL_BINDING_MISMATCH"})
		// Without re-digesting, the digest itself gives it away.
		cases = append(cases, tc{"raw " + field, a, alice, q, Ledger{}, 150, "APPROVAL_DIGEST_MISMATCH"})
	}
	consumed, _ := Ledger{}.Consume(good)
	revoked, _ := Ledger{}.Revoke(good)
	// A grant for another run: the current request is for run 2.
	c2 := NewApprovalContext(q.PolicyVersion, q.ApproverScope, q.RequestedAt, func() Binding { b := q.Binding(); b.RunID = "run:2"; return b }())
	q2 := NewApprovalRequest(p, s, c2)
	c3 := NewApprovalContext(q.PolicyVersion, q.ApproverScope, q.RequestedAt, func() Binding { b := q.Binding(); b.WorkflowVersion = "wf/2"; return b }())
	q3 := NewApprovalRequest(p, s, c3)
	drifted := q
	drifted.Nonce = "nonce:drift"
	denied := good
	denied.Decision = "deny"
	flagged := good
	flagged.Revoked = true
	model := alice
	model.Kind = "model"
	clerk := alice
	clerk.Role = "operator"
	stranger := alice
	stranger.ID = "actor:bob"
	outOfScope := alice
	outOfScope.Scopes = []string{"scope:other"}
	early := good
	early.IssuedAt = 90
	future := good
	future.IssuedAt = 160
	cases = append(cases,
		tc{"consumed nonce replayed", good, alice, q, consumed, 150, "APPROVAL_ALREADY_CONSUMED"},
		tc{"revoked in the ledger", good, alice, q, revoked, 150, "APPROVAL_REVOKED"},
		tc{"revoked flag", redig(flagged), alice, q, Ledger{}, 150, "APPROVAL_REVOKED"},
		tc{"denied", redig(denied), alice, q, Ledger{}, 150, "APPROVAL_DENIED"},
		tc{"expired exactly at the boundary", good, alice, q, Ledger{}, 200, "APPROVAL_EXPIRED"},
		tc{"after expiry", good, alice, q, Ledger{}, 201, "APPROVAL_EXPIRED"},
		tc{"issued before the request", redig(early), alice, q, Ledger{}, 150, "APPROVAL_EXPIRED"},
		tc{"issued in the future", redig(future), alice, q, Ledger{}, 150, "APPROVAL_EXPIRED"},
		tc{"grant for another run", good, alice, q2, Ledger{}, 150, "APPROVAL_BINDING_MISMATCH"},
		tc{"grant for another workflow version", good, alice, q3, Ledger{}, 150, "APPROVAL_BINDING_MISMATCH"},
		tc{"request drifted under the grant", good, alice, drifted, Ledger{}, 150, "APPROVAL_REQUEST_DRIFT"},
		tc{"minted by a model", good, model, q, Ledger{}, 150, "APPROVAL_ISSUER_NOT_HUMAN"},
		tc{"minted by a non-approver role", good, clerk, q, Ledger{}, 150, "APPROVAL_ISSUER_NOT_HUMAN"},
		tc{"issued by someone else", good, stranger, q, Ledger{}, 150, "APPROVAL_ACTOR_MISMATCH"},
		tc{"approver outside the scope", good, outOfScope, q, Ledger{}, 150, "APPROVAL_SCOPE_MISMATCH"},
	)
	for _, c := range cases {
		r := Revalidate(c.a, c.by, c.q, c.l, c.now)
		if r == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if r.Code != c.code {
			t.Errorf("%s: %s at %s, want %s", c.name, r.Code, r.Path, c.code)
		}
	}
	// One instant before expiry is still live.
	if r := Revalidate(good, alice, q, Ledger{}, 199); r != nil {
		t.Errorf("live one tick before expiry: %v", r)
	}
}

func TestApprovalOneTimeAndRevocableUntilCommit(t *testing.T) {
	_, _, q, alice := approvalFixture()
	a := Grant(q, 110)
	l, r := Ledger{}.Consume(a)
	if r != nil {
		t.Fatal(r)
	}
	if _, r := l.Consume(a); r == nil || r.Code != "APPROVAL_ALREADY_CONSUMED" {
		t.Fatalf("second consumption: %v", r)
	}
	if _, r := l.Revoke(a); r == nil {
		t.Fatal("revoked after the commit consumed it")
	}
	// Revoked before commit: consumption and revalidation both refuse.
	l2, _ := Ledger{}.Revoke(a)
	if _, r := l2.Consume(a); r == nil || r.Code != "APPROVAL_REVOKED" {
		t.Fatalf("consume after revoke: %v", r)
	}
	if r := Revalidate(a, alice, q, l2, 150); r == nil || r.Code != "APPROVAL_REVOKED" {
		t.Fatalf("revalidate after revoke: %v", r)
	}
	// The ledger is a value: the original is unchanged.
	if len(Ledger{}.Consumed) != 0 || l2.Consumed[a.Nonce] != "" {
		t.Fatal("ledger operations leaked")
	}
}

// Property: a grant revalidates exactly when now lies in [issued_at,
// expires_at) — expiry exclusive.
func TestApprovalWindowRapid(t *testing.T) {
	_, _, q, alice := approvalFixture()
	rapid.Check(t, func(rt *rapid.T) {
		issued := rapid.Int64Range(q.RequestedAt, q.ExpiresAt+10).Draw(rt, "issued")
		now := rapid.Int64Range(0, q.ExpiresAt+20).Draw(rt, "now")
		r := Revalidate(Grant(q, issued), alice, q, Ledger{}, now)
		live := issued <= now && now < q.ExpiresAt
		if live != (r == nil) {
			rt.Fatalf("issued %d now %d expires %d: live=%v got %v", issued, now, q.ExpiresAt, live, r)
		}
	})
}

// TestRevalidateNamesTheFirstBindingMismatch changes bound members from
// each one to the last (re-digested) and holds the rejection to the first
// of them in the order Revalidate compares them: its path, the request's
// value expected, the approval's found.
func TestRevalidateNamesTheFirstBindingMismatch(t *testing.T) {
	_, _, q, alice := approvalFixture()
	good := Grant(q, 110)
	order := []struct {
		field  string
		change func(*Approval)
		value  func(a Approval) any
	}{
		{"request_digest", func(a *Approval) { a.RequestDigest = "sha256:" + strings.Repeat("8", 64) }, func(a Approval) any { return a.RequestDigest }},
		{"capability", func(a *Approval) { a.Capability = "capability:other" }, func(a Approval) any { return a.Capability }},
		{"authority_digest", func(a *Approval) { a.AuthorityDigest = "sha256:" + strings.Repeat("7", 64) }, func(a Approval) any { return a.AuthorityDigest }},
		{"adapter_version", func(a *Approval) { a.AdapterVersion = "pay/2" }, func(a Approval) any { return a.AdapterVersion }},
		{"context_digest", func(a *Approval) { a.ContextDigest = "sha256:" + strings.Repeat("6", 64) }, func(a Approval) any { return a.ContextDigest }},
		{"policy_version", func(a *Approval) { a.PolicyVersion = "approval-policy/2" }, func(a Approval) any { return a.PolicyVersion }},
		{"approver_scope", func(a *Approval) { a.ApproverScope = "scope:other" }, func(a Approval) any { return a.ApproverScope }},
		{"run_id", func(a *Approval) { a.RunID = "run:2" }, func(a Approval) any { return a.RunID }},
		{"workflow_version", func(a *Approval) { a.WorkflowVersion = "wf/2" }, func(a Approval) any { return a.WorkflowVersion }},
		{"action_digest", func(a *Approval) { a.ActionDigest = "sha256:" + strings.Repeat("9", 64) }, func(a Approval) any { return a.ActionDigest }},
		{"artifact_digest", func(a *Approval) { a.ArtifactDigest = "sha256:" + strings.Repeat("9", 64) }, func(a Approval) any { return a.ArtifactDigest }},
		{"destination_digest", func(a *Approval) { a.DestinationDigest = "sha256:" + strings.Repeat("9", 64) }, func(a Approval) any { return a.DestinationDigest }},
		{"visibility", func(a *Approval) { a.Visibility = "visibility:internal" }, func(a Approval) any { return a.Visibility }},
		{"scope", func(a *Approval) { a.Scope = "scope:org" }, func(a Approval) any { return a.Scope }},
		{"actor", func(a *Approval) { a.Actor = "actor:mallory" }, func(a Approval) any { return a.Actor }},
		{"expires_at", func(a *Approval) { a.ExpiresAt = 10_000 }, func(a Approval) any { return a.ExpiresAt }},
		{"nonce", func(a *Approval) { a.Nonce = "nonce:other" }, func(a Approval) any { return a.Nonce }},
		{"rationale", func(a *Approval) { a.Rationale = "rationale:other" }, func(a Approval) any { return a.Rationale }},
	}
	want := good // a grant carries the request's value of every bound member
	for i, first := range order {
		a := good
		for _, later := range order[i:] {
			later.change(&a)
		}
		a.ApprovalDigest = a.ComputeDigest()
		by := alice
		by.ID = a.Actor
		by.Scopes = []string{a.ApproverScope}
		r := Revalidate(a, by, q, Ledger{}, 150)
		if r == nil || r.Code != "APPROVAL_BINDING_MISMATCH" || r.Path != "/approval/"+first.field {
			t.Errorf("%s onwards changed: %+v", first.field, r)
			continue
		}
		if r.Expected != first.value(want) || r.Actual != first.value(a) {
			t.Errorf("%s: expected %#v, actual %#v; want %#v and %#v", first.field, r.Expected, r.Actual, first.value(want), first.value(a))
		}
	}
}
