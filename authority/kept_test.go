package authority

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// TestSameVerdictComparesEveryMember holds sameVerdict to telling apart
// two verdicts that differ in any one member, the members counted by
// reflection so that a member added later is not silently left out.
func TestSameVerdictComparesEveryMember(t *testing.T) {
	base := protocol.EligibilityVerdict{Kind: "k", VerdictID: "v", ProposalID: "p", Status: "s",
		SupportDerivationIDs: protocol.IDSet{"d1", "d2"}, CauseID: "c", RuleSetVersion: "r"}
	if !sameVerdict(&base, &base) {
		t.Fatal("a verdict differs from itself")
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		other := base
		other.SupportDerivationIDs = append(protocol.IDSet(nil), base.SupportDerivationIDs...)
		f := reflect.ValueOf(&other).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Slice:
			f.Index(1).SetString("d3")
		default:
			t.Fatalf("member %s of kind %s: sameVerdict does not know it", typ.Field(i).Name, f.Kind())
		}
		if sameVerdict(&base, &other) {
			t.Errorf("verdicts differing in %s are the same to sameVerdict", typ.Field(i).Name)
		}
	}
}

// TestPolicyVerdictFromBatchIsWritten: the policy-verdict evidence a
// decision writes after its batch check (which keeps the batch's verdict
// encoding) is byte for byte the one written without it, whether the
// verdict is the batch's or differs from it in a member.
func TestPolicyVerdictFromBatchIsWritten(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	rapid.Check(t, func(rt *rapid.T) {
		str := func(name string) string { return rapid.StringMatching(`[ -~]{0,20}`).Draw(rt, name) }
		v := protocol.EligibilityVerdict{Kind: str("kind"), VerdictID: str("id"), ProposalID: str("proposal"), Status: str("status"),
			SupportDerivationIDs: rapid.SliceOfN(rapid.StringMatching(`[a-z:"\\]{0,6}`), 0, 3).Draw(rt, "supports"), CauseID: str("cause"), RuleSetVersion: str("rules")}
		b := in.Batch
		b.Verdicts = []protocol.EligibilityVerdict{v}
		w2 := v
		switch rapid.IntRange(0, 3).Draw(rt, "change") {
		case 1:
			w2.Status += "!"
		case 2:
			w2.SupportDerivationIDs = append(append(protocol.IDSet(nil), v.SupportDerivationIDs...), "more")
		case 3:
			w2.CauseID = str("other cause")
		}
		s := AuthoritySnapshot{AssessedRisk: RiskReversible, Decision: "allow", AuthorityDigest: "sha256:" + hexOf("sha256:00")}
		var shared decisionShared
		a := strArena{seen: shared.scratch.plainSeen(), scratch: &shared.scratch}
		defer shared.scratch.done()
		bw := a.writer(publishedBatchSize(b))
		bw.publishedBatch(b)
		if _, err := bw.sum(); err != nil {
			rt.Skip(err)
		}
		if _, kept := shared.scratch.keptEncoding(&v); !kept {
			rt.Fatal("the batch check kept no verdict")
		}
		got := a.writer(1024)
		got.policyVerdictPreimage(in.ProfileDigest, w2, s)
		var want canonWriter
		want.policyVerdictPreimage(in.ProfileDigest, w2, s)
		if string(got.b) != string(want.b) || (got.err == nil) != (want.err == nil) {
			rt.Fatalf("after the batch check:\n%s\nwritten alone:\n%s", got.b, want.b)
		}
		got.release()
	})
}
