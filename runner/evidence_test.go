package runner

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/store"
)

// plainEvidenceDigest writes exactly the bytes cjson.Marshal writes for an
// evidence item, or declines: whenever it answers, its digest is the
// encoder's.
func TestPlainEvidenceDigestMatchesTheEncoder(t *testing.T) {
	str := rapid.OneOf(
		rapid.StringMatching(`[a-z_]{0,20}`),
		rapid.String(),
		rapid.SampledFrom([]string{"", "a\"b", "back\\slash", "tab\t", "é", "e\u0301", "sha256:" + cjson.HexDigest(nil), "\x7f", "\x00"}),
	)
	rapid.Check(t, func(rt *rapid.T) {
		name := str.Draw(rt, "name")
		v := evidenceValue(rt, str, 0)
		got, ok := plainEvidenceDigest(name, v)
		want, err := cjson.DigestOf(map[string]any{"evidence": name, "value": v})
		if ok && (err != nil || got != want) {
			rt.Fatalf("evidence %q = %#v: written %s, encoder %s (%v)", name, v, got, want, err)
		}
	})
	// The shapes the runner fires with most are written directly.
	for _, v := range []any{int64(3), 4, "authorized", []string{"intent:a"}, []string{},
		map[string]any{"accepted": int64(3)}, map[string]any{"accepted": 3},
		[]any{"sha256:" + cjson.HexDigest(nil)}, map[string]any{"b": []any{int64(1), "x"}, "a": map[string]any{}}} {
		if _, ok := plainEvidenceDigest("attempt_id", v); !ok {
			t.Errorf("%#v is not written directly", v)
		}
	}
}

// evidenceValue draws an evidence item's value: the shapes the runner
// fires with, lists and objects of them nested past the depth the direct
// writer follows, keys and strings it must decline, floats and other
// types the encoder refuses or converts.
func evidenceValue(rt *rapid.T, str *rapid.Generator[string], depth int) any {
	top := 7
	if depth > 4 {
		top = 3
	}
	switch rapid.IntRange(0, top).Draw(rt, "type") {
	case 0:
		return rapid.Int64().Draw(rt, "int64")
	case 1:
		return rapid.Int().Draw(rt, "int")
	case 2:
		return str.Draw(rt, "string")
	case 3:
		if rapid.Bool().Draw(rt, "nil") {
			return []string(nil)
		}
		return rapid.SliceOf(str).Draw(rt, "strings")
	case 4:
		return map[string]any{"accepted": rapid.Int64().Draw(rt, "cursor")}
	case 5:
		if rapid.IntRange(0, 9).Draw(rt, "nil list") == 0 {
			return []any(nil)
		}
		n := rapid.IntRange(0, 3).Draw(rt, "len")
		l := make([]any, n)
		for i := range l {
			l[i] = evidenceValue(rt, str, depth+1)
		}
		return l
	case 6:
		if rapid.IntRange(0, 9).Draw(rt, "nil map") == 0 {
			return map[string]any(nil)
		}
		n := rapid.IntRange(0, 10).Draw(rt, "len")
		m := make(map[string]any, n)
		for i := 0; i < n; i++ {
			m[str.Draw(rt, "key")] = evidenceValue(rt, str, depth+1)
		}
		return m
	default:
		return rapid.SampledFrom([]any{1.5, true, nil, int8(-3), uint64(1 << 63), []int{1, 2}, map[string]string{"a": "b"}}).Draw(rt, "other")
	}
}

// The typed evidence writers give each item the digest evidence gives the
// same value, including where they hand the item to it.
func TestTypedEvidenceMatchesEvidence(t *testing.T) {
	str := rapid.OneOf(
		rapid.StringMatching(`[a-z_]{0,20}`),
		rapid.String(),
		rapid.SampledFrom([]string{"", "a\"b", "é", "\x00", "sha256:" + cjson.HexDigest(nil), "sha256:" + cjson.HexDigest([]byte("x"))[:10]}),
	)
	var texts store.DigestTexts // one for every draw: the texts spelled before stay what they were
	var spelled []string
	rapid.Check(t, func(rt *rapid.T) {
		name := str.Draw(rt, "name")
		n := rapid.Int64().Draw(rt, "n")
		s := str.Draw(rt, "s")
		var l []string
		if !rapid.Bool().Draw(rt, "nil list") {
			l = rapid.SliceOfN(str, 0, 40).Draw(rt, "list")
		}
		for _, c := range []struct {
			what      string
			got, want string
		}{
			{"int", evInt(name, n), evidence(map[string]any{name: n})[name]},
			{"len", evInt(name, int64(int(n))), evidence(map[string]any{name: int(n)})[name]},
			{"cursor", evCursor(name, n), evidence(map[string]any{name: map[string]any{"accepted": n}})[name]},
			{"text", evText(name, s), evidence(map[string]any{name: s})[name]},
			{"texts", evTexts(name, l), evidence(map[string]any{name: l})[name]},
			// The same spelled in the pass's texts (store.DigestTexts).
			{"int in texts", evIntIn(&texts, name, n), evidence(map[string]any{name: n})[name]},
			{"cursor in texts", evCursorIn(&texts, name, n), evidence(map[string]any{name: map[string]any{"accepted": n}})[name]},
			{"text in texts", evTextIn(&texts, name, s), evidence(map[string]any{name: s})[name]},
			{"texts in texts", evTextsIn(&texts, name, l), evidence(map[string]any{name: l})[name]},
		} {
			if c.got != c.want {
				rt.Fatalf("%s evidence %q (n %d, s %q, l %q): typed %s, evidence %s", c.what, name, n, s, l, c.got, c.want)
			}
			spelled = append(spelled, c.got, strings.Clone(c.got))
		}
		for i := 0; i < len(spelled); i += 2 {
			if spelled[i] != spelled[i+1] {
				rt.Fatalf("a text spelled earlier reads %s, was %s", spelled[i], spelled[i+1])
			}
		}
	})
}

// evTexts keeps nothing of the list it is handed, so that a list gathered
// in a buffer on the caller's stack stays there (the intents committed,
// the attempts recorded, the receipts confirmed): writing a plain list's
// item allocates its digest's text alone. It fails when the list leaks.
func TestEvTextsKeepsNoList(t *testing.T) {
	a, b := "intent-1", "intent-2"
	var got string
	n := testing.AllocsPerRun(50, func() {
		var buf [4]string
		got = evTexts("attempt_id", append(buf[:0], a, b))
	})
	if n != 1 {
		t.Errorf("%.1f allocations for a plain list's item, want 1 (its digest)", n)
	}
	if want := evidence(map[string]any{"attempt_id": []string{a, b}})["attempt_id"]; got != want {
		t.Errorf("item %s, want %s", got, want)
	}
	// Nothing gathered is no list (null), as a list appended to nil was.
	if evTexts("x", nilIfEmpty(make([]string, 0, 4))) != evTexts("x", nil) {
		t.Error("an empty list gathered on the stack is not written as nil")
	}
}
