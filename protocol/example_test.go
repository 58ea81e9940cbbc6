package protocol_test

import (
	"errors"
	"fmt"

	"flrh.dev/flrh/protocol"
)

// A proposal cannot carry an assessed risk: only the authority assesses.
func ExampleValidate() {
	proposal := `{"kind":"EffectProposal","proposal_id":"proposal:1","effect_type":"artifact.publish",
	  "action_digest":"sha256:1010101010101010101010101010101010101010101010101010101010101010",
	  "cause_id":"evt:1","correlation_id":"run:1","proposal_dedup_key":"dedup:1",
	  "destination_digest":"sha256:1212121212121212121212121212121212121212121212121212121212121212",
	  "goal_id":"goal:1","obligation_id":"obligation:1","declared_risk_hint":"unknown",
	  "assessed_risk":"read_only","preconditions":[],
	  "versions":{"workflow":"w/1","state_schema":"s/1","event_schema":"e/1","graph_schema":"g/0",
	    "rule_set":"r/0","dataflow":"d/0","canonicalization":"flrh-cjson/1","tool":"t/0","model":"m/0",
	    "oracle":"o/0","gate":"g/0","resolver":"r/0","composition_profile":"c/0"}}`
	err := protocol.Validate(protocol.KindEffectProposal, []byte(proposal))
	var pe *protocol.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Code, pe.Pointer)
	}
	// Output: AUTHORITY_FIELD_FORBIDDEN /assessed_risk
}
