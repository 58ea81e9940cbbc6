package workflow

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
)

// The notes every tick records are written here as canonical bytes,
// members in sorted order, rather than built as a map and encoded by
// reflection: the h.fhr note carries the whole FHR, whose transitions
// grow with the run. Each writer's bytes are what cjson.Marshal writes
// for the map the note used to be (notes_test.go holds them to it); a
// string cjson would refuse sends the note back to that map, so the
// recorded bytes and the "unencodable" body stay cjson's.

// fhrNote is the body of the h.fhr note:
// {"event":event,"fhr":f,"fhr_chain":chain}.
func fhrNote(f mrp.FHR, event, chain string) ([]byte, bool) {
	// An FHR of one transition is some 1,400 bytes.
	w := noteWriter{cjson.Members{B: make([]byte, 0, 1280+len(chain)+len(event)+224*len(f.Transitions))}}
	w.Open()
	w.Str("event", event)
	w.Key("fhr")
	var err error
	if w.B, err = f.AppendCanonical(w.B); err != nil {
		return nil, false
	}
	w.Str("fhr_chain", chain)
	return w.done()
}

// fhrNoteHead is the room fhrNoteBuf leaves before the FHR for the h.fhr
// note's opening, {"event":event,"fhr":, which the longest event fills
// to 36 bytes.
const fhrNoteHead = 40

// fhrNoteBuf is a buffer for the h.fhr note whose FHR H appends after
// fhrNoteHead bytes (authority.Input.FHRTo): the FHR is then written once,
// by its seal, and fhrNoteFrom writes the note around it in place.
func fhrNoteBuf(chain int) []byte {
	// An FHR of one transition is some 1,400 bytes; the note's last
	// member is the chain and 16 bytes.
	return make([]byte, fhrNoteHead, fhrNoteHead+1280+224+16+chain)
}

// fhrNoteFrom is fhrNote for an FHR whose canonical bytes canon H
// appended to buf[fhrNoteHead:]: the note's opening is written in the room
// before them and its last member after them. Where the FHR outgrew buf
// and H's append moved it, it is copied once into a buffer with the room.
// ok is false when H wrote no bytes (or the event is not plain); the
// caller then asks fhrNote.
func fhrNoteFrom(buf, canon []byte, event, chain string) ([]byte, bool) {
	if len(canon) == 0 || !cjson.Plain(event) || len(`{"event":"","fhr":`)+len(event) > fhrNoteHead {
		return nil, false
	}
	if len(buf) != fhrNoteHead || cap(buf) <= fhrNoteHead || &canon[0] != &buf[:fhrNoteHead+1][fhrNoteHead] {
		buf = append(make([]byte, fhrNoteHead, fhrNoteHead+len(canon)+len(chain)+16), canon...)
		canon = buf[fhrNoteHead:]
	}
	start := fhrNoteHead - (len(`{"event":"","fhr":`) + len(event))
	b := append(buf[start:start], `{"event":"`...)
	b = append(b, event...)
	_ = append(b, `","fhr":`...)
	w := noteWriter{cjson.Members{B: buf[start : fhrNoteHead+len(canon)]}}
	w.Str("fhr_chain", chain)
	return w.done()
}

// journeyNote is the body of the mrp.journey note: the machine's state,
// its Journey Strip and the counts of what the run holds open.
func journeyNote(room *noteRoom, m mrp.Machine, pending, open int) ([]byte, bool) {
	// The strip is a few states: written from a room on the stack, not
	// collected into a list of its own.
	var room0 [8]mrp.State
	strip := m.AppendStrip(room0[:0])
	w := noteWriter{cjson.Members{B: room.buf(160 + 24*len(strip))}}
	w.Open()
	w.Int("open_intents", int64(open))
	w.Int("pending_approvals", int64(pending))
	w.Bool("safe_mode", m.SafeMode)
	w.Str("state", string(m.State))
	w.Key("strip")
	if len(strip) == 0 {
		// The map form collected the strip into a nil slice when empty.
		w.B = append(w.B, "null"...)
	} else {
		w.B = append(w.B, '[')
		for i, s := range strip {
			if i > 0 {
				w.B = append(w.B, ',')
			}
			w.Quote(string(s), "strip")
		}
		w.B = append(w.B, ']')
	}
	w.Int("transitions", int64(len(m.Journey)))
	return room.kept(w.done())
}

// fhrNoteMap and journeyNoteMap are the notes' map forms: the fallback
// for a string cjson refuses, and what the tests compare the writers to.
func fhrNoteMap(f mrp.FHR, event, chain string) map[string]any {
	return map[string]any{"fhr": f, "event": event, "fhr_chain": chain}
}

func journeyNoteMap(m mrp.Machine, pending, open int) map[string]any {
	var strip []any
	for _, s := range m.Strip() {
		strip = append(strip, string(s))
	}
	return map[string]any{"state": string(m.State), "safe_mode": m.SafeMode, "strip": strip,
		"transitions": int64(len(m.Journey)), "pending_approvals": int64(pending), "open_intents": int64(open)}
}

// noteBytes records a note already written as canonical bytes, or, when
// the writer refused, the note's map form through note.
func (t *tick) noteBytes(kind string, b []byte, ok bool, body func() map[string]any) {
	if t.untraced {
		return
	}
	if !ok {
		t.note(kind, body())
		return
	}
	t.trace = append(t.trace, Note{Kind: kind, Body: b})
}

// noteWriter is cjson's member writer with the notes' list of strings;
// a string cjson refuses leaves Err set and sends the note back to its
// map form.
type noteWriter struct{ cjson.Members }

// strs writes a list of strings; a nil one as [], as the map form's
// anySlice(nonNil(vs)) does.
func (w *noteWriter) strs(k string, vs []string) {
	w.Key(k)
	w.B = append(w.B, '[')
	for i, v := range vs {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		w.Quote(v, k)
	}
	w.B = append(w.B, ']')
}

// outcomeRec is the h.outcome note: H's outcome for one proposal. The
// optional members are written only when has says so.
type outcomeRec struct {
	proposalID, kind, ticketID, mrpState, preview, held string
	ticketDigest, actionDigest, assessedRisk            string
	options, audit                                      []string
	rejection                                           *[2]string // code, path
	intentID                                            *string
	requestID, requestDigest                            *string
	// quorum and quorumRule: how many people the gate policy asks to
	// approve the request, and the rule that asks (0 and "": no rule does).
	quorum     int
	quorumRule string
}

func (r *outcomeRec) bytes(room *noteRoom) ([]byte, bool) {
	// The members' names and digests take some 700 bytes, an approval's
	// request some 200 more.
	w := noteWriter{cjson.Members{B: room.buf(1024 + len(r.preview) + len(r.held) + 48*(len(r.audit)+len(r.options)))}}
	w.Open()
	w.Str("action_digest", r.actionDigest)
	w.Str("assessed_risk", r.assessedRisk)
	w.strs("audit", r.audit)
	w.Str("held", r.held)
	if r.intentID != nil {
		w.Str("intent_id", *r.intentID)
	}
	w.Str("mrp_state", r.mrpState)
	w.strs("options", r.options)
	w.Str("outcome", r.kind)
	w.Str("preview", r.preview)
	w.Str("proposal_id", r.proposalID)
	if r.quorum != 0 {
		w.Int("quorum", int64(r.quorum))
		w.Str("quorum_rule", r.quorumRule)
	}
	if r.rejection != nil {
		w.Key("rejection")
		w.Open()
		w.Str("code", r.rejection[0])
		w.Str("path", r.rejection[1])
		w.Close()
	}
	if r.requestDigest != nil {
		w.Str("request_digest", *r.requestDigest)
	}
	if r.requestID != nil {
		w.Str("request_id", *r.requestID)
	}
	w.Str("ticket_digest", r.ticketDigest)
	w.Str("ticket_id", r.ticketID)
	w.Close()
	if w.Err != nil {
		return nil, false
	}
	return room.kept(w.B, true)
}

// asMap is the note's map form.
func (r *outcomeRec) asMap() map[string]any {
	rec := map[string]any{"proposal_id": r.proposalID, "outcome": r.kind, "ticket_id": r.ticketID, "mrp_state": r.mrpState,
		"preview": r.preview, "held": r.held, "options": anySlice(nonNil(r.options)), "audit": anySlice(nonNil(r.audit)),
		"ticket_digest": r.ticketDigest, "action_digest": r.actionDigest, "assessed_risk": r.assessedRisk}
	if r.rejection != nil {
		rec["rejection"] = map[string]any{"code": r.rejection[0], "path": r.rejection[1]}
	}
	if r.intentID != nil {
		rec["intent_id"] = *r.intentID
	}
	if r.requestID != nil {
		rec["request_id"] = *r.requestID
	}
	if r.requestDigest != nil {
		rec["request_digest"] = *r.requestDigest
	}
	if r.quorum != 0 {
		rec["quorum"], rec["quorum_rule"] = int64(r.quorum), r.quorumRule
	}
	return rec
}

func (t *tick) noteOutcome(r *outcomeRec) {
	if t.untraced {
		return
	}
	b, ok := r.bytes(&t.room)
	t.noteBytes("h.outcome", b, ok, r.asMap)
}

// verdictRec is the seam.verdict note: the projection of one proposal
// and, when the seam gave one verdict, its status and supports.
type verdictRec struct {
	proposalID, projectionDigest string
	frontier                     []string
	verdict                      bool // the seam gave exactly one verdict
	status                       string
	supports                     []string
}

func (r *verdictRec) bytes(room *noteRoom) ([]byte, bool) {
	// Some 250 bytes and each id's 80: room a note that overruns would
	// leave for one of its own.
	w := noteWriter{cjson.Members{B: room.buf(320 + 96*(len(r.supports)+len(r.frontier)))}}
	w.Open()
	w.strs("frontier_preconditions", r.frontier)
	w.Str("projection_digest", r.projectionDigest)
	w.Str("proposal_id", r.proposalID)
	w.Key("verdict")
	if r.verdict {
		w.Open()
		w.Str("status", r.status)
		w.strs("support_derivation_ids", r.supports)
		w.Close()
	} else {
		w.B = append(w.B, "null"...)
	}
	w.Close()
	if w.Err != nil {
		return nil, false
	}
	return room.kept(w.B, true)
}

// asMap is the note's map form.
func (r *verdictRec) asMap() map[string]any {
	var verdict any
	if r.verdict {
		verdict = map[string]any{"status": r.status, "support_derivation_ids": anySlice(r.supports)}
	}
	return map[string]any{"proposal_id": r.proposalID, "projection_digest": r.projectionDigest, "verdict": verdict,
		"frontier_preconditions": anySlice(nonNil(r.frontier))}
}

func (w *noteWriter) done() ([]byte, bool) {
	w.Close()
	if w.Err != nil {
		return nil, false
	}
	return w.B, true
}

// transitionNote is the body of the f.transition note: the event F
// applied, its transition's digest, and how many facts and proposals it
// yielded.
func transitionNote(room *noteRoom, eventID, eventType, digest string, facts, proposals int) ([]byte, bool) {
	w := noteWriter{cjson.Members{B: room.buf(128 + len(eventID) + len(eventType) + len(digest))}}
	w.Open()
	w.Str("event_id", eventID)
	w.Str("event_type", eventType)
	w.Int("facts", int64(facts))
	w.Int("proposals", int64(proposals))
	w.Str("transition_digest", digest)
	return room.kept(w.done())
}

func transitionNoteMap(eventID, eventType, digest string, facts, proposals int) map[string]any {
	return map[string]any{"event_id": eventID, "event_type": eventType, "transition_digest": digest,
		"facts": facts, "proposals": proposals}
}

// receiptNote is the body of the receipt note: which open intent a
// receipt closed, and how.
func receiptNote(room *noteRoom, intentID, proposalID, outcome string) ([]byte, bool) {
	w := noteWriter{cjson.Members{B: room.buf(64 + len(intentID) + len(proposalID) + len(outcome))}}
	w.Open()
	w.Str("intent_id", intentID)
	w.Str("outcome", outcome)
	w.Str("proposal_id", proposalID)
	return room.kept(w.done())
}

func receiptNoteMap(intentID, proposalID, outcome string) map[string]any {
	return map[string]any{"intent_id": intentID, "proposal_id": proposalID, "outcome": outcome}
}
