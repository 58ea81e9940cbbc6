package workflow

// noteRoom hands out the buffers a tick's notes are written into, cut
// one after another from one allocation instead of one allocation each.
// A buffer is capped at the room it was given, so a note that outgrows
// its estimate moves on its own and never reaches the next note's bytes;
// a note that kept to its buffer is capped at its length and the rest of
// the room goes to the next one. A nil *noteRoom makes each buffer its own.
type noteRoom struct {
	b     []byte // the current allocation; its length is what notes took
	start int    // where the buffer buf handed out last starts in b
}

// Room for a tick's notes: what a tick writes around its proposals (the
// f.transition and mrp.journey notes, some 300 bytes) and what each
// proposal adds (its seam.verdict and h.outcome, some 1,300 to 1,600
// bytes). A tick without F (a receipt's note first) starts with
// noteRoomFirst.
const (
	noteRoomTick     = 384
	noteRoomProposal = 2048
	noteRoomFirst    = 640
)

// reserve makes sure the notes that follow have n bytes of room.
func (r *noteRoom) reserve(n int) {
	if r != nil && cap(r.b)-len(r.b) < n {
		r.b = make([]byte, 0, n)
	}
}

// buf is an empty buffer with room for n bytes.
func (r *noteRoom) buf(n int) []byte {
	if r == nil {
		return make([]byte, 0, n)
	}
	if cap(r.b)-len(r.b) < n {
		r.b = make([]byte, 0, max(n, noteRoomFirst))
	}
	r.start = len(r.b)
	r.b = r.b[:r.start+n]
	return r.b[r.start : r.start : r.start+n]
}

// kept is a note, written into the buffer buf handed out last, as the
// trace keeps it: capped at its length, the room it left unused given
// back. A note that outgrew its buffer (and moved) or failed leaves the
// room as it is.
func (r *noteRoom) kept(b []byte, ok bool) ([]byte, bool) {
	if r == nil || !ok || len(b) == 0 {
		return b, ok
	}
	if r.start < len(r.b) && &b[0] == &r.b[r.start] {
		r.b = r.b[:r.start+len(b)]
		return b[:len(b):len(b)], true
	}
	return b, true
}
