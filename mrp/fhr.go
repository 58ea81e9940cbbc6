package mrp

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
)

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
	// Prev is the digest of the previous turn's FHR ("" for the first), so
	// a run's FHRs form a hash chain: no turn can be dropped, reordered or
	// edited without breaking every later digest.
	Prev   string `json:"prev_fhr_digest"`
	Digest string `json:"fhr_digest"`
}

// sealBufs recycles seal preimage buffers (as the authority package's
// preimage writers do, decision 0608): the preimage is hashed once and
// dropped, and a buffer is always written from length zero, so recycling
// changes no byte of any digest. The writer would otherwise allocate a
// fresh buffer on every seal. The digest string is built from the hash
// sum, never from the buffer.
var sealBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// Seal computes the record's digest: the SHA-256 of its canonical bytes
// (flrh-cjson/1) with an empty fhr_digest member. The bytes are written
// directly, without reflection; a test holds them equal to cjson.Marshal.
func (f FHR) Seal() (FHR, error) { return f.SealIn(nil) }

// SealIn is Seal with the digest string cut from sb, appended to it,
// when sb is not nil (a caller that gathers a decision's strings in one
// builder spares the digest an allocation of its own); Seal passes nil.
func (f FHR) SealIn(sb *strings.Builder) (FHR, error) {
	f.Kind = "FHR"
	f.Digest = ""
	p := sealBufs.Get().(*[]byte)
	w := fhrWriter{Members: cjson.Members{B: (*p)[:0]}}
	w.fhr(f)
	err, sum := w.Err, sealSum(w.B, w.openEnd, fhrMidstates[:])
	if cap(w.B) <= 64<<10 { // an outsized buffer is left to the collector
		*p = w.B[:0]
		sealBufs.Put(p)
	}
	if err != nil {
		return FHR{}, err
	}
	var out [7 + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	cjson.HexSum((*[64]byte)(out[7:]), &sum)
	f.Digest = cut(sb, out[:])
	return f, nil
}

// cut returns p as a string, appended to sb and cut from it when sb is
// not nil.
func cut(sb *strings.Builder, p []byte) string {
	if sb == nil {
		return string(p)
	}
	n := sb.Len()
	sb.Write(p)
	return sb.String()[n:]
}

// SealAppend seals the record as Seal does and appends to b its sealed
// canonical bytes, what AppendCanonical writes for the sealed record:
// the preimage Seal hashes is written once, in b, and the digest then
// takes the place of its empty fhr_digest, so a caller that records the
// FHR does not write it again. ok is false, with b returned as it was,
// when the record is not sealed (err, Seal's) or when it holds a list
// item AppendCanonical checks and the preimage does not (a move without
// a name, a string that is not plain): the caller then asks
// AppendCanonical, whose answer is the contract.
func (f FHR) SealAppend(b []byte) (sealed FHR, out []byte, ok bool, err error) {
	return f.SealAppendIn(b, nil)
}

// SealAppendIn is SealAppend with the digest string cut from sb as
// SealIn cuts it.
func (f FHR) SealAppendIn(b []byte, sb *strings.Builder) (sealed FHR, out []byte, ok bool, err error) {
	f.Kind = "FHR"
	f.Digest = ""
	n := len(b)
	w := fhrWriter{Members: cjson.Members{B: b}}
	w.fhr(f)
	if w.Err != nil {
		return FHR{}, b[:n], false, w.Err
	}
	sum := sealSum(w.B[n:], w.openEnd-n, fhrMidstates[:])
	var d [1 + 7 + 2*sha256.Size + 1]byte
	d[0], d[len(d)-1] = '"', '"'
	copy(d[1:], "sha256:")
	cjson.HexSum((*[64]byte)(d[8:]), &sum)
	f.Digest = cut(sb, d[1:len(d)-1])
	if !f.listsPlain() {
		return f, b[:n], false, nil
	}
	// The preimage's "" at digestAt becomes the quoted digest.
	at, end := w.digestAt, len(w.B)
	out = slices.Grow(w.B, len(d)-2)[:end+len(d)-2]
	copy(out[at+len(d):], out[at+2:end])
	copy(out[at:], d[:])
	return f, out, true, nil
}

// listsPlain reports whether the record's list items are written alike by
// the seal's preimage and by AppendCanonical: every move named and every
// list string plain.
func (f *FHR) listsPlain() bool {
	for i := range f.Resolutions {
		r := &f.Resolutions[i]
		if r.Move < 0 || int(r.Move) >= len(moveNames) || !allPlain(r.Options) {
			return false
		}
	}
	for i := range f.Tickets {
		if !allPlain(f.Tickets[i].MissingFields) {
			return false
		}
	}
	return true
}

func allPlain(vs []string) bool {
	for _, v := range vs {
		if !cjson.Plain(v) {
			return false
		}
	}
	return true
}

// AppendCanonical appends the record's canonical bytes (flrh-cjson/1),
// digest member included: exactly what cjson.Marshal(f) writes, without
// reflection. A trace that records the FHR every turn writes it this way,
// and its transitions grow with the run. A string cjson would refuse is an
// error, with b returned as it was; the caller then asks cjson.Marshal,
// whose error is the contract.
func (f FHR) AppendCanonical(b []byte) ([]byte, error) {
	w := fhrWriter{Members: cjson.Members{B: b}, strict: true}
	w.fhr(f)
	if w.Err != nil {
		return b, w.Err
	}
	return w.B, nil
}

// fhrWriter is cjson's member writer with the FHR's own lists. The FHR,
// its budgets and its list items are written as templates: their
// constant fragments (punctuation and member names in canonical order)
// with the values between them, and no per-member key; the machine's
// own members go through Members' Key. A template writes the bytes
// Members would (TestFHRAppendCanonicalIsMarshal holds them to
// cjson.Marshal, TestFHRSealIsMemberWriter the seal to the member by
// member writer it replaced).
type fhrWriter struct {
	cjson.Members
	// strict checks list items too, as cjson.Marshal does; Seal's
	// preimage has never checked them, and its errors stay as they were.
	strict bool
	// digestAt is where the fhr_digest member's value begins.
	digestAt int
	// openEnd is where a run's first record's opening ends (see
	// fhrOpenings): its first resolution's ticket id; 0 for a later
	// record (one with a previous digest) or one without resolutions.
	openEnd int
}

// set makes b, appended to from w.B, the buffer: when nothing grew only
// the length is stored, so no pointer store and no write barrier while
// the collector marks.
func (w *fhrWriter) set(b []byte) {
	if cap(b) == cap(w.B) {
		w.B = w.B[:len(b)]
	} else {
		w.B = b
	}
}

// lit appends a template's constant fragment.
func (w *fhrWriter) lit(s string) { w.set(append(w.B, s...)) }

// str writes v as the string value of member k, as Members.Quote does.
func (w *fhrWriter) str(v, k string) {
	if cjson.Plain(v) {
		b := append(w.B, '"')
		b = append(b, v...)
		w.set(append(b, '"'))
		return
	}
	w.Quote(v, k)
}

func (w *fhrWriter) int(v int64) { w.set(strconv.AppendInt(w.B, v, 10)) }

func (w *fhrWriter) flag(v bool) {
	if v {
		w.lit("true")
	} else {
		w.lit("false")
	}
}

// strsVal writes a list of strings (items of member k), or null.
func (w *fhrWriter) strsVal(k string, vs []string) {
	if vs == nil {
		w.lit("null")
		return
	}
	w.lit("[")
	for i, v := range vs {
		if i > 0 {
			w.lit(",")
		}
		if w.strict {
			w.str(v, k)
		} else {
			w.B = cjson.AppendString(w.B, v)
		}
	}
	w.lit("]")
}

func (w *fhrWriter) strs(k string, vs []string) {
	w.Key(k)
	w.strsVal(k, vs)
}

// listVal writes a list of n objects, or null for a nil one.
func (w *fhrWriter) listVal(n int, isNil bool, item func(i int)) {
	if isNil {
		w.lit("null")
		return
	}
	w.lit("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			w.lit(",")
		}
		item(i)
	}
	w.lit("]")
}

// list writes a member holding a slice of n objects, or null for a nil one.
func (w *fhrWriter) list(k string, n int, isNil bool, item func(i int)) {
	w.Key(k)
	w.listVal(n, isNil, item)
}

// fhr writes the record, members in sorted key order.
func (w *fhrWriter) fhr(f FHR) {
	w.lit(`{"budgets":`)
	w.budgetsVal(f.Budgets)
	w.lit(`,"fhr_digest":`)
	w.digestAt = len(w.B)
	w.str(f.Digest, "fhr_digest")
	w.lit(`,"kind":`)
	w.str(f.Kind, "kind")
	w.lit(`,"prev_fhr_digest":`)
	w.str(f.Prev, "prev_fhr_digest")
	w.lit(`,"resolutions":`)
	w.listVal(len(f.Resolutions), f.Resolutions == nil, func(i int) {
		r := &f.Resolutions[i]
		w.lit(`{"contestable":`)
		w.flag(r.Contestable)
		w.lit(`,"decision":`)
		w.str(r.Decision, "decision")
		w.lit(`,"highest_tier":`)
		w.int(int64(r.HighestTier))
		if w.strict && w.Err == nil {
			// cjson.Marshal refuses a move without a name (MarshalJSON).
			_, w.Err = r.Move.MarshalText()
		}
		w.lit(`,"move":`)
		w.str(r.Move.String(), "move")
		w.lit(`,"options":`)
		w.strsVal("options", r.Options)
		w.lit(`,"outcome":`)
		w.str(r.Outcome, "outcome")
		w.lit(`,"ticket":`)
		if i == 0 && f.Prev == "" {
			w.openEnd = len(w.B) + 1 // after the opening quote
		}
		w.str(r.Ticket, "ticket")
		w.lit(`,"ties":`)
		w.int(int64(r.Ties))
		w.lit(`}`)
	})
	w.lit(`,"safe_mode":`)
	w.flag(f.SafeMode)
	w.lit(`,"scorecard_digest":`)
	w.str(f.Scorecard, "scorecard_digest")
	w.lit(`,"signals":`)
	w.listVal(len(f.Signals), f.Signals == nil, func(i int) {
		s := &f.Signals[i]
		w.lit(`{"decision":`)
		w.str(s.Decision, "decision")
		w.lit(`,"kind":`)
		w.str(s.Kind, "kind")
		w.lit(`,"rule":`)
		w.str(s.Rule, "rule")
		w.lit(`,"source":`)
		w.str(s.Source, "source")
		w.lit(`,"ticket":`)
		w.str(s.Ticket, "ticket")
		w.lit(`,"tier":`)
		w.int(int64(s.Tier))
		w.lit(`}`)
	})
	w.lit(`,"state":`)
	w.str(string(f.State), "state")
	w.lit(`,"tickets":`)
	w.listVal(len(f.Tickets), f.Tickets == nil, func(i int) {
		t := &f.Tickets[i]
		w.lit(`{"complete":`)
		w.flag(t.Complete)
		w.lit(`,"confirmation_received":`)
		w.flag(t.ConfirmationReceived)
		w.lit(`,"confirmation_required":`)
		w.flag(t.ConfirmationRequired)
		w.lit(`,"missing_fields":`)
		w.strsVal("missing_fields", t.MissingFields)
		w.lit(`,"preview_required":`)
		w.flag(t.PreviewRequired)
		w.lit(`,"preview_shown":`)
		w.flag(t.PreviewShown)
		w.lit(`,"status":`)
		w.str(t.Status, "status")
		w.lit(`,"ticket_digest":`)
		w.str(t.TicketDigest, "ticket_digest")
		w.lit(`,"ticket_id":`)
		w.str(t.TicketID, "ticket_id")
		w.lit(`,"verification_only":`)
		w.flag(t.VerificationOnly)
		w.lit(`}`)
	})
	w.lit(`,"transitions":`)
	w.listVal(len(f.Transitions), f.Transitions == nil, func(i int) { w.entry(&f.Transitions[i]) })
	w.lit(`,"turn":`)
	w.int(f.Turn)
	w.lit(`}`)
}

func (w *fhrWriter) budgets(b Budgets) {
	w.Key("budgets")
	w.budgetsVal(b)
}

// budgetsVal writes the budgets object.
func (w *fhrWriter) budgetsVal(b Budgets) {
	w.lit(`{"deep_limit":`)
	w.int(int64(b.DeepLimit))
	w.lit(`,"deep_used":`)
	w.int(int64(b.DeepUsed))
	w.lit(`,"escalate_on_no_progress":`)
	w.flag(b.EscalateOnNoProgress)
	w.lit(`,"no_progress_limit":`)
	w.int(int64(b.NoProgressLimit))
	w.lit(`,"no_progress_run":`)
	w.int(int64(b.NoProgressRun))
	w.lit(`,"session_limit":`)
	w.int(int64(b.SessionLimit))
	w.lit(`,"session_used":`)
	w.int(int64(b.SessionUsed))
	w.lit(`,"turn_limit":`)
	w.int(int64(b.TurnLimit))
	w.lit(`,"turn_used":`)
	w.int(int64(b.TurnUsed))
	w.lit(`}`)
}

// entry writes one Journey Strip entry.
func (w *fhrWriter) entry(e *Entry) {
	w.lit(`{"actor_id":`)
	w.str(e.ActorID, "actor_id")
	w.lit(`,"cause":`)
	w.str(e.Cause, "cause")
	w.lit(`,"from":`)
	w.str(string(e.From), "from")
	w.lit(`,"refusal":`)
	w.flag(e.Refusal)
	w.lit(`,"rejected":`)
	w.str(e.Rejected, "rejected")
	w.lit(`,"role":`)
	w.str(e.Role, "role")
	w.lit(`,"row":`)
	w.str(e.Row, "row")
	w.lit(`,"safe_mode":`)
	w.flag(e.SafeMode)
	w.lit(`,"seq":`)
	w.int(int64(e.Seq))
	w.lit(`,"summary":`)
	w.str(e.Summary, "summary")
	w.lit(`,"to":`)
	w.str(string(e.To), "to")
	w.lit(`,"trigger":`)
	w.str(string(e.Trigger), "trigger")
	w.lit(`}`)
}

// AppendCanonical appends the machine's canonical bytes (flrh-cjson/1):
// exactly what cjson.Marshal(m) writes, without reflection. A run's state
// carries the machine, whose Journey Strip grows with the run, and is
// written every tick. A string cjson would refuse is an error, with b
// returned as it was.
func (m Machine) AppendCanonical(b []byte) ([]byte, error) {
	b, _, _, err := m.AppendCanonicalKept(b, nil, 0)
	return b, err
}

// AppendCanonicalKept is AppendCanonical with the journey's first n
// entries written as kept: the bytes AppendCanonical writes for exactly
// those entries, comma-separated, as a document it wrote before holds
// them (n is at most len(m.Journey); 0 writes every entry). It also
// returns where the journey's entries begin and end in the bytes it
// returns — after the list's '[' and before its ']' — for the caller to
// keep for the next document; both are -1 for a nil journey. The Journey
// Strip only grows, and its entries never change once recorded, so a
// run's state writes only the entries recorded since the document before
// (TestAppendCanonicalKeptIsAppendCanonical).
func (m Machine) AppendCanonicalKept(b, kept []byte, n int) ([]byte, int, int, error) {
	w := fhrWriter{Members: cjson.Members{B: b}, strict: true}
	w.Open()
	w.budgets(m.Budgets)
	w.Bool("care_cooldown", m.Cooldown)
	w.Key("journey")
	start, end := -1, -1
	if m.Journey == nil {
		w.lit("null")
	} else {
		w.lit("[")
		start = len(w.B)
		if n > 0 {
			w.set(append(w.B, kept...))
		}
		for i := n; i < len(m.Journey); i++ {
			if i > 0 {
				w.lit(",")
			}
			w.entry(&m.Journey[i])
		}
		end = len(w.B)
		w.lit("]")
	}
	w.strs("options", m.Options)
	w.Bool("refusal", m.Refusal)
	w.Bool("safe_mode", m.SafeMode)
	w.Str("safe_mode_cause", m.SafeWhy)
	w.Str("state", string(m.State))
	w.Close()
	if w.Err != nil {
		return b, -1, -1, w.Err
	}
	return w.B, start, end, nil
}
