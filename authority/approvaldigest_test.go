package authority

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// The approval context, request and approval digests written member by
// member are the digests of the maps cjson encodes, for plain strings and
// for strings with escapes, non-ASCII text, text outside NFC and invalid
// UTF-8 (where the writer must either agree or leave the digest to the
// map); with every string plain the writer must answer itself.
func TestApprovalDigestWritersAreTheMaps(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		plain := true
		str := func(label string) string {
			s := rapid.OneOf(
				rapid.SampledFrom([]string{"", "run-1", "sha256:00ff", "scope:refunds", "operator", "HApproval", "grant"}),
				rapid.StringMatching(`[a-z:_0-9-]{0,12}`),
				rapid.SampledFrom([]string{"a\"b", "back\\slash", "line\nbreak", "\u0001", "é", "e\u0301", "\xff", "\u2028", "Kelvin \u212a"}),
			).Draw(rt, label)
			plain = plain && cjson.Plain(s)
			return s
		}
		num := func(label string) int64 { return rapid.Int64().Draw(rt, label) }
		b := Binding{RunID: str("run"), WorkflowVersion: str("wv"), ActionDigest: str("ad"), ArtifactDigest: str("art"),
			DestinationDigest: str("dd"), Visibility: str("vis"), Scope: str("scope"), Actor: str("actor"), ExpiresAt: num("exp"),
			Nonce: str("nonce"), Rationale: str("why")}
		c := ApprovalContext{PolicyVersion: str("pv"), ApproverScope: str("as"), RequestedAt: num("at"), Binding: b}
		q := ApprovalRequest{Kind: "HApprovalRequest", RequestID: str("rid"), ProposalID: str("pid"), Capability: str("cap"),
			AuthorityDigest: str("authd"), AdapterVersion: str("adv"), RequestedAt: num("qat"), ContextDigest: str("cd"),
			PolicyVersion: c.PolicyVersion, ApproverScope: c.ApproverScope, RunID: b.RunID, WorkflowVersion: b.WorkflowVersion,
			ActionDigest: b.ActionDigest, ArtifactDigest: b.ArtifactDigest, DestinationDigest: b.DestinationDigest,
			Visibility: b.Visibility, Scope: b.Scope, Actor: b.Actor, ExpiresAt: b.ExpiresAt, Nonce: b.Nonce, Rationale: b.Rationale}
		a := Approval{Kind: str("kind"), RequestDigest: str("rd"), Decision: str("decision"), Capability: q.Capability,
			AuthorityDigest: q.AuthorityDigest, AdapterVersion: q.AdapterVersion, IssuedAt: num("issued"),
			Revoked: rapid.Bool().Draw(rt, "revoked"), Consumed: rapid.Bool().Draw(rt, "consumed"), ContextDigest: q.ContextDigest,
			PolicyVersion: c.PolicyVersion, ApproverScope: c.ApproverScope, Binding: b}
		// A decision's arena, whose memo the preimages written through it
		// are recorded in and served from: written twice, each digest
		// must be the map's both times.
		var sh decisionShared
		arena := strArena{seen: sh.scratch.plainSeen(), scratch: &sh.scratch, memo: new(DigestMemo)}
		defer sh.scratch.done()
		for _, x := range []struct {
			name     string
			write    func(*strArena) (string, bool)
			mapped   string
			computed string
			inArena  func(*strArena) string
		}{
			{"context", c.writeDigest, c.mapDigest(), c.ComputeDigest(), c.computeDigest},
			{"request", q.writeDigest, q.mapDigest(), q.ComputeDigest(), q.computeDigest},
			{"approval", a.writeDigest, a.mapDigest(), a.ComputeDigest(), a.computeDigest},
		} {
			for _, ar := range []*strArena{nil, &arena, &arena} {
				d, ok := x.write(ar)
				if ok && d != x.mapped {
					rt.Fatalf("%s: written %s, map %s", x.name, d, x.mapped)
				}
				if !ok && plain {
					rt.Fatalf("%s: every string plain, yet the writer left the digest to the map", x.name)
				}
			}
			if x.computed != x.mapped {
				rt.Fatalf("%s: ComputeDigest %s, map %s", x.name, x.computed, x.mapped)
			}
			for range 2 {
				if d := x.inArena(&arena); d != x.mapped {
					rt.Fatalf("%s: computed in a decision's arena %s, map %s", x.name, d, x.mapped)
				}
			}
		}
	})
}
