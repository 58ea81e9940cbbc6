package mrp

import (
	"crypto/sha256"

	"flrh.dev/flrh/cjson"
)

// fhrMidstates are the openings of an FHR's preimage with the deep and
// no-progress budgets unused (every recorded run's so far), two blocks
// and one: the first whose prefix the preimage begins with is used
// (as the authority package's midstates, decision 0620).
var fhrMidstates = [...]*cjson.Midstate{
	cjson.NewMidstate(`{"budgets":{"deep_limit":0,"deep_used":0,"escalate_on_no_progress":false,"no_progress_limit":0,"no_progress_run":0,"session_limit":`),
	cjson.NewMidstate(`{"budgets":{"deep_limit":0,"deep_used":0,"escalate_on_no_progress":`),
}

// sealSum is sha256.Sum256(b), continued from the first of ms whose
// prefix b begins with.
func sealSum(b []byte, ms []*cjson.Midstate) [sha256.Size]byte {
	for _, m := range ms {
		if m.Opens(b) {
			return m.Sum256(b, nil)
		}
	}
	return sha256.Sum256(b)
}
