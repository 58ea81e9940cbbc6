package authority

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// The hand-written preimages agree with the reflective encoder. (The
// reference-corpus tests already pin the authority, idempotency, intent,
// capability-evidence, policy-verdict, control-event and batch preimages
// byte for byte; this covers the ticket's own.)
func TestTicketPreimagesMatchCjson(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := baseSpec()
		s.Parameters = map[string]any{
			"amount": rapid.Int64().Draw(rt, "amount"),
			"memo":   rapid.StringMatching(`[a-zé"\\\n]{0,6}`).Draw(rt, "memo"),
			"flag":   rapid.Bool().Draw(rt, "flag"),
			"list":   []any{rapid.StringMatching(`[a-z]{0,3}`).Draw(rt, "item"), int64(1)},
		}
		tk, err := DraftTicket(s)
		if err != nil {
			rt.Fatal(err)
		}
		if max := rapid.Int64Range(0, 100).Draw(rt, "max"); rapid.Bool().Draw(rt, "shape") {
			tk, _ = Shape(tk, Constraint{Gate: "G2", Rule: "r", Field: "parameters/amount", Max: &max})
		}
		want, _ := cjson.DigestOf(map[string]any{
			"kind": "ActionTicketActionPreimage", "ticket_version": TicketVersion,
			"action": tk.Action, "destination": tk.Destination, "scope": tk.Scope, "parameters": tk.Parameters,
		})
		if got := tk.computeActionDigest(nil); got != want {
			rt.Fatalf("action digest %s, cjson %s", got, want)
		}
		se := []any{}
		for _, e := range tk.SideEffects {
			se = append(se, string(e))
		}
		mf := []any{}
		for _, m := range tk.MissingFields {
			mf = append(mf, m)
		}
		cs := []any{}
		for _, c := range tk.Constraints {
			var max any
			if c.Max != nil {
				max = *c.Max
			}
			cs = append(cs, map[string]any{"gate": c.Gate, "rule": c.Rule, "field": c.Field, "max": max, "scope": c.Scope})
		}
		want, _ = cjson.DigestOf(map[string]any{
			"kind": "ActionTicketPreimage", "ticket_version": TicketVersion, "ticket_id": tk.TicketID,
			"action": tk.Action, "destination": tk.Destination, "scope": tk.Scope,
			"action_digest": tk.ActionDigest, "preview_digest": tk.PreviewDigest, "side_effects": se,
			"declared_risk": tk.DeclaredRisk, "assessed_risk": tk.AssessedRisk,
			"ticket_completeness": tk.Completeness, "missing_fields": mf,
			"preview_required": tk.PreviewRequired, "preview_shown": tk.PreviewShown,
			"confirmation_required": tk.ConfirmationRequired, "confirmation_received": tk.ConfirmationReceived,
			"constraints": cs, "ticket_status": tk.Status,
		})
		if got := tk.computeTicketDigest(nil); got != want {
			rt.Fatalf("ticket digest %s, cjson %s", got, want)
		}
		want, _ = cjson.DigestOf(map[string]any{"kind": "ActionTicketPreviewPreimage", "ticket_version": TicketVersion, "ticket_id": tk.TicketID, "action_digest": tk.ActionDigest, "preview": tk.Preview})
		if tk.PreviewDigest != want {
			rt.Fatalf("preview digest %s, cjson %s", tk.PreviewDigest, want)
		}
	})
}

func TestCanonWriterRejectsOutOfOrderKeysAndBadStrings(t *testing.T) {
	w := canonWriter{}
	w.open()
	w.str("b", "x")
	w.str("a", "y")
	w.close()
	if _, err := w.digest(); err == nil {
		t.Error("out-of-order keys accepted")
	}
	w = canonWriter{}
	w.open()
	w.str("a", "e\u0301") // not NFC
	w.close()
	if _, err := w.digest(); err == nil {
		t.Error("non-NFC string accepted")
	}
	if d := w.mustDigest(); digestPattern.MatchString(d) {
		t.Error("a failed preimage produced a digest-shaped value")
	}
}

// FuzzProjectIntentJSON: arbitrary bytes never panic, and anything
// accepted re-projects to the same digest.
func FuzzProjectIntentJSON(f *testing.F) {
	c := loadCorpus(f)
	for _, cmd := range fixtureCommands(c) {
		b, _ := cjson.Encode(cmd)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"HProjectIntentCommand"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, r := ProjectIntentJSON(data)
		if (p == nil) == (r == nil) {
			t.Fatalf("exactly one of projection and rejection: %v %v", p, r)
		}
		if p != nil {
			p2, _ := ProjectIntentJSON(data)
			if p2 == nil || p2.ProjectionDigest != p.ProjectionDigest {
				t.Fatal("projection not deterministic")
			}
		}
	})
}

// ValidID agrees with the protocol's id pattern and length limit.
func TestValidIDMatchesPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringMatching(`[A-Za-z0-9._:/\- é*]{0,140}`).Draw(rt, "s")
		want := len(s) <= 128 && pattern.MatchString(s)
		if ValidID(s) != want {
			rt.Fatalf("ValidID(%q) = %v", s, !want)
		}
	})
}

func TestValueWriterMatchesCjson(t *testing.T) {
	for _, v := range []any{map[string]any(nil), map[string]any{}, []any{}, nil, map[string]any{"b": []any{int64(-1), "x\u0001", true, nil}, "a": map[string]any{"e": "é q\"\\"}}} {
		w := canonWriter{}
		w.value(v)
		want, err := cjson.Encode(v)
		if err != nil || w.err != nil || string(w.b) != string(want) {
			t.Errorf("%#v: %s vs %s (%v %v)", v, w.b, want, err, w.err)
		}
	}
	for _, bad := range []any{map[string]any{"n": 1.5}, map[string]any{"é": int64(1)}, "e\u0301"} {
		w := canonWriter{}
		w.value(bad)
		if w.err == nil {
			t.Errorf("%#v was written", bad)
		}
	}
}

// TestCanonWriterKeyOrderProperty: the writer fails exactly when some
// object's keys are not strictly increasing, at any nesting level; a
// nested object's keys count neither against its parent's nor against an
// earlier sibling object's.
func TestCanonWriterKeyOrderProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		keyGen := rapid.StringMatching(`[a-d]{1,3}`)
		outer := rapid.SliceOfN(keyGen, 1, 6).Draw(rt, "outer")
		inner := rapid.SliceOfN(keyGen, 1, 6).Draw(rt, "inner")
		nested := rapid.SliceOfN(rapid.Bool(), len(outer), len(outer)).Draw(rt, "nested")
		increasing := func(ks []string) bool {
			for i := 1; i < len(ks); i++ {
				if ks[i] <= ks[i-1] {
					return false
				}
			}
			return true
		}
		w := canonWriter{}
		w.open()
		for i, k := range outer {
			if !nested[i] {
				w.str(k, "v")
				continue
			}
			w.key(k)
			w.open()
			for _, ik := range inner {
				w.num(ik, 1)
			}
			w.close()
		}
		w.close()
		_, err := w.digest()
		anyNested := slices.Contains(nested, true)
		if want := increasing(outer) && (!anyNested || increasing(inner)); (err == nil) != want {
			rt.Fatalf("outer %q inner %q (nested %v): err %v, want ok=%v", outer, inner, nested, err, want)
		}
	})
}

// lines writes exactly what strVal writes, error included, whether every
// line is plain (its fast path) or not.
func TestCanonWriterLinesIsStr(t *testing.T) {
	line := rapid.OneOf(rapid.StringMatching(`[ -~]{0,40}`), rapid.StringMatching(`[a-z"\\\t\r]{0,6}`), rapid.String())
	rapid.Check(t, func(rt *rapid.T) {
		v := strings.Join(rapid.SliceOfN(line, 0, 12).Draw(rt, "lines"), "\n")
		var a, b canonWriter
		a.strVal(v)
		b.lines(v)
		if string(a.b) != string(b.b) || (a.err == nil) != (b.err == nil) || (a.err != nil && a.err.Error() != b.err.Error()) {
			rt.Fatalf("lines wrote %q (%v), str %q (%v)", b.b, b.err, a.b, a.err)
		}
	})
}
