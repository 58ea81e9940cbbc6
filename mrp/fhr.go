package mrp

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
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
func (f FHR) Seal() (FHR, error) {
	f.Kind = "FHR"
	f.Digest = ""
	p := sealBufs.Get().(*[]byte)
	w := fhrWriter{b: (*p)[:0]}
	w.fhr(f)
	err, sum := w.err, sha256.Sum256(w.b)
	if cap(w.b) <= 64<<10 { // an outsized buffer is left to the collector
		*p = w.b[:0]
		sealBufs.Put(p)
	}
	if err != nil {
		return FHR{}, err
	}
	var out [7 + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	hex.Encode(out[7:], sum[:])
	f.Digest = string(out[:])
	return f, nil
}

// AppendCanonical appends the record's canonical bytes (flrh-cjson/1),
// digest member included: exactly what cjson.Marshal(f) writes, without
// reflection. A trace that records the FHR every turn writes it this way,
// and its transitions grow with the run. A string cjson would refuse is an
// error, with b returned as it was; the caller then asks cjson.Marshal,
// whose error is the contract.
func (f FHR) AppendCanonical(b []byte) ([]byte, error) {
	w := fhrWriter{b: b, strict: true}
	w.fhr(f)
	if w.err != nil {
		return b, w.err
	}
	return w.b, nil
}

type fhrWriter struct {
	b     []byte
	first bool
	err   error
	// strict checks list items too, as cjson.Marshal does; Seal's
	// preimage has never checked them, and its errors stay as they were.
	strict bool
}

func (w *fhrWriter) open()  { w.b = append(w.b, '{'); w.first = true }
func (w *fhrWriter) close() { w.b = append(w.b, '}'); w.first = false }

func (w *fhrWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	// Keys are this file's own member names (lower-case ASCII and '_'),
	// which need no escaping: written raw, byte for byte what
	// cjson.AppendString would write.
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *fhrWriter) str(k, v string) {
	w.key(k)
	if cjson.Plain(v) {
		// Printable ASCII without '"' or '\\' is valid, in NFC and
		// written verbatim: what the checks and cjson.AppendString below
		// would do, in one pass over eight bytes at a time.
		w.b = append(w.b, '"')
		w.b = append(w.b, v...)
		w.b = append(w.b, '"')
		return
	}
	if w.err == nil {
		for i := 0; i < len(v); i++ {
			if v[i] >= 0x80 {
				w.err = cjson.CheckString(v, "/"+k)
				break
			}
		}
	}
	w.b = cjson.AppendString(w.b, v)
}

func (w *fhrWriter) num(k string, v int64) { w.key(k); w.b = strconv.AppendInt(w.b, v, 10) }

func (w *fhrWriter) boolean(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *fhrWriter) strs(k string, vs []string) {
	w.key(k)
	if vs == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i, v := range vs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		var ascii bool
		w.b, ascii = cjson.AppendQuoted(w.b, v)
		if w.strict && !ascii && w.err == nil {
			w.err = cjson.CheckString(v, "/"+k)
		}
	}
	w.b = append(w.b, ']')
}

// list writes a member holding a slice of n objects, or null for a nil one.
func (w *fhrWriter) list(k string, n int, isNil bool, item func(i int)) {
	w.key(k)
	if isNil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		item(i)
	}
	w.b = append(w.b, ']')
}

// Members are written in sorted key order.
func (w *fhrWriter) fhr(f FHR) {
	w.open()
	w.budgets(f.Budgets)
	w.str("fhr_digest", f.Digest)
	w.str("kind", f.Kind)
	w.str("prev_fhr_digest", f.Prev)
	w.list("resolutions", len(f.Resolutions), f.Resolutions == nil, func(i int) {
		r := f.Resolutions[i]
		w.open()
		w.boolean("contestable", r.Contestable)
		w.str("decision", r.Decision)
		w.num("highest_tier", int64(r.HighestTier))
		if w.strict && w.err == nil {
			// cjson.Marshal refuses a move without a name (MarshalJSON).
			_, w.err = r.Move.MarshalText()
		}
		w.str("move", r.Move.String())
		w.strs("options", r.Options)
		w.str("outcome", r.Outcome)
		w.str("ticket", r.Ticket)
		w.num("ties", int64(r.Ties))
		w.close()
	})
	w.boolean("safe_mode", f.SafeMode)
	w.str("scorecard_digest", f.Scorecard)
	w.list("signals", len(f.Signals), f.Signals == nil, func(i int) {
		s := f.Signals[i]
		w.open()
		w.str("decision", s.Decision)
		w.str("kind", s.Kind)
		w.str("rule", s.Rule)
		w.str("source", s.Source)
		w.str("ticket", s.Ticket)
		w.num("tier", int64(s.Tier))
		w.close()
	})
	w.str("state", string(f.State))
	w.list("tickets", len(f.Tickets), f.Tickets == nil, func(i int) {
		t := f.Tickets[i]
		w.open()
		w.boolean("complete", t.Complete)
		w.boolean("confirmation_received", t.ConfirmationReceived)
		w.boolean("confirmation_required", t.ConfirmationRequired)
		w.strs("missing_fields", t.MissingFields)
		w.boolean("preview_required", t.PreviewRequired)
		w.boolean("preview_shown", t.PreviewShown)
		w.str("status", t.Status)
		w.str("ticket_digest", t.TicketDigest)
		w.str("ticket_id", t.TicketID)
		w.boolean("verification_only", t.VerificationOnly)
		w.close()
	})
	w.list("transitions", len(f.Transitions), f.Transitions == nil, func(i int) { w.entry(f.Transitions[i]) })
	w.num("turn", f.Turn)
	w.close()
}

func (w *fhrWriter) budgets(b Budgets) {
	w.key("budgets")
	w.open()
	w.num("deep_limit", int64(b.DeepLimit))
	w.num("deep_used", int64(b.DeepUsed))
	w.boolean("escalate_on_no_progress", b.EscalateOnNoProgress)
	w.num("no_progress_limit", int64(b.NoProgressLimit))
	w.num("no_progress_run", int64(b.NoProgressRun))
	w.num("session_limit", int64(b.SessionLimit))
	w.num("session_used", int64(b.SessionUsed))
	w.num("turn_limit", int64(b.TurnLimit))
	w.num("turn_used", int64(b.TurnUsed))
	w.close()
}

// entry writes one Journey Strip entry.
func (w *fhrWriter) entry(e Entry) {
	w.open()
	w.str("actor_id", e.ActorID)
	w.str("cause", e.Cause)
	w.str("from", string(e.From))
	w.boolean("refusal", e.Refusal)
	w.str("rejected", e.Rejected)
	w.str("role", e.Role)
	w.str("row", e.Row)
	w.boolean("safe_mode", e.SafeMode)
	w.num("seq", int64(e.Seq))
	w.str("summary", e.Summary)
	w.str("to", string(e.To))
	w.str("trigger", string(e.Trigger))
	w.close()
}

// AppendCanonical appends the machine's canonical bytes (flrh-cjson/1):
// exactly what cjson.Marshal(m) writes, without reflection. A run's state
// carries the machine, whose Journey Strip grows with the run, and is
// written every tick. A string cjson would refuse is an error, with b
// returned as it was.
func (m Machine) AppendCanonical(b []byte) ([]byte, error) {
	w := fhrWriter{b: b, strict: true}
	w.open()
	w.budgets(m.Budgets)
	w.boolean("care_cooldown", m.Cooldown)
	w.list("journey", len(m.Journey), m.Journey == nil, func(i int) { w.entry(m.Journey[i]) })
	w.strs("options", m.Options)
	w.boolean("refusal", m.Refusal)
	w.boolean("safe_mode", m.SafeMode)
	w.str("safe_mode_cause", m.SafeWhy)
	w.str("state", string(m.State))
	w.close()
	if w.err != nil {
		return b, w.err
	}
	return w.b, nil
}
