package mrp

import "flrh.dev/flrh/cjson"

// SignalRecord is one signal of a turn as the FHR keeps it.
type SignalRecord struct {
	Ticket   string `json:"ticket"`
	Tier     int    `json:"tier"`
	Kind     string `json:"kind"`
	Source   string `json:"source"`
	Decision string `json:"decision"`
	Rule     string `json:"rule"`
}

// ResolutionRecord is the Meta-Priority Matrix's verdict for one ticket.
type ResolutionRecord struct {
	Ticket      string   `json:"ticket"`
	HighestTier int      `json:"highest_tier"`
	Decision    string   `json:"decision"`
	Move        Move     `json:"move"`
	Contestable bool     `json:"contestable"`
	Options     []string `json:"options"`
	Ties        int      `json:"ties"`
	Outcome     string   `json:"outcome"`
}

// FHR is the full record of one turn: every signal and its tier, the
// resolution, the tickets with their digests, the scorecard digest, the
// budgets after the turn and every transition with its cause.
type FHR struct {
	Kind        string             `json:"kind"`
	Turn        int64              `json:"turn"`
	Signals     []SignalRecord     `json:"signals"`
	Resolutions []ResolutionRecord `json:"resolutions"`
	Tickets     []TicketView       `json:"tickets"`
	Scorecard   string             `json:"scorecard_digest"`
	Budgets     Budgets            `json:"budgets"`
	Transitions []Entry            `json:"transitions"`
	State       State              `json:"state"`
	SafeMode    bool               `json:"safe_mode"`
	Digest      string             `json:"fhr_digest"`
}

// Seal computes the record's digest: the canonical bytes of the record
// with an empty fhr_digest member.
func (f FHR) Seal() (FHR, error) {
	f.Kind = "FHR"
	f.Digest = ""
	b, err := cjson.Marshal(f)
	if err != nil {
		return FHR{}, err
	}
	f.Digest = cjson.Digest(b)
	return f, nil
}
