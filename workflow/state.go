package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/mrp"
)

// StateKind identifies the workflow state document.
const StateKind = "flrh.workflow.state"

// state is the run's whole pure state, stored as canonical JSON between
// ticks. Everything a tick needs is here, so replaying the accepted inputs
// from Init reproduces it byte for byte.
type state struct {
	Kind      string          `json:"kind"`
	RunID     string          `json:"run_id"`
	Time      int64           `json:"logical_time"` // the last accepted input's logical time
	Snapshot  json.RawMessage `json:"snapshot"`     // F: the kernel snapshot
	Supports  []support       `json:"supports"`     // L: the live base supports, by id
	Watermark int64           `json:"watermark"`    // R: every epoch before it has published
	Machine   mrp.Machine     `json:"machine"`      // H: the MRP machine
	EffectSeq int64           `json:"effect_sequence"`
	Turn      int64           `json:"turn"`
	FHRChain  string          `json:"fhr_chain"`         // hash chain over every turn's FHR digest, "" before the first
	Open      []openIntent    `json:"open"`              // intents planned and not yet answered by a receipt
	Pending   []pending       `json:"pending"`           // approval requests awaiting a person
	Offered   []offer         `json:"offered,omitempty"` // OPTIONS awaiting a choice, by proposal
	AIF       *belief         `json:"aif,omitempty"`     // the AIF controller's belief, once it observed something
}

// support is one live base support of L: a named fact and its provenance.
type support struct {
	ID         string `json:"id"`
	Predicate  string `json:"predicate"`
	Args       []any  `json:"args"`
	Provenance string `json:"provenance"`
}

type openIntent struct {
	IntentID     string `json:"intent_id"`
	ProposalID   string `json:"proposal_id"`
	EffectType   string `json:"effect_type"`
	ActionDigest string `json:"action_digest"`
}

// pending is everything needed to authorize an approval request again,
// exactly as it was decided, once a grant is presented.
type pending struct {
	RequestID string                    `json:"request_id"`
	IntentID  string                    `json:"intent_id"`
	Request   authority.ApprovalRequest `json:"request"`
	Batch     authority.PublishedBatch  `json:"batch"`
	Action    json.RawMessage           `json:"action"`
	Dest      json.RawMessage           `json:"destination"`
	Machine   mrp.Machine               `json:"machine"` // before the batch
	EffectSeq int64                     `json:"effect_sequence"`
	Now       int64                     `json:"now"`
	Turn      int64                     `json:"turn"`
	// Choices presented when the request was decided (a request that
	// follows a choice among options), presented again with the grant.
	Choices []authority.Choice `json:"choices,omitempty"`
}

// offer is a proposal H answered with OPTIONS: everything needed to decide
// it again once someone chooses one of the options.
type offer struct {
	ProposalID string                   `json:"proposal_id"`
	TicketID   string                   `json:"ticket_id"`
	Options    []string                 `json:"options"`
	Batch      authority.PublishedBatch `json:"batch"`
	Action     json.RawMessage          `json:"action"`
	Dest       json.RawMessage          `json:"destination"`
	// Ranking is the controller's scoring of the options, best first, and
	// Scorecard the digest of its scorecard (empty without a controller).
	Ranking   []Ranked `json:"ranking,omitempty"`
	Scorecard string   `json:"scorecard,omitempty"`
}

func (w *Workflow) initial(runID string) (*state, error) {
	if !cjson.ValidID(runID) {
		return nil, fmt.Errorf("workflow: run id %q is not an id", runID)
	}
	snap := kernel.NewSnapshot(w.domain, runID, w.versions)
	b, err := cjson.Marshal(snap)
	if err != nil {
		return nil, err
	}
	return &state{Kind: StateKind, RunID: runID, Snapshot: b, Supports: []support{}, Machine: mrp.New(mrp.Budgets{}),
		EffectSeq: 1, Open: []openIntent{}, Pending: []pending{}}, nil
}

func decodeState(b []byte) (*state, error) {
	var st state
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("workflow state: %w", err)
	}
	if st.Kind != StateKind {
		return nil, errors.New("workflow state: not a workflow state document")
	}
	return &st, nil
}

func (st *state) encode() ([]byte, error) { return cjson.Marshal(st) }

// normalize puts the state in the form decoding its encoding gives, which
// encodes to the same bytes: integer fact arguments as json.Number, no
// empty list of offers. Decide keeps the state it encoded for the next
// tick instead of decoding the document again.
func (st *state) normalize() {
	for i := range st.Supports {
		for j, a := range st.Supports[i].Args {
			if n, ok := a.(int64); ok {
				st.Supports[i].Args[j] = json.Number(strconv.FormatInt(n, 10))
			}
		}
	}
	if len(st.Offered) == 0 {
		st.Offered = nil
	}
}

// plain converts a value decoded with json.Number into the cjson model
// (int64 numbers), the form the pure packages read.
func plain(raw json.RawMessage) (map[string]any, error) {
	v, err := cjson.Decode(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	return m, nil
}
