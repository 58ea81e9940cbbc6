package workflow

import (
	"encoding/json"

	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
)

// receiptReader reads a receipt as json.Unmarshal into
// protocol.ActionReceipt does, keeping only what a tick takes from it.
var receiptReader = jsonread.NewReader(protocol.ActionReceipt{}).Keeping("intent_id", "outcome")

// ParseReceipt reads what a tick takes from a receipt input, its intent id
// and outcome, exactly as json.Unmarshal into protocol.ActionReceipt reads
// them, error included. A receipt as the runner records it (cjson's
// encoding of the struct) is read without encoding/json; any other text is
// left to it.
func ParseReceipt(body []byte) (intentID, outcome string, err error) {
	var rc protocol.ActionReceipt
	if receiptReader.Read(body, &rc) {
		return rc.IntentID, rc.Outcome, nil
	}
	rc = protocol.ActionReceipt{}
	if err := json.Unmarshal(body, &rc); err != nil {
		return "", "", err
	}
	return rc.IntentID, rc.Outcome, nil
}
