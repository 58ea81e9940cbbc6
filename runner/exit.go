package runner

import (
	"encoding/json"
	"fmt"
	"slices"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/store"
)

// exitBefore finds, among a run's unread inbox entries, a person's EXIT of
// deliberation handed in before seq: a control input with trigger EXIT
// from someone in a human role exercising mrp.exit, as the workflow would
// take it. A run reads control inputs only in INGEST, so an EXIT handed in
// while the run waits for an approval is still unread when the grant
// arrives; the grant must not carry out an action deliberation was ended
// before (decision 0612, addendum).
func exitBefore(inbox []store.Inbound, seq int64) (store.Inbound, bool) {
	exitCap, _ := mrp.RequiredCapability(mrp.HumanExit)
	for _, in := range inbox {
		if in.Kind != KindControl || in.Consumed || in.Seq >= seq || !slices.Contains(mrp.HumanRoles, in.ActorRole) || in.Capability != exitCap {
			continue
		}
		var body struct {
			Trigger string `json:"trigger"`
		}
		if json.Unmarshal(in.Body, &body) == nil && body.Trigger == string(mrp.HumanExit) {
			return in, true
		}
	}
	return store.Inbound{}, false
}

// exitRefusal says why a grant is refused after an EXIT.
func exitRefusal(requestID string, exit store.Inbound) string {
	return fmt.Sprintf("approval %s (%s's EXIT, handed in before the grant, ended deliberation; deny the request or cancel the run)", requestID, exit.Actor)
}
