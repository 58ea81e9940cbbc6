package control_test

import (
	"fmt"

	"flrh.dev/flrh/control"
)

func ExampleMachine_Step() {
	m := control.Default()
	c := m.Initial()
	r := m.Step(c, control.Event{Type: "START", ActorRole: "runner", Capability: "control.start", EventID: "run-1:1"})
	fmt.Println(r.Next.State, r.EffectNames())

	// A model cannot issue control events: refused, audited, nothing moves.
	r2 := m.Step(r.Next, control.Event{Type: "CANCEL", ActorRole: "model", Capability: "run.cancel", EventID: "run-1:2"})
	fmt.Println(r2.Next.State, r2.EffectNames(), r2.Rejection.Reason)
	// Output:
	// INGEST [PersistControlTransition]
	// INGEST [AuditInvalidTransition] authority_failure
}

func ExampleBudgets_Charge() {
	b := control.DefaultContract().Budgets
	used := control.Usage{Steps: 51}
	used, v, _ := b.Charge(used, control.Usage{Steps: 1})
	fmt.Println(used.Steps, v.SoftCrossed, v.Exhausted())
	// Output:
	// 52 [steps] false
}

func ExampleRetryPolicy_Decide() {
	p := control.DefaultContract().Retry
	for attempt := int64(1); attempt <= 4; attempt++ {
		d, _ := p.Decide(control.ClassTransient, attempt, "run-7:seed", "idem:k1")
		fmt.Println(attempt, d.Action, d.BaseMillis, d.DelayMillis)
	}
	d, _ := p.Decide(control.ClassUnknown, 1, "run-7:seed", "idem:k1")
	fmt.Println(d.Action)
	// Output:
	// 1 retry 500 319
	// 2 retry 1000 930
	// 3 retry 2000 1405
	// 4 exhausted 0 0
	// reconcile
}
