package authority_test

import (
	"fmt"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/logic"
)

func ExampleResolve() {
	res, _ := authority.Resolve([]authority.Signal{
		authority.GateSignal(authority.GateG2, authority.Allow, authority.Reason{Rule: "g2.publish"}),
		authority.GateSignal(authority.GateG3, authority.AskFirst, authority.Reason{Rule: "g3.recipient"}),
		{Tier: 4, Kind: authority.KindAttunement, Source: "tone"},
	})
	fmt.Println(res.Decision, res.Move, len(res.Ties))
	// Output: ASK_FIRST ASK_FIRST 1
}

func ExamplePolicy_Evaluate() {
	policy, err := authority.CompilePolicy("policy/1", "example.dl", []byte(`
decision("G2", "ALLOW", "g2.pay") :- action(t, "payment.send"), capability(t, _).
decision("G2", "SHAPE", "g2.cap") :- action(t, "payment.send"), param_num(t, "amount", n), n > 100.
shape_max("G2", "g2.cap", "amount", 100) :- ticket(t).
`), logic.Limits{})
	if err != nil {
		panic(err)
	}
	ticket, _ := authority.DraftTicket(authority.TicketSpec{
		TicketID: "ticket:1", Action: "payment.send", Destination: "dest:shop", Scope: "scope:team",
		Parameters:  map[string]any{"amount": int64(250)},
		SideEffects: []authority.SideEffect{authority.SideEffectWrite}, AssessedRisk: authority.RiskReversible,
	})
	ev := policy.Evaluate(ticket, authority.CapabilityFact(ticket.TicketID, "capability:pay"))
	res, _ := authority.Resolve(ev.Signals)
	shaped, _ := authority.Shape(ticket, res.Constraints...)
	fmt.Println(res.Decision, shaped.Parameters["amount"])
	fmt.Println(ev.Gates[2].Reasons[len(ev.Gates[2].Reasons)-1].Rule)
	// Output:
	// SHAPE 100
	// g2.cap
}
