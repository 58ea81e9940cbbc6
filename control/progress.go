package control

import (
	"math"

	"flrh.dev/flrh/cjson"
)

// FingerprintVersion is the domain tag of a progress fingerprint preimage.
const FingerprintVersion = "flrh-progress-fingerprint/1"

// FingerprintInput is what a round's fingerprint covers: the accepted-event
// cursor and the digests of the F state, the L support graph, the R
// frontier, the pending effects and the required evidence.
type FingerprintInput struct {
	Cursor         int64  `json:"cursor"`
	FState         string `json:"f_state"`
	LSupports      string `json:"l_supports"`
	RFrontier      string `json:"r_frontier"`
	PendingEffects string `json:"pending_effects"`
	Evidence       string `json:"evidence"`
}

// Fingerprint returns the digest of a round's observable state. Every part
// must be a sha256 digest and the cursor non-negative.
func Fingerprint(in FingerprintInput) (string, error) {
	if in.Cursor < 0 {
		return "", errorf(CodeInput, "/cursor", "cursor %d is negative", in.Cursor)
	}
	for _, f := range []struct{ key, v string }{
		{"f_state", in.FState}, {"l_supports", in.LSupports}, {"r_frontier", in.RFrontier},
		{"pending_effects", in.PendingEffects}, {"evidence", in.Evidence},
	} {
		if !cjson.ValidDigest(f.v) {
			return "", errorf(CodeInput, "/"+f.key, "%q is not a sha256 digest", f.v)
		}
	}
	// The preimage written member by member, its keys in canonical
	// order: the bytes cjson writes for {kind, version} and in's members
	// (fingerprintPreimage in the tests), without the encoder's
	// reflection and its allocations.
	var buf [640]byte
	b := append(buf[:0], `{"cursor":`...)
	b = cjson.AppendInt(b, in.Cursor)
	b = cjson.AppendString(append(b, `,"evidence":`...), in.Evidence)
	b = cjson.AppendString(append(b, `,"f_state":`...), in.FState)
	b = append(b, `,"kind":"ProgressFingerprint"`...)
	b = cjson.AppendString(append(b, `,"l_supports":`...), in.LSupports)
	b = cjson.AppendString(append(b, `,"pending_effects":`...), in.PendingEffects)
	b = cjson.AppendString(append(b, `,"r_frontier":`...), in.RFrontier)
	b = cjson.AppendString(append(b, `,"version":`...), FingerprintVersion)
	return cjson.Digest(append(b, '}')), nil
}

// Gain counts what a round achieved.
type Gain struct {
	ClosedObligations int64 `json:"closed_obligation"`
	ResolvedConflicts int64 `json:"resolved_conflict"`
	VerifiedReceipts  int64 `json:"verified_receipt"`
}

// NoProgress is the plateau detector's configuration.
type NoProgress struct {
	Weights      Gain   `json:"weights"`       // weight per gain component
	Epsilon      int64  `json:"epsilon"`       // a round with weighted gain below this is stalled
	WindowRounds int64  `json:"window_rounds"` // how many recent rounds are judged
	Threshold    int64  `json:"threshold"`     // stalled rounds in a full window that mean no progress
	Event        string `json:"event"`
}

// Round is one observed round of the loop.
type Round struct {
	Fingerprint    string `json:"fingerprint"`
	Gain           Gain   `json:"gain"`
	PendingEffects int64  `json:"pending_effects"` // effects committed but not yet closed
}

// RoundVerdict is the detector's judgement of one round, kept in the window.
type RoundVerdict struct {
	Fingerprint string `json:"fingerprint"`
	Weighted    int64  `json:"weighted_gain"`
	Unchanged   bool   `json:"unchanged"` // same fingerprint as the round before
	Stalled     bool   `json:"stalled"`
}

// ProgressWindow is the detector state: the verdicts of the most recent
// rounds, oldest first, at most WindowRounds long. The zero value is empty.
type ProgressWindow struct {
	Rounds []RoundVerdict `json:"rounds"`
}

// ProgressVerdict is the result of observing one round.
type ProgressVerdict struct {
	Round      RoundVerdict `json:"round"`
	Stalled    int64        `json:"stalled_in_window"`
	NoProgress bool         `json:"no_progress"` // issue the no-progress event
	// Held is true when the window shows a plateau but effects are still
	// pending: a run never ends as NO_PROGRESS with an effect in flight.
	Held bool `json:"held"`
}

// Weighted returns the weighted sum of a gain, saturating at MaxInt64.
// Negative components are an INPUT error.
func (np NoProgress) Weighted(g Gain) (int64, error) {
	var sum int64
	for _, c := range []struct {
		key  string
		n, w int64
	}{
		{"closed_obligation", g.ClosedObligations, np.Weights.ClosedObligations},
		{"resolved_conflict", g.ResolvedConflicts, np.Weights.ResolvedConflicts},
		{"verified_receipt", g.VerifiedReceipts, np.Weights.VerifiedReceipts},
	} {
		if c.n < 0 {
			return 0, errorf(CodeInput, "/gain/"+c.key, "gain %d is negative", c.n)
		}
		if c.w != 0 && c.n > math.MaxInt64/c.w {
			sum = math.MaxInt64
			continue
		}
		sum = satAdd(sum, c.n*c.w)
	}
	return sum, nil
}

// Observe adds a round to the window and judges it. A round whose
// fingerprint equals the previous round's is credited no gain whatever it
// claims: nothing observable changed. A round is stalled when its weighted
// gain is below Epsilon. No progress is declared when the window is full,
// at least Threshold of its rounds are stalled, and no effect is pending.
func (np NoProgress) Observe(w ProgressWindow, r Round) (ProgressWindow, ProgressVerdict, error) {
	if !cjson.ValidDigest(r.Fingerprint) {
		return w, ProgressVerdict{}, errorf(CodeInput, "/fingerprint", "%q is not a sha256 digest", r.Fingerprint)
	}
	if r.PendingEffects < 0 {
		return w, ProgressVerdict{}, errorf(CodeInput, "/pending_effects", "%d is negative", r.PendingEffects)
	}
	weighted, err := np.Weighted(r.Gain)
	if err != nil {
		return w, ProgressVerdict{}, err
	}
	rv := RoundVerdict{Fingerprint: r.Fingerprint, Weighted: weighted}
	if n := len(w.Rounds); n > 0 && w.Rounds[n-1].Fingerprint == r.Fingerprint {
		rv.Unchanged = true
		rv.Weighted = 0
	}
	rv.Stalled = rv.Weighted < np.Epsilon
	// The window and the round in one new array: the caller's window is
	// left as it was (append to a clone of it took a second array).
	rounds := make([]RoundVerdict, len(w.Rounds)+1)
	copy(rounds, w.Rounds)
	rounds[len(w.Rounds)] = rv
	if excess := int64(len(rounds)) - np.WindowRounds; excess > 0 {
		rounds = rounds[excess:]
	}
	next := ProgressWindow{Rounds: rounds}
	v := ProgressVerdict{Round: rv}
	for _, x := range rounds {
		if x.Stalled {
			v.Stalled++
		}
	}
	plateau := int64(len(rounds)) == np.WindowRounds && v.Stalled >= np.Threshold
	v.NoProgress = plateau && r.PendingEffects == 0
	v.Held = plateau && r.PendingEffects > 0
	return next, v, nil
}
