package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	Held      []held          `json:"held,omitempty"`    // proposals H held or escalated, to be decided again
	Open      []openIntent    `json:"open"`              // intents planned and not yet answered by a receipt
	Pending   []pending       `json:"pending"`           // approval requests awaiting a person
	Offered   []offer         `json:"offered,omitempty"` // OPTIONS awaiting a choice, by proposal
	AIF       *belief         `json:"aif,omitempty"`     // the AIF controller's belief, once it observed something

	// aggregateValue is the snapshot's aggregate id as an interface value,
	// the one the last tick's event payload held (nil: none yet); see
	// aggregateValueOf.
	aggregateValue any

	// canonSnapshot says Snapshot holds canonical bytes, as cjson writes
	// them nested in the state, so encode copies them as they are: true
	// once a tick encoded the snapshot itself. The bytes of a decoded
	// document are its own, which encode writes again through cjson.
	canonSnapshot bool
	// parsed is the kernel snapshot Snapshot encodes, when the tick that
	// wrote Snapshot had it (F's next snapshot): the next tick steps from
	// it instead of parsing the bytes again. nil: parse them.
	parsed *kernel.Snapshot
	// kernelBytes says Snapshot holds the bytes kernel.StepEncoded returned
	// with parsed as the next snapshot (or, for a run's first state, those
	// parsed.Encoded() returned as known), which the next step may be
	// handed.
	kernelBytes bool
	// snapDigest is the digest kernel.StepDigested returned with those
	// bytes (the next step's prior snapshot digest), "" when none was
	// returned. Only meaningful with kernelBytes.
	snapDigest string
	// ownSupports says Supports' array was made by a tick of this run
	// for this state alone (factChangesIn): nothing else holds it, so the
	// next tick, which takes the state whole (a state is taken from the
	// cache once, or decoded afresh), may append to it in place. A
	// decoded or initial state's is false: its supports are copied first.
	ownSupports bool
	// supportsEnd is where appendCanonical last ended the supports'
	// objects (the list's closing bracket), in the bytes it wrote.
	supportsEnd int
	// journeyKept is the machine's journey entries as the last document
	// Decide returned holds them, cut from it, and journeyOf the entries
	// they encode (nil: none kept). The Journey Strip only grows and a
	// recorded entry never changes, but H's machine, or a grant's, is a
	// new one: the next document copies the kept bytes only while its
	// machine's journey opens with the same entries (appendCanonical).
	journeyKept []byte
	journeyOf   []mrp.Entry
	// journeyAt and journeyEnd are where appendCanonical last wrote the
	// journey's entries, in the bytes it wrote (-1: a nil journey).
	journeyAt, journeyEnd int
}

// support is one live base support of L: a named fact and its provenance.
type support struct {
	ID         string `json:"id"`
	Predicate  string `json:"predicate"`
	Args       []any  `json:"args"`
	Provenance string `json:"provenance"`

	// enc is the support's canonical object as the last document Decide
	// returned holds it, cut from that document (nil: not yet encoded,
	// as in a decoded state). A support never changes once made — F
	// makes a new one for each fact it inserts, and normalize changes an
	// argument's type, not its bytes — so the next tick's document
	// copies these bytes rather than writing the support again
	// (keep). The document's bytes are never changed
	// (decision 1725), so the cut stays valid as long as it is kept.
	enc []byte
	// at is where appendCanonical last wrote the support's object, in
	// the bytes it wrote.
	at int
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
	// Resumed is the person's RESUME presented when the request was
	// decided (a held proposal decided again), presented again with it.
	Resumed []authority.Resumption `json:"resumed,omitempty"`
	// Quorum is how many people the gate policy asked to approve the
	// request (authority.QuorumRelation), when it asked for more than one; the
	// request needs the larger of it and the approval policy's quorum.
	Quorum int `json:"quorum,omitempty"`

	// approved is the MRP machine H leaves once the grant is used, when
	// the tick that wrote the request computed it (deciding the intent a
	// grant yields computes it as well): the receipt that proves the
	// grant consumed takes it instead of deciding the batch a third time.
	// nil: decide it again. It is never encoded.
	approved *mrp.Machine
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

// held is a proposal H held or escalated: everything needed to decide it
// again once the deliberation machine admits a decision (decision 0612).
type held struct {
	ProposalID string                   `json:"proposal_id"`
	TicketID   string                   `json:"ticket_id"`
	Outcome    string                   `json:"outcome"` // HELD or ESCALATED
	Why        string                   `json:"why"`
	Since      int64                    `json:"since"` // the logical time H held it
	Batch      authority.PublishedBatch `json:"batch"`
	Action     json.RawMessage          `json:"action"`
	Dest       json.RawMessage          `json:"destination"`
	// Choices presented when H held it, presented again.
	Choices []authority.Choice `json:"choices,omitempty"`
}

func (w *Workflow) initial(runID string) (*state, error) {
	if !cjson.ValidID(runID) {
		return nil, fmt.Errorf("workflow: run id %q is not an id", runID)
	}
	// The initial state is the domain profile's own, shared by every run's
	// first snapshot: no step of the declarative domain, and nothing in
	// the workflow, writes into a snapshot's state (Evolve copies it).
	snap := kernel.NewSharedSnapshot(w.domain, runID, w.versions)
	// What cjson.Marshal writes for it, the bundle's checked envelope copied.
	b, known, err := snap.EncodedChecked(w.checkedVersions)
	if err != nil {
		return nil, err
	}
	return &state{Kind: StateKind, RunID: runID, Snapshot: b, Supports: []support{}, Machine: mrp.New(mrp.Budgets{}),
		EffectSeq: 1, Open: []openIntent{}, Pending: []pending{}, canonSnapshot: true, parsed: &snap, kernelBytes: known}, nil
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

// encode returns the state's canonical bytes: exactly what
// cjson.Marshal(st) writes, written member by member for the parts the
// state owns (TestStateEncodingIsMarshal holds them to it). Anything the
// fast path does not vouch for — a string outside the string rule, an
// argument of another type, an error in a nested part — is left to
// cjson.Marshal, whose bytes and errors are the contract.
func (st *state) encode() ([]byte, error) {
	// Written into a recycled buffer and copied out at its length: the
	// document is kept, and its size is known only once it is written.
	ok := false
	b := cjson.Written(func(b []byte) []byte {
		b, ok = st.appendCanonical(b)
		return b
	})
	if ok {
		return b, nil
	}
	return cjson.Marshal(st)
}

// encodeKept is encode for the document Decide returns, which nobody
// changes (decision 1725): each support's object and the journey's
// entries are then cut from it for the next tick's document to copy
// (keep).
func (st *state) encodeKept() ([]byte, error) {
	ok := false
	b := cjson.Written(func(b []byte) []byte {
		b, ok = st.appendCanonical(b)
		return b
	})
	if ok {
		st.keep(b)
		return b, nil
	}
	return cjson.Marshal(st)
}

// appendCanonical appends the members in byte order of their names. A
// snapshot the tick encoded is written as it is, the MRP machine by its
// own canonical writer; the other parts of other packages' types (the
// pending requests, the offers, the belief) are encoded by cjson, nested
// as deep as they sit in the state.
func (st *state) appendCanonical(b []byte) ([]byte, bool) {
	ok := true
	str := func(s string) {
		if ok {
			b, ok = appendChecked(b, s)
		}
	}
	nested := func(v any) {
		if ok {
			b, ok = appendNested(b, v)
		}
	}
	b = append(b, '{')
	if st.AIF != nil {
		b = append(b, `"aif":`...)
		nested(st.AIF)
		b = append(b, ',')
	}
	b = append(b, `"effect_sequence":`...)
	b = cjson.AppendInt(b, st.EffectSeq)
	b = append(b, `,"fhr_chain":`...)
	str(st.FHRChain)
	if len(st.Held) > 0 {
		b = append(b, `,"held":`...)
		nested(st.Held)
	}
	b = append(b, `,"kind":`...)
	str(st.Kind)
	b = append(b, `,"logical_time":`...)
	b = cjson.AppendInt(b, st.Time)
	b = append(b, `,"machine":`...)
	if ok {
		// The machine's Journey Strip grows with the run: written
		// without reflection, byte for byte what cjson.Marshal writes,
		// the entries the document before held copied from it.
		n, kept := 0, []byte(nil)
		if k := len(st.journeyOf); k > 0 && k <= len(st.Machine.Journey) && slices.Equal(st.Machine.Journey[:k], st.journeyOf) {
			n, kept = k, st.journeyKept
		}
		if mb, at, end, err := st.Machine.AppendCanonicalKept(b, kept, n); err == nil {
			b, st.journeyAt, st.journeyEnd = mb, at, end
		} else {
			ok = false
		}
	}
	if len(st.Offered) > 0 {
		b = append(b, `,"offered":`...)
		nested(st.Offered)
	}
	b = append(b, `,"open":`...)
	if st.Open == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, o := range st.Open {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"action_digest":`...)
			str(o.ActionDigest)
			b = append(b, `,"effect_type":`...)
			str(o.EffectType)
			b = append(b, `,"intent_id":`...)
			str(o.IntentID)
			b = append(b, `,"proposal_id":`...)
			str(o.ProposalID)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"pending":`...)
	// Most states wait for no one: an empty list needs no reflection.
	switch {
	case st.Pending == nil:
		b = append(b, "null"...)
	case len(st.Pending) == 0:
		b = append(b, "[]"...)
	default:
		// Written member by member (statepending.go), not by reflection.
		if ok {
			pw := pendingWriter{b: b, ok: true}
			pw.pendings(st.Pending)
			b, ok = pw.b, pw.ok
		}
	}
	b = append(b, `,"run_id":`...)
	str(st.RunID)
	b = append(b, `,"snapshot":`...)
	switch {
	case st.Snapshot == nil:
		b = append(b, "null"...)
	case st.canonSnapshot:
		b = append(b, st.Snapshot...)
	default:
		nested(st.Snapshot)
	}
	b = append(b, `,"supports":`...)
	if st.Supports == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range st.Supports {
			s := &st.Supports[i]
			if i > 0 {
				b = append(b, ',')
			}
			s.at = len(b)
			if s.enc != nil {
				// Written by an earlier tick, and unchanged since.
				b = append(b, s.enc...)
				continue
			}
			if ok {
				b, ok = appendSupport(b, s)
			}
		}
		st.supportsEnd = len(b)
		b = append(b, ']')
	}
	b = append(b, `,"turn":`...)
	b = cjson.AppendInt(b, st.Turn)
	b = append(b, `,"watermark":`...)
	b = cjson.AppendInt(b, st.Watermark)
	return append(b, '}'), ok
}

// appendSupport appends a support's canonical object; ok is false when
// one of its strings breaks the string rule or an argument is neither a
// string nor an integer.
func appendSupport(b []byte, s *support) ([]byte, bool) {
	ok := true
	b = append(b, `{"args":`...)
	if s.Args == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for j, a := range s.Args {
			if j > 0 {
				b = append(b, ',')
			}
			switch v := a.(type) {
			case string:
				b, ok = appendStr(b, v, ok)
			case int64:
				b = cjson.AppendInt(b, v)
			case json.Number:
				n, err := strconv.ParseInt(string(v), 10, 64)
				ok = ok && err == nil
				b = cjson.AppendInt(b, n)
			default:
				ok = false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"id":`...)
	b, ok = appendStr(b, s.ID, ok)
	b = append(b, `,"predicate":`...)
	b, ok = appendStr(b, s.Predicate, ok)
	b = append(b, `,"provenance":`...)
	b, ok = appendStr(b, s.Provenance, ok)
	return append(b, '}'), ok
}

// keep cuts each support's object and the machine's journey entries
// from doc, the document encode just wrote for st (appendCanonical's
// bytes, copied out whole), for the next tick's document to copy
// (support.enc, journeyKept). Only a document nobody changes is cut
// from: the one Decide returns.
func (st *state) keep(doc []byte) {
	st.journeyKept, st.journeyOf = nil, nil
	if j := st.Machine.Journey; len(j) > 0 && st.journeyAt >= 0 {
		st.journeyKept, st.journeyOf = doc[st.journeyAt:st.journeyEnd:st.journeyEnd], j[:len(j):len(j)]
	}
	for i := range st.Supports {
		end := st.supportsEnd
		if i+1 < len(st.Supports) {
			end = st.Supports[i+1].at - 1 // before the comma
		}
		s := &st.Supports[i]
		s.enc = doc[s.at:end:end]
	}
}

// appendNested appends v's canonical bytes as cjson writes a member of the
// state's root object: one level down, where no array is a set (only a
// root object's kind names sets). Wrapping v in an array puts it there.
func appendNested(b []byte, v any) ([]byte, bool) {
	// Written in place (AppendMarshal writes what Marshal returns), then
	// moved one byte down over the array's '[' and cut before its ']'.
	start := len(b)
	w, err := cjson.AppendMarshal(b, []any{v})
	if err != nil {
		return b, false
	}
	n := copy(w[start:], w[start+1:len(w)-1])
	return w[:start+n], true
}

// normalize puts the state in the form decoding its encoding gives, which
// encodes to the same bytes: integer fact arguments as json.Number, no
// empty list of offers or of held proposals. Decide keeps the state it
// encoded for the next tick instead of decoding the document again.
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
	if len(st.Held) == 0 {
		st.Held = nil
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
