package workflow

import (
	"crypto/sha256"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/seam"

	"flrh.dev/flrh/internal/racebuild"
)

// The L digests written member by member are the ones cjson's encoder
// gives, whatever the facts, supports and ids, a bad string included
// (then both report the same error).
func TestLDigestsAreCJSON(t *testing.T) {
	w := compileExample(t, "refund-agent")
	ids := []string{"fact:a1", "derivation:rule:0f", "x\"y\\z", "tab\there", "e\u0301", "\u00e9", "fact:zz"}
	rapid.Check(t, func(rt *rapid.T) {
		var facts []seam.FactState
		for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "facts"); i < n; i++ {
			atom, err := seam.AtomOf(map[string]any{"predicate": rapid.SampledFrom([]string{"eligible", "blocked"}).Draw(rt, "predicate"),
				"args": []any{rapid.SampledFrom([]string{"alice", "bob\u00e9", "q\"uote"}).Draw(rt, "arg"), rapid.Int64Range(-5, 500).Draw(rt, "n")}})
			if err != nil {
				rt.Fatal(err)
			}
			facts = append(facts, seam.FactState{Atom: atom,
				Positive: rapid.SliceOfN(rapid.SampledFrom(ids), 0, 3).Draw(rt, "positive"),
				Negative: rapid.SliceOfN(rapid.SampledFrom(ids), 0, 3).Draw(rt, "negative")})
		}
		var supports []support
		for _, id := range rapid.SliceOfN(rapid.SampledFrom(ids), 0, 4).Draw(rt, "supports") {
			supports = append(supports, support{ID: id})
		}
		et := rapid.Int64Range(0, 1<<40).Draw(rt, "time")
		f1, m1, err1 := w.lDigests(facts, supports, et)
		f2, m2, err2 := w.lDigestsOf(facts, supports, et)
		if f1 != f2 || m1 != m2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			rt.Fatalf("written %s %s (%v), cjson %s %s (%v)", f1, m1, err1, f2, m2, err2)
		}
	})
}

// The FHR chain digest written as bytes is cjson's, bad strings included.
func TestFHRChainIsCJSON(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.SampledFrom([]string{"", "sha256:00ff", "q\"\\", "e\u0301", "\u00e9", "\x01"})
		prev, fhr := s.Draw(rt, "prev"), s.Draw(rt, "fhr")
		got, err1 := fhrChain(prev, fhr)
		want, err2 := cjson.DigestOf(map[string]any{"kind": "flrh.workflow.fhr-chain", "prev": prev, "fhr": fhr})
		if got != want || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			rt.Fatalf("%q %q: written %s (%v), cjson %s (%v)", prev, fhr, got, err1, want, err2)
		}
	})
}

// R's catch-up to the stored watermark is skipped only where it cannot
// refuse anything: a watermark past the tick's first epoch (which no tick
// writes) is still refused by R, as before.
func TestWatermarkPastTheTickIsRefused(t *testing.T) {
	w := compileExample(t, "refund-agent")
	s0, _ := w.Init("run-watermark")
	r1, err := w.Decide(s0, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "late")})
	if err != nil || r1.Refusal != "" {
		t.Fatalf("first tick: %v %q", err, r1.Refusal)
	}
	st, err := decodeState(r1.State)
	if err != nil {
		t.Fatal(err)
	}
	if st.Watermark != 2*EpochStride {
		t.Fatalf("watermark %d after the tick at 1", st.Watermark)
	}
	in := Input{Seq: 2, Kind: KindInput, Body: refundInput("r-2", 30, "alice", "late")}
	if r, err := w.Decide(r1.State, in); err != nil || r.Refusal != "" || len(r.Effects) != 1 {
		t.Fatalf("the next tick from the watermark a tick wrote: %v %q", err, r.Refusal)
	}
	st.Watermark = 3*EpochStride + 1
	bad, _ := st.encode()
	if _, err := w.Decide(bad, in); err == nil || !strings.Contains(err.Error(), "R refused") {
		t.Fatalf("a watermark past the tick's epochs: %v", err)
	}
}

// ruleSupportID writes what the prefix, "rule:" and cjson's hex digest of
// the text spell, over any text, its sum taken through a rule's
// cjson.Prefix as supportIDs takes it (texts drawn to open alike, as a
// rule's supports do) or whole.
func TestRuleSupportIDIsPrefixAndHexDigest(t *testing.T) {
	var rule cjson.Prefix
	rapid.Check(t, func(t *rapid.T) {
		head := rapid.SampledFrom([]string{"", "rule -blocked(p) :- refund_requested(_, _, p), !blocked_payee(p). (rules.dl:20:1)",
			strings.Repeat("rule needs_approval(r) :- refund_requested(r, a, _), a > 100. ", 3)}).Draw(t, "head")
		text := append([]byte(head), rapid.SliceOf(rapid.Byte()).Draw(t, "text")...)
		want := logic.DerivedPrefix + "rule:" + cjson.HexDigest(text)
		if got := ruleSupportID(sha256.Sum256(text)); got != want {
			t.Fatalf("ruleSupportID = %s, want %s", got, want)
		}
		if got := ruleSupportID(rule.SumWritten(func(b []byte) []byte { return append(b, text...) })); got != want {
			t.Fatalf("through a Prefix: ruleSupportID = %s, want %s", got, want)
		}
	})
}

// The two L digests are made one string, each cut from it: one allocation
// for both.
func TestLDigestsAreOneString(t *testing.T) {
	w := compileExample(t, "refund-agent")
	atom, err := seam.AtomOf(map[string]any{"predicate": "eligible", "args": []any{"alice", int64(5)}})
	if err != nil {
		t.Fatal(err)
	}
	facts := []seam.FactState{{Atom: atom, Positive: []string{"fact:a1"}, Negative: []string{}}}
	supports := []support{{ID: "fact:a1"}, {ID: "derivation:rule:0f"}}
	fix, mat, err := w.lDigests(facts, supports, 7)
	if err != nil || len(fix) != lDigestLen || len(mat) != lDigestLen || !strings.HasPrefix(fix, "sha256:") || !strings.HasPrefix(mat, "sha256:") {
		t.Fatalf("%q %q %v", fix, mat, err)
	}
	if racebuild.Enabled {
		return // pooled scratch buffers are dropped at random under the race detector
	}
	if a := testing.AllocsPerRun(20, func() { w.lDigests(facts, supports, 7) }); a != 1 {
		t.Fatalf("lDigests makes %v allocations, want 1", a)
	}
}
