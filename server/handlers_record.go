package server

import (
	"context"
	"encoding/json"
	"net/http"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/store"
)

// What a run's workflow recorded of its deliberation, read from the run's
// trace: the workflow writes one FHR per turn ("h.fhr"), H's outcome for
// each proposal it decided ("h.outcome", with the ticket's preview and
// digests) and, with an AIF controller, a scorecard for every set of
// options it scored ("aif.scorecard"). The trace is the record of what was
// decided and shown; these endpoints only sort it by what a person asks.

// Trace record kinds the workflow writes (package workflow).
const (
	traceFHR       = "h.fhr"
	traceOutcome   = "h.outcome"
	traceScorecard = "aif.scorecard"
)

// fhrNote is an "h.fhr" trace record.
type fhrNote struct {
	Event    string          `json:"event"`
	FHRChain string          `json:"fhr_chain"`
	FHR      json.RawMessage `json:"fhr"`
}

// outcomeNote is an "h.outcome" trace record.
type outcomeNote struct {
	ProposalID    string     `json:"proposal_id"`
	Outcome       string     `json:"outcome"`
	TicketID      string     `json:"ticket_id"`
	TicketDigest  string     `json:"ticket_digest"`
	ActionDigest  string     `json:"action_digest"`
	AssessedRisk  string     `json:"assessed_risk"`
	MRPState      string     `json:"mrp_state"`
	Preview       string     `json:"preview"`
	Held          string     `json:"held"`
	Options       []string   `json:"options"`
	Audit         []string   `json:"audit"`
	Rejection     *Rejection `json:"rejection"`
	IntentID      string     `json:"intent_id"`
	RequestID     string     `json:"request_id"`
	RequestDigest string     `json:"request_digest"`
}

// Rejection is why H rejected a proposal outright: a code and the JSON
// pointer of what failed.
type Rejection struct {
	Code string `json:"code"`
	Path string `json:"path"`
}

// TicketRecord is one Action Ticket as H decided it in one turn: the
// exact preview and digests shown to people, its completeness, the signals
// the gates raised, the Meta-Priority Matrix's resolution, H's decision
// and where the deliberation machine stood after it.
type TicketRecord struct {
	Turn          int64              `json:"turn"`
	Event         string             `json:"event"` // the turn's control event
	ProposalID    string             `json:"proposal_id"`
	TicketID      string             `json:"ticket_id"`
	TicketDigest  string             `json:"ticket_digest"`
	ActionDigest  string             `json:"action_digest"`
	Preview       string             `json:"preview"`
	AssessedRisk  string             `json:"assessed_risk"`
	Ticket        *mrp.TicketView    `json:"ticket,omitempty"` // completeness, preview and confirmation, status
	Decision      string             `json:"decision"`         // INTENT, APPROVAL_REQUEST, OPTIONS, HELD, ESCALATED, REJECTED
	Held          string             `json:"held,omitempty"`
	Options       []string           `json:"options"`
	Audit         []string           `json:"audit"`
	Rejection     *Rejection         `json:"rejection,omitempty"`
	Signals       []mrp.SignalRecord `json:"signals"`
	Resolution    *ResolutionView    `json:"resolution,omitempty"`
	MRPState      string             `json:"mrp_state"`
	IntentID      string             `json:"intent_id,omitempty"`
	RequestID     string             `json:"request_id,omitempty"`
	RequestDigest string             `json:"request_digest,omitempty"`
}

// ResolutionView is the Meta-Priority Matrix's verdict for one ticket
// (mrp.ResolutionRecord as the FHR stores it, the move by name).
type ResolutionView struct {
	Ticket      string   `json:"ticket"`
	HighestTier int      `json:"highest_tier"`
	Decision    string   `json:"decision"`
	Move        string   `json:"move"`
	Contestable bool     `json:"contestable"`
	Options     []string `json:"options"`
	Ties        int      `json:"ties"`
	Outcome     string   `json:"outcome"`
}

// fhrParts is what the ticket list reads of a stored FHR.
type fhrParts struct {
	Turn        int64              `json:"turn"`
	Signals     []mrp.SignalRecord `json:"signals"`
	Resolutions []ResolutionView   `json:"resolutions"`
	Tickets     []mrp.TicketView   `json:"tickets"`
}

// FHRRecord is one turn's FHR as the workflow stored it, with the turn's
// control event and the run's FHR hash chain after it.
type FHRRecord struct {
	Turn     int64           `json:"turn"`
	Event    string          `json:"event"`
	FHRChain string          `json:"fhr_chain"`
	FHR      json.RawMessage `json:"fhr"`
}

// ScorecardRecord is one AIF scorecard: the controller's scoring of the
// options H offered for a proposal, core (risk, ambiguity, EFE) and
// augmentations apart in each candidate, and who was to choose.
type ScorecardRecord struct {
	Turn       int64           `json:"turn"` // the turn whose OPTIONS it scored
	ProposalID string          `json:"proposal_id"`
	TicketID   string          `json:"ticket_id"`
	Digest     string          `json:"scorecard_digest"`
	Delegated  bool            `json:"delegated"`
	Chooser    string          `json:"chooser"`
	Unscored   string          `json:"unscored,omitempty"`
	Scorecard  json.RawMessage `json:"scorecard"`
}

// runTrace reads a run's trace (404 for an unknown run).
func (s *Server) runTrace(ctx context.Context, id string) ([]store.TraceRecord, error) {
	if _, err := s.cfg.Store.Run(ctx, id); err != nil {
		return nil, err
	}
	return s.cfg.Store.Trace(ctx, id)
}

// record walks a run's trace once, collecting its FHRs, tickets and
// scorecards. A record that does not parse is skipped: the trace is an
// observation, and one bad line must not hide the rest.
type record struct {
	fhrs       []FHRRecord
	tickets    []TicketRecord
	scorecards []ScorecardRecord
}

func readRecord(tr []store.TraceRecord) record {
	rec := record{fhrs: []FHRRecord{}, tickets: []TicketRecord{}, scorecards: []ScorecardRecord{}}
	var last fhrParts // the latest turn's FHR: outcomes and scorecards follow it
	var lastEvent string
	for _, t := range tr {
		switch t.Kind {
		case traceFHR:
			var n fhrNote
			var f fhrParts
			if json.Unmarshal(t.Body, &n) != nil || json.Unmarshal(n.FHR, &f) != nil {
				continue
			}
			last, lastEvent = f, n.Event
			rec.fhrs = append(rec.fhrs, FHRRecord{Turn: f.Turn, Event: n.Event, FHRChain: n.FHRChain, FHR: n.FHR})
		case traceOutcome:
			var n outcomeNote
			if json.Unmarshal(t.Body, &n) != nil {
				continue
			}
			tk := TicketRecord{Turn: last.Turn, Event: lastEvent, ProposalID: n.ProposalID, TicketID: n.TicketID, TicketDigest: n.TicketDigest,
				ActionDigest: n.ActionDigest, Preview: n.Preview, AssessedRisk: n.AssessedRisk, Decision: n.Outcome, Held: n.Held,
				Options: nonNilStrings(n.Options), Audit: nonNilStrings(n.Audit), Rejection: n.Rejection, Signals: []mrp.SignalRecord{},
				MRPState: n.MRPState, IntentID: n.IntentID, RequestID: n.RequestID, RequestDigest: n.RequestDigest}
			if n.TicketID != "" {
				for i := range last.Tickets {
					if last.Tickets[i].TicketID == n.TicketID {
						v := last.Tickets[i]
						tk.Ticket = &v
					}
				}
				for _, sg := range last.Signals {
					if sg.Ticket == n.TicketID {
						tk.Signals = append(tk.Signals, sg)
					}
				}
			}
			for i := range last.Resolutions {
				if last.Resolutions[i].Ticket == n.TicketID {
					r := last.Resolutions[i]
					tk.Resolution = &r
				}
			}
			rec.tickets = append(rec.tickets, tk)
		case traceScorecard:
			var n struct {
				ProposalID string          `json:"proposal_id"`
				TicketID   string          `json:"ticket_id"`
				Digest     string          `json:"scorecard_digest"`
				Delegated  bool            `json:"delegated"`
				Chooser    string          `json:"chooser"`
				Unscored   string          `json:"unscored"`
				Scorecard  json.RawMessage `json:"scorecard"`
			}
			if json.Unmarshal(t.Body, &n) != nil {
				continue
			}
			rec.scorecards = append(rec.scorecards, ScorecardRecord{Turn: last.Turn, ProposalID: n.ProposalID, TicketID: n.TicketID,
				Digest: n.Digest, Delegated: n.Delegated, Chooser: n.Chooser, Unscored: n.Unscored, Scorecard: n.Scorecard})
		}
	}
	return rec
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// tickets returns every ticket the run's workflow decided, in order.
func (s *Server) tickets(ctx context.Context, id string) ([]TicketRecord, error) {
	tr, err := s.runTrace(ctx, id)
	if err != nil {
		return nil, err
	}
	return readRecord(tr).tickets, nil
}

// recordOf answers a trace-backed list endpoint.
func (s *Server) recordOf(w http.ResponseWriter, r *http.Request, member string, pick func(record) any) error {
	id, err := runQuery(r)
	if err != nil {
		return err
	}
	tr, err := s.runTrace(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{member: pick(readRecord(tr))})
	return nil
}

func (s *Server) listTickets(w http.ResponseWriter, r *http.Request, _ Principal) error {
	return s.recordOf(w, r, "tickets", func(rec record) any { return rec.tickets })
}

func (s *Server) listFHR(w http.ResponseWriter, r *http.Request, _ Principal) error {
	return s.recordOf(w, r, "fhr", func(rec record) any { return rec.fhrs })
}

func (s *Server) listScorecards(w http.ResponseWriter, r *http.Request, _ Principal) error {
	return s.recordOf(w, r, "scorecards", func(rec record) any { return rec.scorecards })
}
