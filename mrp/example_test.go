package mrp_test

import (
	"fmt"

	"flrh.dev/flrh/mrp"
)

func ExampleStep() {
	runtime := mrp.Actor{ID: "runtime", Kind: mrp.ActorSystem, Role: "runtime"}
	alice := mrp.Actor{ID: "alice", Kind: mrp.ActorHuman, Role: "operator", Capabilities: []string{"mrp.choose_option"}}
	m := mrp.New(mrp.Budgets{TurnLimit: 5})
	m, _ = mrp.Step(m, mrp.Event{Trigger: mrp.Tier1Contest, Actor: runtime, Options: []string{"rephrase", "send-as-is"}})
	// A model cannot choose for the person.
	_, err := mrp.Step(m, mrp.Event{Trigger: mrp.ChooseOption, Actor: mrp.Actor{Kind: mrp.ActorModel}, Target: mrp.Decide})
	fmt.Println(err)
	ready := mrp.TicketView{Complete: true, Status: "READY"}
	m, _ = mrp.Step(m, mrp.Event{Trigger: mrp.ChooseOption, Actor: alice, Target: mrp.Decide, Option: "rephrase", Ticket: &ready})
	fmt.Println(m.State, m.Strip())
	// Output:
	// mrp: MODEL_ACTOR_FORBIDDEN: CHOOSE_OPTION in OPTIONS: a model actor can issue no control event
	// DECIDE [HOLD OPTIONS DECIDE]
}
