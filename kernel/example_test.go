package kernel_test

import (
	"errors"
	"fmt"

	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/protocol"
)

var versions = protocol.VersionEnvelope{
	Workflow: "shop/1", StateSchema: "shop-state/1", EventSchema: "shop-event/1",
	GraphSchema: "graph/0", RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1",
	Tool: "none/0", Model: "none/0", Oracle: "none/0", Gate: "none/0", Resolver: "none/0", CompositionProfile: "none/0",
}

const shop = `{
  "schema_version": "flrh-domain/1",
  "workflow": "shop/1", "state_schema": "shop-state/1", "event_schema": "shop-event/1",
  "initial_state": {"orders": 0},
  "events": {
    "order.placed/1": {
      "payload": {"order_id": "id"},
      "state": {"orders": {"add": 1}},
      "facts": [{"tuple": {"predicate": "order_placed", "order": "$payload.order_id"},
                 "provenance": {"source_event_id": "$event_id"}}],
      "proposals": [{"effect_type": "email.send", "action": {"order": "$payload.order_id"},
                     "destination": {"adapter": "smtp"}, "goal_id": "goal:notify",
                     "obligation_id": "obligation:notify", "risk_hint": "reversible", "preconditions": []}]
    }
  }
}`

// A workflow written as data: one event type yields a fact, a proposal and
// a state update. The same event applied twice is refused the second time,
// because it names the revision it expects.
func ExampleLoad() {
	d, err := kernel.Load([]byte(shop))
	if err != nil {
		panic(err)
	}
	s := kernel.NewSnapshot(d, "shop:1", versions)
	ev := protocol.AcceptedEvent{
		Kind: protocol.KindAcceptedEvent, EventID: "evt:1", LogicalTime: 1,
		Payload: protocol.Object{"event_type": "order.placed/1", "aggregate_id": "shop:1",
			"expected_revision": int64(0), "order_id": "order:7"},
		OccurredAt: "2026-02-01T10:00:00Z", ReceivedAt: "2026-02-01T10:00:01Z",
		CorrelationID: "run:1", IdempotencyKey: "ingress:1", Versions: versions,
	}
	tr, err := kernel.Step(d, s, ev)
	if err != nil {
		panic(err)
	}
	fmt.Println(tr.NextSnapshot.Revision, tr.NextSnapshot.State["state"])
	fmt.Println(tr.FactDeltas[0].Tuple["predicate"], tr.FactDeltas[0].Diff)
	fmt.Println(tr.EffectProposals[0].EffectType, tr.EffectProposals[0].DeclaredRiskHint)

	_, err = kernel.Step(d, tr.NextSnapshot, ev)
	var r *kernel.Rejection
	errors.As(err, &r)
	fmt.Println(r.Code, r.Path, r.Context["expected"])
	// Output:
	// 1 map[orders:1]
	// order_placed 1
	// email.send reversible
	// STALE_REVISION /accepted_event/payload/expected_revision 1
}
