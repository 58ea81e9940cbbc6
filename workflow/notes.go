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
