package mrp

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// memberWriter is the FHR's member-by-member writer (cjson.Members'
// Key before every member) that the template writer replaced: the
// straightforward definition TestFHRSealIsMemberWriter holds Seal to.
type memberWriter struct {
	cjson.Members
	// strict checks list items too, as cjson.Marshal does; Seal's
	// preimage has never checked them, and its errors stay as they were.
	strict bool
}

func (w *memberWriter) strs(k string, vs []string) {
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
func (w *memberWriter) list(k string, n int, isNil bool, item func(i int)) {
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
func (w *memberWriter) fhr(f FHR) {
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

func (w *memberWriter) budgets(b Budgets) {
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
func (w *memberWriter) entry(e Entry) {
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

// memberSeal is Seal through memberWriter.
func memberSeal(f FHR) (string, error) {
	f.Kind, f.Digest = "FHR", ""
	w := memberWriter{}
	w.fhr(f)
	if w.Err != nil {
		return "", w.Err
	}
	sum := sha256.Sum256(w.B)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal writes, digests and refuses exactly as the member-by-member
// writer did, over records with strings cjson escapes or refuses; and the
// machine's canonical bytes, which mix Key with the templates of budgets
// and journey entries, are the member writer's too.
func TestFHRSealIsMemberWriter(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := drawFHR(rt)
		got, err := f.Seal()
		want, werr := memberSeal(f)
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			rt.Fatalf("Seal error %v, member writer %v", err, werr)
		}
		if err == nil && got.Digest != want {
			rt.Fatalf("Seal digest %s, member writer %s", got.Digest, want)
		}
		for _, strict := range []bool{false, true} {
			a := fhrWriter{strict: strict}
			a.fhr(f)
			b := memberWriter{strict: strict}
			b.fhr(f)
			if string(a.B) != string(b.B) || (a.Err == nil) != (b.Err == nil) || (a.Err != nil && a.Err.Error() != b.Err.Error()) {
				rt.Fatalf("strict %v: templates wrote %q (%v), member writer %q (%v)", strict, a.B, a.Err, b.B, b.Err)
			}
		}
		m := Machine{Budgets: f.Budgets, Journey: f.Transitions, State: f.State, SafeMode: f.SafeMode}
		mb, merr := m.AppendCanonical(nil)
		w := memberWriter{strict: true}
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
		if (merr == nil) != (w.Err == nil) || (merr == nil && string(mb) != string(w.B)) {
			rt.Fatalf("machine: %q (%v), member writer %q (%v)", mb, merr, w.B, w.Err)
		}
	})
}
