package mrp

import (
	"crypto/sha256"
	"encoding/hex"
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
	w := fhrWriter{Members: cjson.Members{B: (*p)[:0]}}
	w.fhr(f)
	err, sum := w.Err, sha256.Sum256(w.B)
	if cap(w.B) <= 64<<10 { // an outsized buffer is left to the collector
		*p = w.B[:0]
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
	w := fhrWriter{Members: cjson.Members{B: b}, strict: true}
	w.fhr(f)
	if w.Err != nil {
		return b, w.Err
	}
	return w.B, nil
}

// fhrWriter is cjson's member writer with the FHR's own lists.
type fhrWriter struct {
	cjson.Members
	// strict checks list items too, as cjson.Marshal does; Seal's
	// preimage has never checked them, and its errors stay as they were.
	strict bool
}

func (w *fhrWriter) strs(k string, vs []string) {
	w.Key(k)
	if vs == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.B = append(w.B, '[')
	for i, v := range vs {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		if w.strict {
			w.Quote(v, k)
		} else {
			w.B = cjson.AppendString(w.B, v)
		}
	}
	w.B = append(w.B, ']')
}

// list writes a member holding a slice of n objects, or null for a nil one.
func (w *fhrWriter) list(k string, n int, isNil bool, item func(i int)) {
	w.Key(k)
	if isNil {
		w.B = append(w.B, "null"...)
		return
	}
	w.B = append(w.B, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		item(i)
	}
	w.B = append(w.B, ']')
}

// Members are written in sorted key order.
func (w *fhrWriter) fhr(f FHR) {
	w.Open()
	w.budgets(f.Budgets)
	w.Str("fhr_digest", f.Digest)
	w.Str("kind", f.Kind)
	w.Str("prev_fhr_digest", f.Prev)
	w.list("resolutions", len(f.Resolutions), f.Resolutions == nil, func(i int) {
		r := f.Resolutions[i]
		w.Open()
		w.Bool("contestable", r.Contestable)
		w.Str("decision", r.Decision)
		w.Int("highest_tier", int64(r.HighestTier))
		if w.strict && w.Err == nil {
			// cjson.Marshal refuses a move without a name (MarshalJSON).
			_, w.Err = r.Move.MarshalText()
		}
		w.Str("move", r.Move.String())
		w.strs("options", r.Options)
		w.Str("outcome", r.Outcome)
		w.Str("ticket", r.Ticket)
		w.Int("ties", int64(r.Ties))
		w.Close()
	})
	w.Bool("safe_mode", f.SafeMode)
	w.Str("scorecard_digest", f.Scorecard)
	w.list("signals", len(f.Signals), f.Signals == nil, func(i int) {
		s := f.Signals[i]
		w.Open()
		w.Str("decision", s.Decision)
		w.Str("kind", s.Kind)
		w.Str("rule", s.Rule)
		w.Str("source", s.Source)
		w.Str("ticket", s.Ticket)
		w.Int("tier", int64(s.Tier))
		w.Close()
	})
	w.Str("state", string(f.State))
	w.list("tickets", len(f.Tickets), f.Tickets == nil, func(i int) {
		t := f.Tickets[i]
		w.Open()
		w.Bool("complete", t.Complete)
		w.Bool("confirmation_received", t.ConfirmationReceived)
		w.Bool("confirmation_required", t.ConfirmationRequired)
		w.strs("missing_fields", t.MissingFields)
		w.Bool("preview_required", t.PreviewRequired)
		w.Bool("preview_shown", t.PreviewShown)
		w.Str("status", t.Status)
		w.Str("ticket_digest", t.TicketDigest)
		w.Str("ticket_id", t.TicketID)
		w.Bool("verification_only", t.VerificationOnly)
		w.Close()
	})
	w.list("transitions", len(f.Transitions), f.Transitions == nil, func(i int) { w.entry(f.Transitions[i]) })
	w.Int("turn", f.Turn)
	w.Close()
}

func (w *fhrWriter) budgets(b Budgets) {
	w.Key("budgets")
	w.Open()
	w.Int("deep_limit", int64(b.DeepLimit))
	w.Int("deep_used", int64(b.DeepUsed))
	w.Bool("escalate_on_no_progress", b.EscalateOnNoProgress)
	w.Int("no_progress_limit", int64(b.NoProgressLimit))
	w.Int("no_progress_run", int64(b.NoProgressRun))
	w.Int("session_limit", int64(b.SessionLimit))
	w.Int("session_used", int64(b.SessionUsed))
	w.Int("turn_limit", int64(b.TurnLimit))
	w.Int("turn_used", int64(b.TurnUsed))
	w.Close()
}

// entry writes one Journey Strip entry.
func (w *fhrWriter) entry(e Entry) {
	w.Open()
	w.Str("actor_id", e.ActorID)
	w.Str("cause", e.Cause)
	w.Str("from", string(e.From))
	w.Bool("refusal", e.Refusal)
	w.Str("rejected", e.Rejected)
	w.Str("role", e.Role)
	w.Str("row", e.Row)
	w.Bool("safe_mode", e.SafeMode)
	w.Int("seq", int64(e.Seq))
	w.Str("summary", e.Summary)
	w.Str("to", string(e.To))
	w.Str("trigger", string(e.Trigger))
	w.Close()
}

// AppendCanonical appends the machine's canonical bytes (flrh-cjson/1):
// exactly what cjson.Marshal(m) writes, without reflection. A run's state
// carries the machine, whose Journey Strip grows with the run, and is
// written every tick. A string cjson would refuse is an error, with b
// returned as it was.
func (m Machine) AppendCanonical(b []byte) ([]byte, error) {
	w := fhrWriter{Members: cjson.Members{B: b}, strict: true}
	w.Open()
	w.budgets(m.Budgets)
	w.Bool("care_cooldown", m.Cooldown)
	w.list("journey", len(m.Journey), m.Journey == nil, func(i int) { w.entry(m.Journey[i]) })
	w.strs("options", m.Options)
	w.Bool("refusal", m.Refusal)
	w.Bool("safe_mode", m.SafeMode)
	w.Str("safe_mode_cause", m.SafeWhy)
	w.Str("state", string(m.State))
	w.Close()
	if w.Err != nil {
		return b, w.Err
	}
	return w.B, nil
}
