package authority

import (
	"reflect"
	"slices"
	"testing"

	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// drawFacts draws extra facts: the relations callers add and others.
func drawFacts(rt *rapid.T, label string) []logic.Fact {
	rel := rapid.SampledFrom([]string{"capability", "mode", "chosen", "resumed", "other", "x_y", ""})
	arg := rapid.Custom(func(rt *rapid.T) logic.Value {
		if rapid.Bool().Draw(rt, "num") {
			return logic.Num(rapid.Int64().Draw(rt, "n"))
		}
		return logic.Sym(rapid.String().Draw(rt, "s"))
	})
	return rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) logic.Fact {
		return logic.Fact{Rel: rel.Draw(rt, "rel"), Neg: rapid.Bool().Draw(rt, "neg"), Args: rapid.SliceOfN(arg, 0, 3).Draw(rt, "args")}
	}), 0, 4).Draw(rt, label)
}

func cloneFacts(fs []logic.Fact) []logic.Fact {
	out := make([]logic.Fact, len(fs))
	for i, f := range fs {
		out[i] = logic.Fact{Rel: f.Rel, Neg: f.Neg, Args: slices.Clone(f.Args)}
	}
	return out
}

// TicketFacts copies the extra facts it is given: the result is the
// ticket's facts followed by facts equal to extra's, and nothing of it
// changes when the caller's facts are overwritten afterwards (Authorize
// builds them on its stack).
func TestTicketFactsCopiesExtra(t *testing.T) {
	tk, err := DraftTicket(TicketSpec{TicketID: "ticket:f", Action: "payment.send", Destination: "dest:shop", Scope: "scope:s",
		Parameters: map[string]any{"amount": int64(50), "p": "x"}, SideEffects: []SideEffect{SideEffectExternal}, AssessedRisk: RiskReversible})
	if err != nil {
		t.Fatal(err)
	}
	own := TicketFacts(tk)
	rapid.Check(t, func(rt *rapid.T) {
		extra := drawFacts(rt, "extra")
		want := append(cloneFacts(own), cloneFacts(extra)...)
		got := TicketFacts(tk, extra...)
		if !reflect.DeepEqual(normalizeFacts(got), normalizeFacts(want)) {
			rt.Fatalf("TicketFacts = %v, want %v", got, want)
		}
		for i := range extra {
			extra[i].Rel = "overwritten"
			for k := range extra[i].Args {
				extra[i].Args[k] = logic.Sym("overwritten")
			}
		}
		if !reflect.DeepEqual(normalizeFacts(got), normalizeFacts(want)) {
			rt.Fatalf("overwriting the extra facts changed TicketFacts' result: %v, want %v", got, want)
		}
	})
}

// joinFacts is append(base, more...), and shares no array with base when
// more is not empty.
func TestJoinFacts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		base, more := drawFacts(rt, "base"), drawFacts(rt, "more")
		want := append(cloneFacts(base), cloneFacts(more)...)
		got := joinFacts(base, more)
		if !reflect.DeepEqual(normalizeFacts(got), normalizeFacts(want)) {
			rt.Fatalf("joinFacts = %v, want %v", got, want)
		}
		if len(more) == 0 {
			return
		}
		for i := range base {
			for k := range base[i].Args {
				base[i].Args[k] = logic.Sym("overwritten")
			}
		}
		if !reflect.DeepEqual(normalizeFacts(got), normalizeFacts(want)) {
			rt.Fatalf("joinFacts shares arguments with base: %v, want %v", got, want)
		}
	})
}

// normalizeFacts makes empty argument lists compare equal whether nil or
// not: only the facts' values matter.
func normalizeFacts(fs []logic.Fact) []logic.Fact {
	out := cloneFacts(fs)
	for i := range out {
		if len(out[i].Args) == 0 {
			out[i].Args = nil
		}
	}
	return out
}

// The gates' reasons and the risk reasons share one array, as do the
// reasons' fact lists, each capped: appending to any of them changes none
// of the others, and each is empty rather than nil when it is empty.
func TestEvaluateReasonsAreSeparate(t *testing.T) {
	p, err := CompilePolicy("p/1", "fixture.dl", []byte(fixturePolicy), logic.Limits{MaxFirings: 10000, MaxInputs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, audience := range []string{"public", "team"} {
		tk, err := DraftTicket(TicketSpec{TicketID: "ticket:f", Action: "artifact.publish", Destination: "dest:site", Scope: "scope:s",
			Parameters: map[string]any{"audience": audience}, SideEffects: []SideEffect{SideEffectExternal}, AssessedRisk: RiskReversible})
		if err != nil {
			t.Fatal(err)
		}
		for _, extra := range [][]logic.Fact{nil, {CapabilityFact(tk.TicketID, "cap:1")}} {
			ev := p.Evaluate(tk, extra...)
			if ev.RiskReasons == nil {
				t.Fatalf("%s: risk reasons nil", audience)
			}
			var all []Reason
			for _, g := range ev.Gates {
				all = append(all, g.Reasons...)
			}
			all = append(all, ev.RiskReasons...)
			snapshot := func() []any {
				var s []any
				for _, g := range ev.Gates {
					s = append(s, slices.Clone(g.Reasons))
				}
				s = append(s, slices.Clone(ev.RiskReasons))
				for _, r := range all {
					s = append(s, slices.Clone(r.Facts))
				}
				return s
			}
			before := snapshot()
			sentinel := Reason{Rule: "sentinel"}
			for i := range ev.Gates {
				if ev.Gates[i].Reasons == nil {
					t.Fatalf("%s: gate %s reasons nil", audience, ev.Gates[i].Gate)
				}
				_ = append(ev.Gates[i].Reasons, sentinel, sentinel)
			}
			_ = append(ev.RiskReasons, sentinel, sentinel)
			for _, r := range all {
				if r.Facts == nil {
					t.Fatalf("%s: reason %s: facts nil", audience, r.Rule)
				}
				_ = append(r.Facts, "sentinel", "sentinel")
			}
			if after := snapshot(); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: appending to one list of reasons changed another:\n%v\n%v", audience, before, after)
			}
		}
	}
}

// The batch digests are checked as arrays: the array is the digest's
// string, byte for byte.
func TestBatchSumsAreTheDigests(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOfN(rapid.String(), 0, 3)
		profile, df := rapid.String().Draw(rt, "profile"), rapid.String().Draw(rt, "dataflow")
		lt, lw := rapid.Int64().Draw(rt, "lt"), rapid.Int64().Draw(rt, "lw")
		pids, vids := ids.Draw(rt, "pids"), ids.Draw(rt, "vids")
		want := StableBatchDigest(profile, lt, lw, pids, vids, df)
		sum, err := stableBatchSum(profile, lt, lw, pids, vids, df, nil)
		if err != nil {
			if want != invalidDigest(err) {
				rt.Fatalf("error %v, digest %q", err, want)
			}
			return
		}
		if string(sum[:]) != want {
			rt.Fatalf("sum %q, digest %q", sum[:], want)
		}
		b := PublishedBatch{Batch: protocol.StableProposalBatch{BatchID: "batch:x", BatchDigest: want, ProposalIDs: pids, EligibilityVerdictIDs: vids, DataflowVersion: df}}
		pd, err1 := publishedBatchDigest(b)
		ps, err2 := publishedBatchSum(b, nil)
		if (err1 == nil) != (err2 == nil) || (err1 == nil && string(ps[:]) != pd) {
			rt.Fatalf("published: sum %q (%v), digest %q (%v)", ps[:], err2, pd, err1)
		}
	})
}
