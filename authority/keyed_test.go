package authority

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/logic"
	"pgregory.net/rapid"
)

// TestKeyedIsUnkeyed holds the seal, the action digest, the preview and
// the gates given a ticket's sorted parameter names (as a decision sorts
// them once) to the same computed with the names sorted where each needs
// them, over drawn parameters of every kind the value model has and some
// it refuses.
func TestKeyedIsUnkeyed(t *testing.T) {
	p, err := CompilePolicy("p/1", "keyed.dl", []byte(`decision("G2", "ALLOW", "r1") :- action(t, "act.a"), param_num(t, "amount", n), n < 100.
decision("G4", "SHAPE", "r2") :- param_sym(t, "tone", "loud").
assess("reversible", "r3") :- param_sym(t, "b", "true").
`), logic.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	value := rapid.OneOf(
		rapid.Map(rapid.Int64(), func(n int64) any { return n }),
		rapid.Map(rapid.StringMatching(`[ -~]{0,12}`), func(s string) any { return s }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Just[any](nil),
		rapid.Map(rapid.SliceOfN(rapid.Int64(), 0, 3), func(ns []int64) any {
			out := make([]any, len(ns))
			for i, n := range ns {
				out[i] = n
			}
			return out
		}),
		rapid.Just[any](3.5),
	)
	rapid.Check(t, func(rt *rapid.T) {
		params := rapid.MapOfN(rapid.SampledFrom([]string{"amount", "tone", "b", "kind", "z", "é", "a b"}), value, 0, 6).Draw(rt, "params")
		tk, err := buildTicket(TicketSpec{TicketID: "ticket:k", Action: "act.a", Destination: "dest:d", Scope: "scope:s",
			Parameters: params, SideEffects: []SideEffect{SideEffectWrite}, AssessedRisk: RiskReversible, RequiredParameters: []string{"amount"}})
		if err != nil {
			rt.Skip(err)
		}
		keys := sortedKeys(tk.Parameters)
		if got, want := tk.sealKeyed(nil, keys), tk.sealIn(nil); !reflect.DeepEqual(got, want) {
			rt.Fatalf("sealed with the names given:\n%+v\nsorted by each:\n%+v", got, want)
		}
		extra := CapabilityFact(tk.TicketID, "capability:c")
		if got, want := p.evaluateKeyed(nil, tk, keys, extra), p.evaluate(nil, tk, extra); !reflect.DeepEqual(got, want) {
			rt.Fatalf("evaluated with the names given:\n%+v\nsorted by each:\n%+v", got, want)
		}
	})
}
