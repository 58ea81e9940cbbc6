package authority

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
)

// policy100 is a 100-rule gate policy: 70 policy rules over distinct
// actions, 10 hard-limit rules, 10 harm heuristics and 10 norm rules. Only
// a few match the benchmarked ticket; every rule is evaluated.
func policy100() string {
	var b strings.Builder
	for i := 0; i < 69; i++ {
		fmt.Fprintf(&b, "decision(\"G2\", \"ALLOW\", \"g2.r%d\") :- action(t, \"svc%d.call\"), capability(t, _), param_num(t, \"amount\", n), n <= %d.\n", i, i, 100*(i+1))
	}
	b.WriteString("decision(\"G2\", \"ALLOW\", \"g2.publish\") :- action(t, \"artifact.publish\"), capability(t, _).\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"H1\", \"REFUSE\", \"h1.r%d\") :- param_num(t, \"amount\", n), n > %d, action(t, \"svc%d.call\").\n", i, 100000+i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"G3\", \"ASK_FIRST\", \"g3.r%d\") :- destination(t, \"dest:blocked%d\").\n", i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"G4\", \"SHAPE\", \"g4.r%d\") :- param_sym(t, \"tone\", \"t%d\").\n", i, i)
	}
	b.WriteString("assess(\"reversible\", \"g2.publish-reversible\") :- action(t, \"artifact.publish\").\n")
	return b.String()
}

// BenchmarkAuthorize1Proposal100Rules measures one decision with a
// capability verified once beforehand (the runner's steady state).
func BenchmarkAuthorize1Proposal100Rules(b *testing.B) { benchAuthorize(b, false) }

// BenchmarkAuthorizeCheckedBatch is BenchmarkAuthorize1Proposal100Rules
// with the batch sealed by SealBatch beforehand, as its producer would:
// the batch is compared with the checked copy instead of digested again.
func BenchmarkAuthorizeCheckedBatch(b *testing.B) { benchAuthorizeWith(b, false, true) }

// BenchmarkAuthorizeVerifyingSignature also verifies the capability's
// Ed25519 signature on every call.
func BenchmarkAuthorizeVerifyingSignature(b *testing.B) { benchAuthorize(b, true) }

func benchAuthorize(b *testing.B, raw bool) { benchAuthorizeWith(b, raw, false) }

func benchAuthorizeWith(b *testing.B, raw, checked bool) {
	in := policy100Input(b, raw)
	var err error
	if checked {
		if in.Batch, in.Checked, err = SealBatch(in.Batch, in.ProfileDigest); err != nil {
			b.Fatal(err)
		}
	}
	d, err := Authorize(in)
	if err != nil || d.Outcomes[0].Intent == nil {
		b.Fatalf("benchmark input does not authorize: %v %+v", err, d.Outcomes[0])
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Authorize(in); err != nil {
			b.Fatal(err)
		}
	}
}

// policy100Input is the fixture's internal batch of one proposal against
// the 101-rule policy, its capability verified beforehand unless raw.
func policy100Input(tb testing.TB, raw bool) Input {
	in, _ := fixtureInput(tb, "internal")
	src := policy100()
	if n := strings.Count(src, ":-"); n != 101 {
		tb.Fatalf("policy has %d rules", n)
	}
	p, err := CompilePolicy("authority/1", "bench.dl", []byte(src), logic.Limits{MaxFirings: 10000})
	if err != nil {
		tb.Fatal(err)
	}
	in.Policy.Policy = p
	v, err := in.Policy.Keyring.Verify(in.Capabilities[0])
	if err != nil {
		tb.Fatal(err)
	}
	if !raw {
		in.Capabilities, in.Verified = nil, []VerifiedCapability{v}
	}
	return in
}

func BenchmarkGateEvaluate100Rules(b *testing.B) {
	p, err := CompilePolicy("authority/1", "bench.dl", []byte(policy100()), logic.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	tk := ticketFor(b, "artifact.publish", map[string]any{"amount": int64(5)})
	extra := CapabilityFact(tk.TicketID, "capability:x")
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(tk, extra)
	}
}

func BenchmarkProjectIntent(b *testing.B) {
	c := loadCorpus(b)
	cmd := fixtureCommands(c)["low-risk"]
	b.ReportAllocs()
	for b.Loop() {
		if _, r := ProjectIntent(cmd); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkDraftTicket(b *testing.B) {
	s := baseSpec()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DraftTicket(s); err != nil {
			b.Fatal(err)
		}
	}
}

// decisionPreimageSizes are the lengths of the fourteen preimages one
// decision of BenchmarkAuthorize1Proposal100Rules hashes, in the order it
// hashes them: stable batch, published batch, ticket id, action, preview,
// ticket, authority snapshot, idempotency, intent identity, policy
// verdict, capability evidence, input, control event, and the FHR seal
// (package mrp). Read from one decision (9,352 bytes in all).
var decisionPreimageSizes = []int{385, 2073, 207, 233, 590, 724, 493, 272, 461, 765, 556, 404, 830, 1359}

// BenchmarkDigestFloor hashes buffers of those sizes: the SHA-256 work a
// decision cannot shed while every digest it records stays what it is.
func BenchmarkDigestFloor(b *testing.B) {
	bufs := make([][]byte, len(decisionPreimageSizes))
	for i, n := range decisionPreimageSizes {
		bufs[i] = []byte(strings.Repeat("a", n))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, buf := range bufs {
			_ = sha256.Sum256(buf)
		}
	}
}

// BenchmarkPreimageWriter writes an authority snapshot's preimage (13
// members, no hashing): the preimage writer's own cost per member.
func BenchmarkPreimageWriter(b *testing.B) {
	s := AuthoritySnapshot{Kind: "HAuthoritySnapshot", AuthorityVersion: "authority/1", ProposalID: "proposal:1",
		EffectType: "artifact.publish", Capability: "capability:publish", Decision: "allow", AssessedRisk: RiskReversible,
		AdapterVersion: "publisher/1", DestinationDigest: "sha256:" + strings.Repeat("2", 64), ValidFrom: 0, ValidUntil: 1000}
	b.ReportAllocs()
	for b.Loop() {
		w := pooledWriter(768)
		s.writePreimage(&w)
		if w.err != nil {
			b.Fatal(w.err)
		}
		w.release()
	}
}
