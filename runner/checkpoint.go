package runner

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/store"
)

// CheckpointKind and CheckpointFormat identify the runner's checkpoint
// layout. A checkpoint of another kind or a newer format quarantines the run.
const (
	CheckpointKind   = "flrh.runner.checkpoint"
	CheckpointFormat = 1
)

// checkpoint is everything the runner needs to resume a run, in canonical
// JSON. It is derived state: replaying the run's accepted inputs through the
// workflow reproduces it byte for byte.
type checkpoint struct {
	Kind           string                `json:"kind"`
	Format         int64                 `json:"format"`
	WorkflowID     string                `json:"workflow_id"`
	WorkflowDigest string                `json:"workflow_digest"`
	Control        control.Configuration `json:"control"`
	State          any                   `json:"state"`      // the workflow's state (canonical value)
	Accepted       int64                 `json:"accepted"`   // inputs accepted so far
	Completion     Completion            `json:"completion"` // the workflow's latest verdict
	Open           []openEffect          `json:"open"`       // effects planned and not yet closed, in order
	Ingest         []pendingReceipt      `json:"ingest"`     // committed receipts not yet accepted as inputs, in order
	Transitions    int64                 `json:"transitions"`
	// Progress is the loop contract's plateau detector: one round per
	// visit to VERIFY_COMPLETION, a round's gain the receipts it accepted.
	Progress      control.ProgressWindow `json:"progress"`
	RoundReceipts int64                  `json:"round_receipts"`
	// RoundSteered marks a round whose input was a person's MRP transition
	// the workflow accepted: a person steered, the loop did not spin, so
	// the detector does not judge it.
	RoundSteered bool `json:"round_steered,omitempty"`
	// Budget is the run's budget ledger (budget.go); checkpoints written
	// before runs kept one have none.
	Budget *budgetLedger `json:"budget,omitempty"`

	// alone and embedded cache the canonical bytes of State (which is nil
	// when the state was kept as the workflow's bytes, setCanonical), which grows
	// with every step (the Journey Strip) and is read as bytes several times
	// a step: alone is State encoded on its own (what Decide reads and what
	// state digests cover), embedded is State as it is written inside the
	// checkpoint. nil means not yet computed; setState clears both.
	alone, embedded []byte
	// digest caches cjson.Digest(alone) ("" until computed; cleared with
	// alone): the epoch's state digest and the round's fingerprint both
	// cover the same state.
	digest string
	// written is the run's buffer its checkpoints are written into at each
	// flush (encodeReused) and handed to the store's Commit, which keeps
	// none of it once it returns (store.Store.Commit): the run's next
	// flush writes over it, so nothing but the store reads a checkpoint's
	// body after its commit.
	written []byte
	// rest is the length of the last checkpoint written into written less
	// its state's (encodeReused), and restBefore the one's before it: the
	// larger, with the next state's length, is about what the next one
	// needs. A governed step's two checkpoints alternate between one
	// holding the open effect's intent and payload and one without, so
	// the last one alone tells the next too little every other time.
	rest, restBefore int
	// ids spells the ids of the run's next transitions (fireAs).
	ids eventIDs
	// stored is what the run's last flush handed the store's Commit as
	// the tick's checkpoint (flush), written over at the next.
	stored store.Checkpoint
}

// pendingReceipt is a committed receipt the run has still to accept.
type pendingReceipt struct {
	IntentID string `json:"intent_id"`
	Digest   string `json:"digest"`
	Receipt  any    `json:"receipt"`         // the receipt's value, or its canonical bytes (a canonJSON) as close keeps them
	Usage    *Usage `json:"usage,omitempty"` // what the adapter reported its attempts cost, charged already
}

// openEffect is an effect the run owes the world, from plan to receipt.
type openEffect struct {
	IntentID      string        `json:"intent_id"`
	Stage         string        `json:"stage"` // planned, awaiting_approval, committed, unknown
	Intent        any           `json:"intent"`
	Payload       any           `json:"payload"` // a value, or canonical bytes (a canonJSON) as planned keeps them
	ContentDigest string        `json:"content_digest"`
	Approval      *ApprovalNeed `json:"approval"`
	ApprovalID    string        `json:"approval_id"`
	// Concurring are the grants the run took toward the request's quorum
	// (Quorate) before the one it names in ApprovalID: each consumed with
	// the intent.
	Concurring []concurrence `json:"concurring,omitempty"`
	Usage      *Usage        `json:"usage,omitempty"` // what the adapter reported its attempts cost so far

	// committed is Intent as planned kept it (asDecoded) or commitIntents
	// decoded it, kept so that binding, sending and reconciling need not
	// encode and decode the intent again: a committed intent no longer
	// changes. Whatever edits Intent drops it; nil after a checkpoint is
	// read, and then Intent is decoded.
	committed *protocol.EffectIntent
	// intentBytes and payloadBytes are Intent's and Payload's canonical
	// bytes, kept so that binding and sending need not encode them again:
	// intentBytes as planned encoded the intent, the bytes Intent was
	// decoded from (whatever edits Intent drops it, with committed), so
	// that the checkpoint can be written from them (keptOpen);
	// payloadBytes the payload's bytes kept as planned, or from their
	// first encoding (Payload is never edited). Empty after a checkpoint
	// is read, and then they are encoded.
	intentBytes, payloadBytes canonJSON
	// prepared is the request an effect.Preparer prepared when binding
	// bound ContentDigest to it, kept so that sending need not prepare it
	// again; sent only while its digest is still ContentDigest (whatever
	// edits Intent drops it too). None after a checkpoint is read. Held
	// in the effect itself, where a pointer to one was an allocation a
	// step.
	prepared keptPrepared
}

// concurrence is a grant a run took toward a request's quorum, and the
// person who gave it.
type concurrence struct {
	ApprovalID string `json:"approval_id"`
	Actor      string `json:"actor"`
}

// keptPrepared is a request prepared for an open effect, when ok.
type keptPrepared struct {
	p  effect.Prepared
	ok bool
}

// sendable is the request prepared when the effect's content was bound,
// while the content digest is still the one bound to it, or nil.
func (e *openEffect) sendable() *effect.Prepared {
	if !e.prepared.ok || e.prepared.p.ContentDigest != e.ContentDigest {
		return nil
	}
	return &e.prepared.p
}

// intentCanonical returns Intent's canonical bytes.
func (e *openEffect) intentCanonical() ([]byte, error) {
	if e.intentBytes.kept() {
		return e.intentBytes.b, nil
	}
	return canonBytes(e.Intent)
}

// payloadCanonical returns a copy of Payload's canonical bytes, encoding
// them at most once: the copy is the caller's, which an adapter it hands
// it to may modify.
func (e *openEffect) payloadCanonical() ([]byte, error) {
	if !e.payloadBytes.kept() {
		if k, ok := asKept(e.Payload); ok {
			e.payloadBytes = k
		} else {
			b, err := canonBytes(e.Payload)
			if err != nil {
				return nil, err
			}
			e.payloadBytes = canonJSON{b: b, depth: nesting(b)}
		}
	}
	return bytes.Clone(e.payloadBytes.b), nil
}

// protocolIntent is the effect's intent, decoded strictly: the caller's
// own, which it (or an adapter it hands it to) may modify.
func (e *openEffect) protocolIntent() (protocol.EffectIntent, error) {
	if e.committed == nil {
		b, err := e.intentCanonical()
		if err != nil {
			return protocol.EffectIntent{}, err
		}
		return decodeIntent(b)
	}
	return cloneIntent(*e.committed), nil
}

// intentObject returns Intent as an object of cjson's value model (nil if
// it is not one), decoding the kept bytes into Intent on first use: what
// reads or edits the intent's members reads them there. Intent and
// intentBytes still agree after it.
func (e *openEffect) intentObject() map[string]any {
	if raw, ok := rawOf(e.Intent); ok {
		v, err := canonValue(raw)
		if err != nil {
			return nil
		}
		e.Intent = v
	}
	m, _ := e.Intent.(map[string]any)
	return m
}

// keptIntent is the intent commitIntents decoded, while Intent is still
// the bytes planned kept: cjson's encoding of a protocol.EffectIntent,
// whose members are those of the struct decoded from it. nil otherwise.
func (e *openEffect) keptIntent() *protocol.EffectIntent {
	if _, ok := rawOf(e.Intent); ok {
		return e.committed
	}
	return nil
}

// cloneIntent is pi sharing nothing with it.
func cloneIntent(pi protocol.EffectIntent) protocol.EffectIntent {
	pi.Preconditions = slices.Clone(pi.Preconditions)
	if pi.ApprovalDigest != nil {
		d := *pi.ApprovalDigest
		pi.ApprovalDigest = &d
	}
	return pi
}

const (
	stagePlanned          = "planned"
	stageAwaitingApproval = "awaiting_approval"
	stageCommitted        = "committed"
	stageUnknown          = "unknown"
)

// setState replaces the workflow state and drops its cached encodings.
func (c *checkpoint) setState(v any) {
	c.State, c.alone, c.embedded, c.digest = v, nil, nil, ""
}

// setInitial sets the state Init returned, b, as setState(canonValue(b))
// does: kept as a copy of its bytes where they are canonical, with a root
// object whose kind (if any) names no set-like members, and nest within
// setCanonical's limit — which is what encoding their value, alone or
// inside the checkpoint, writes — and decoded otherwise.
func (c *checkpoint) setInitial(b []byte) error {
	if plainRootObject(b) && cjson.IsCanonical(b) && c.setCanonical(bytes.Clone(b)) {
		return nil
	}
	sv, err := canonValue(b)
	if err != nil {
		return err
	}
	c.setState(sv)
	return nil
}

// plainRootObject reports whether b, read as JSON text, is an object with
// no "kind" member or one whose kind names no set-like members, the kind
// read without escapes. False where that cannot be told (not an object,
// a key the member reader declines, a kind that is not a plain string).
func plainRootObject(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	vals, ok := jsonread.Members(b, "kind")
	if !ok {
		return false
	}
	if vals[0] == nil {
		return true
	}
	kind, ok := jsonread.PlainString(vals[0])
	return ok && cjson.SetLikePaths(kind) == nil
}

// setCanonical makes b, canonical bytes of a value whose root kind has no
// set-like members, the workflow state without decoding it: its bytes alone
// and embedded are b itself. State stays nil; what reads the state reads it
// through stateBytes and stateEmbedded. It refuses (false, nothing changed)
// bytes nested so deep that their encoding inside the checkpoint could
// differ.
func (c *checkpoint) setCanonical(b []byte) bool {
	if !nestsBelow(b, cjson.MaxDepth-2) || len(b) == 0 {
		return false
	}
	c.State, c.alone, c.embedded, c.digest = nil, b, b, ""
	return true
}

// nestsBelow reports whether nesting(b) < limit. Containers cannot nest
// deeper than there are brackets that open them, so text with fewer than
// limit of '{' and '[' together (inside strings or not), counted a word at
// a time, needs no scan; other text is scanned.
func nestsBelow(b []byte, limit int) bool {
	if bytes.Count(b, []byte{'{'})+bytes.Count(b, []byte{'['}) < limit {
		return true
	}
	return nesting(b) < limit
}

// nesting is how deep arrays and objects nest in JSON text b (strings
// skipped), at most as deep as cjson admits anything. A workflow's state is
// mostly strings: each is skipped to its closing quote with IndexByte
// rather than byte by byte (a quote is closing when an even number of
// backslashes precedes it).
func nesting(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return deepest // unterminated: the rest is the string
				}
				i += 1 + j
				k := i - 1
				for b[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// stateBytes returns the canonical bytes of State on its own, encoding it
// at most once per state.
func (c *checkpoint) stateBytes() ([]byte, error) {
	if c.alone != nil {
		return c.alone, nil
	}
	// Where State's own root kind names set-like members, or where State
	// sits at the depth limit once nested, its encoding alone and its
	// encoding inside the checkpoint may differ: encode it alone.
	if e, err := c.stateEmbedded(); err == nil && !ownSets(c.State) {
		c.alone = e
		return e, nil
	}
	b, err := canonBytes(c.State)
	if err != nil {
		return nil, err
	}
	c.alone = b
	return b, nil
}

// stateDigest is cjson.Digest of stateBytes, taken at most once per
// state.
func (c *checkpoint) stateDigest() (string, error) { return c.stateDigestIn(nil) }

// stateDigestIn is stateDigest, its text spelled in texts when there are
// any (digestText): a pass's, whose block the run's cached checkpoint
// then keeps alive with the text, as it does its head's.
func (c *checkpoint) stateDigestIn(texts *store.DigestTexts) (string, error) {
	if c.digest != "" {
		return c.digest, nil
	}
	b, err := c.stateBytes()
	if err != nil {
		return "", err
	}
	c.digest = digestText(texts, b)
	return c.digest, nil
}

// stateEmbedded returns the bytes State has inside the checkpoint: as the
// value of a member of a struct whose kind names no set-like members, one
// level deep.
func (c *checkpoint) stateEmbedded() ([]byte, error) {
	if c.embedded != nil {
		return c.embedded, nil
	}
	// A struct with one member of State's Go type takes the same path
	// through the encoder (and its depth count) as the checkpoint does.
	b, err := cjson.Marshal(stateHolder{V: c.State})
	if err != nil {
		return nil, err
	}
	c.embedded = b[len(`{"v":`) : len(b)-1]
	return c.embedded, nil
}

type stateHolder struct {
	V any `json:"v"`
}

// ownSets reports whether v, encoded as a document of its own, is a root
// object whose kind gives it set-like members.
func ownSets(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return v != nil && !isPlain(v)
	}
	k, ok := m["kind"].(string)
	return ok && cjson.SetLikePaths(k) != nil
}

// isPlain reports whether v is a scalar or array of the cjson value model,
// whose encoding alone has no set-like members.
func isPlain(v any) bool {
	switch v.(type) {
	case bool, string, int64, int, []any:
		return true
	}
	return false
}

// stateMarker is what encode writes where State belongs before splicing
// State's cached bytes in: the members that follow "state" in a
// checkpoint (transitions, workflow_digest, workflow_id) are a number and
// two strings, in which an unescaped quote cannot occur, so the last
// occurrence of the marker is the checkpoint's own member.
const stateMarker = `,"state":null,"transitions":`

// encode returns the checkpoint's canonical bytes. State is encoded once
// per state (stateEmbedded) and spliced in, rather than re-encoded with
// every checkpoint; the bytes are those cjson.Marshal(c) writes. They are
// written member by member (appendCanonical) into cjson's recycled buffer
// and copied out once; where that writer gives up, encodeGeneric writes
// them, or the error.
func (c *checkpoint) encode() ([]byte, error) {
	state, err := c.stateEmbedded()
	if err != nil {
		return nil, err
	}
	var ok bool
	out := cjson.Written(func(b []byte) []byte {
		b, ok = c.appendCanonical(b, state)
		if !ok {
			return b[:0]
		}
		return b
	})
	if ok {
		return out, nil
	}
	return c.encodeGeneric(state)
}

// encodeReused is encode written into the run's own buffer (written)
// rather than copied out of cjson's: the bytes are those encode returns,
// and they are the caller's only until the checkpoint is encoded again
// through encodeReused. The runner hands them to the store's Commit, which
// keeps none of them once it returns, and reads them no more after the
// commit (decision 1724).
func (c *checkpoint) encodeReused() ([]byte, error) {
	if c.written == nil {
		// The run's first: copied out of cjson's buffer at its size, rather
		// than grown by doubling from nothing, and kept.
		b, err := c.encode()
		c.written = b[:0:cap(b)]
		if err == nil {
			c.rest = len(b) - len(c.embedded)
		}
		return b, err
	}
	state, err := c.stateEmbedded()
	if err != nil {
		return nil, err
	}
	// A run's state grows at every step, and so does its checkpoint: a
	// buffer it outgrows is replaced by one of twice what this checkpoint
	// is expected to need, rather than grown by append by a quarter at a
	// time, which a run's next few steps outgrow again.
	if need := max(c.rest, c.restBefore) + len(state); need > cap(c.written) {
		c.written = make([]byte, 0, 2*need)
	}
	b, ok := c.appendCanonical(c.written[:0], state)
	if cap(b) > cap(c.written) {
		c.written = b[:0]
	}
	c.rest, c.restBefore = len(b)-len(state), c.rest
	if ok {
		return b[:len(b):len(b)], nil
	}
	return c.encodeGeneric(state)
}

// encodeGeneric is encode through cjson's encoder: the members other than
// State encoded by cjson, State's bytes spliced in.
func (c *checkpoint) encodeGeneric(state []byte) ([]byte, error) {
	rest := *c
	rest.State = nil
	rest.Open = keptOpen(c.Open)
	// The members other than State are encoded into cjson's recycled
	// buffer, State is spliced in there, and the checkpoint is copied out
	// once at its length.
	var err2 error
	out := cjson.Written(func(b []byte) []byte {
		b, err2 = cjson.AppendMarshal(b, &rest)
		if err2 != nil {
			return b[:0]
		}
		at := bytes.LastIndex(b, []byte(stateMarker))
		if at < 0 {
			err2 = errNoStateMember
			return b[:0]
		}
		at += len(`,"state":`)
		// "null" becomes State's bytes: what follows moves by the
		// difference (copy moves overlapping bytes either way).
		tail := b[at+len("null"):]
		n := len(b) - len("null") + len(state)
		if n > len(b) {
			b = slices.Grow(b, n-len(b))
			tail = b[at+len("null") : len(b)]
		}
		b = b[:n]
		copy(b[at+len(state):], tail)
		copy(b[at:], state)
		return b
	})
	if err2 == errNoStateMember {
		return cjson.Marshal(c) // not reached: State is never omitted
	}
	if err2 != nil {
		return nil, err2
	}
	return out, nil
}

var errNoStateMember = errors.New("checkpoint encoded without its state member")

// keptOpen is open with each intent whose canonical bytes are kept given
// as those bytes (a json.RawMessage), for the encoder to copy rather than
// walk the decoded value, sorting every map's keys on the way. The
// intent's value is what decoding those very bytes gave (planned), so
// the encoder writes the same bytes either way: below the root, where no
// array is a set, bytes that are canonical at their depth are exactly the
// encoding of what they decode to, and anything else it decodes and
// encodes as it would the value. Open itself is not changed.
func keptOpen(open []openEffect) []openEffect {
	n := 0
	for i := range open {
		if open[i].intentBytes.kept() {
			n++
		}
	}
	if n == 0 {
		return open
	}
	out := slices.Clone(open)
	for i := range out {
		if out[i].intentBytes.kept() {
			out[i].Intent = out[i].intentBytes
		}
	}
	return out
}

// decodeCheckpoint reads a stored checkpoint and refuses anything it cannot
// trust: a digest that does not match, another kind, a newer format, a
// workflow other than the run's. The caller quarantines the run on error.
func decodeCheckpoint(cp store.Checkpoint, wf Workflow) (*checkpoint, error) {
	if store.BodyDigest(cp.Body) != cp.Digest {
		return nil, fmt.Errorf("checkpoint at event %d: digest does not match its bytes", cp.Seq)
	}
	if cp.FormatVersion != CheckpointFormat {
		return nil, fmt.Errorf("checkpoint at event %d: format %d, this build reads %d", cp.Seq, cp.FormatVersion, CheckpointFormat)
	}
	v, err := cjson.Decode(cp.Body)
	if err != nil {
		return nil, fmt.Errorf("checkpoint at event %d: %w", cp.Seq, err)
	}
	canon, err := cjson.Encode(v)
	if err != nil || string(canon) != string(cp.Body) {
		return nil, fmt.Errorf("checkpoint at event %d: not canonical", cp.Seq)
	}
	var c checkpoint
	if err := decodeInto(cp.Body, &c); err != nil {
		return nil, fmt.Errorf("checkpoint at event %d: %w", cp.Seq, err)
	}
	if c.Kind != CheckpointKind {
		return nil, fmt.Errorf("checkpoint at event %d: kind %q", cp.Seq, c.Kind)
	}
	if c.WorkflowID != wf.ID() || c.WorkflowDigest != wf.Digest() {
		return nil, fmt.Errorf("checkpoint at event %d: written by workflow %s@%s, loaded %s@%s", cp.Seq, c.WorkflowID, c.WorkflowDigest, wf.ID(), wf.Digest())
	}
	return &c, nil
}
