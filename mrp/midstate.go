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

// fhrOpenings keeps the midstates of the openings of runs' first FHRs
// learnt from earlier seals: the bytes before the first resolution's
// ticket id, which are the budgets, the kind, an empty previous digest
// and the first resolution's verdict, the same for the first turns of
// most runs: about five blocks, where fhrMidstates know two. A later
// turn's record is not looked up: its budgets count the run's turns, so
// its opening would differ from run to run and turn to turn and each
// miss would hash it whole. It is process-wide and consulted by
// comparing bytes, as cjson.Openings always is: a seal whose opening no
// slot holds is hashed whole and its state kept, so what it holds
// changes no digest.
var fhrOpenings cjson.Openings

// sealSum is sha256.Sum256(b), continued from the state after b's first
// opening bytes when fhrOpenings holds more whole blocks of them than the
// first of ms whose prefix b begins with, else from that midstate.
func sealSum(b []byte, opening int, ms []*cjson.Midstate) [sha256.Size]byte {
	var m *cjson.Midstate
	for _, c := range ms {
		if c.Opens(b) {
			m = c
			break
		}
	}
	if opening&^(sha256.BlockSize-1) > len(m.Prefix()) {
		return fhrOpenings.Sum256(b, opening, nil)
	}
	if m != nil {
		return m.Sum256(b, nil)
	}
	return sha256.Sum256(b)
}
