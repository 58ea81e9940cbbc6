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

// appendNoteString appends s as cjson would, reporting false for a
// string cjson refuses.
func appendNoteString(b []byte, s string) ([]byte, bool) {
	b, ascii := cjson.AppendQuoted(b, s)
	return b, ascii || cjson.CheckString(s, "") == nil
}

// fhrNote is the body of the h.fhr note:
// {"event":event,"fhr":f,"fhr_chain":chain}.
func fhrNote(f mrp.FHR, event, chain string) ([]byte, bool) {
	b := make([]byte, 0, 640+len(chain)+len(event)+224*len(f.Transitions))
	b = append(b, `{"event":`...)
	b, ok := appendNoteString(b, event)
	if !ok {
		return nil, false
	}
	b = append(b, `,"fhr":`...)
	b, err := f.AppendCanonical(b)
	if err != nil {
		return nil, false
	}
	b = append(b, `,"fhr_chain":`...)
	if b, ok = appendNoteString(b, chain); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

// journeyNote is the body of the mrp.journey note: the machine's state,
// its Journey Strip and the counts of what the run holds open.
func journeyNote(m mrp.Machine, pending, open int) ([]byte, bool) {
	strip := m.Strip()
	b := make([]byte, 0, 160+24*len(strip))
	b = append(b, `{"open_intents":`...)
	b = cjson.AppendInt(b, int64(open))
	b = append(b, `,"pending_approvals":`...)
	b = cjson.AppendInt(b, int64(pending))
	b = append(b, `,"safe_mode":`...)
	if m.SafeMode {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	b = append(b, `,"state":`...)
	b, ok := appendNoteString(b, string(m.State))
	if !ok {
		return nil, false
	}
	b = append(b, `,"strip":`...)
	if len(strip) == 0 {
		// The map form collected the strip into a nil slice when empty.
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range strip {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendNoteString(b, string(s)); !ok {
				return nil, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"transitions":`...)
	b = cjson.AppendInt(b, int64(len(m.Journey)))
	return append(b, '}'), true
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
	if !ok {
		t.note(kind, body())
		return
	}
	t.trace = append(t.trace, Note{Kind: kind, Body: b})
}

// noteWriter writes an object's members, which its caller gives in
// sorted order; ok turns false at a string cjson refuses.
type noteWriter struct {
	b     []byte
	ok    bool
	first bool
}

func (w *noteWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	// Keys are this file's own member names: plain ASCII, written raw.
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *noteWriter) str(k, v string) {
	w.key(k)
	var ok bool
	w.b, ok = appendNoteString(w.b, v)
	w.ok = w.ok && ok
}

// strs writes a list of strings; a nil one as [], as the map form's
// anySlice(nonNil(vs)) does.
func (w *noteWriter) strs(k string, vs []string) {
	w.key(k)
	w.b = append(w.b, '[')
	for i, v := range vs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		var ok bool
		w.b, ok = appendNoteString(w.b, v)
		w.ok = w.ok && ok
	}
	w.b = append(w.b, ']')
}

func (w *noteWriter) open()  { w.b = append(w.b, '{'); w.first = true }
func (w *noteWriter) close() { w.b = append(w.b, '}'); w.first = false }

// outcomeRec is the h.outcome note: H's outcome for one proposal. The
// optional members are written only when has says so.
type outcomeRec struct {
	proposalID, kind, ticketID, mrpState, preview, held string
	ticketDigest, actionDigest, assessedRisk            string
	options, audit                                      []string
	rejection                                           *[2]string // code, path
	intentID                                            *string
	requestID, requestDigest                            *string
}

func (r *outcomeRec) bytes() ([]byte, bool) {
	w := noteWriter{b: make([]byte, 0, 384+len(r.preview)+len(r.held)), ok: true}
	w.open()
	w.str("action_digest", r.actionDigest)
	w.str("assessed_risk", r.assessedRisk)
	w.strs("audit", r.audit)
	w.str("held", r.held)
	if r.intentID != nil {
		w.str("intent_id", *r.intentID)
	}
	w.str("mrp_state", r.mrpState)
	w.strs("options", r.options)
	w.str("outcome", r.kind)
	w.str("preview", r.preview)
	w.str("proposal_id", r.proposalID)
	if r.rejection != nil {
		w.key("rejection")
		w.open()
		w.str("code", r.rejection[0])
		w.str("path", r.rejection[1])
		w.close()
	}
	if r.requestDigest != nil {
		w.str("request_digest", *r.requestDigest)
	}
	if r.requestID != nil {
		w.str("request_id", *r.requestID)
	}
	w.str("ticket_digest", r.ticketDigest)
	w.str("ticket_id", r.ticketID)
	w.close()
	if !w.ok {
		return nil, false
	}
	return w.b, true
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
	return rec
}

func (t *tick) noteOutcome(r *outcomeRec) {
	b, ok := r.bytes()
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

func (r *verdictRec) bytes() ([]byte, bool) {
	w := noteWriter{b: make([]byte, 0, 256+72*(len(r.supports)+len(r.frontier))), ok: true}
	w.open()
	w.strs("frontier_preconditions", r.frontier)
	w.str("projection_digest", r.projectionDigest)
	w.str("proposal_id", r.proposalID)
	w.key("verdict")
	if r.verdict {
		w.open()
		w.str("status", r.status)
		w.strs("support_derivation_ids", r.supports)
		w.close()
	} else {
		w.b = append(w.b, "null"...)
	}
	w.close()
	if !w.ok {
		return nil, false
	}
	return w.b, true
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

func (w *noteWriter) num(k string, v int64) {
	w.key(k)
	w.b = cjson.AppendInt(w.b, v)
}

func (w *noteWriter) done() ([]byte, bool) {
	w.close()
	if !w.ok {
		return nil, false
	}
	return w.b, true
}

// transitionNote is the body of the f.transition note: the event F
// applied, its transition's digest, and how many facts and proposals it
// yielded.
func transitionNote(eventID, eventType, digest string, facts, proposals int) ([]byte, bool) {
	w := noteWriter{b: make([]byte, 0, 128+len(eventID)+len(eventType)+len(digest)), ok: true}
	w.open()
	w.str("event_id", eventID)
	w.str("event_type", eventType)
	w.num("facts", int64(facts))
	w.num("proposals", int64(proposals))
	w.str("transition_digest", digest)
	return w.done()
}

func transitionNoteMap(eventID, eventType, digest string, facts, proposals int) map[string]any {
	return map[string]any{"event_id": eventID, "event_type": eventType, "transition_digest": digest,
		"facts": facts, "proposals": proposals}
}

// receiptNote is the body of the receipt note: which open intent a
// receipt closed, and how.
func receiptNote(intentID, proposalID, outcome string) ([]byte, bool) {
	w := noteWriter{b: make([]byte, 0, 64+len(intentID)+len(proposalID)+len(outcome)), ok: true}
	w.open()
	w.str("intent_id", intentID)
	w.str("outcome", outcome)
	w.str("proposal_id", proposalID)
	return w.done()
}

func receiptNoteMap(intentID, proposalID, outcome string) map[string]any {
	return map[string]any{"intent_id": intentID, "proposal_id": proposalID, "outcome": outcome}
}
