package kernel

import (
	"errors"
	"sort"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// pointers lists every JSON Pointer inside v (containers and leaves).
func pointers(v any, at string, out *[]string) {
	*out = append(*out, at)
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pointers(t[k], at+"/"+cjson.EscapePointer(k), out)
		}
	case []any:
		for i, e := range t {
			pointers(e, at+"/"+strconv.Itoa(i), out)
		}
	}
}

func replaceAt(v any, toks []string, with any) any {
	if len(toks) == 0 {
		return with
	}
	switch t := v.(type) {
	case map[string]any:
		t[toks[0]] = replaceAt(t[toks[0]], toks[1:], with)
	case []any:
		i, _ := strconv.Atoi(toks[0])
		t[i] = replaceAt(t[i], toks[1:], with)
	}
	return v
}

// TestPropertyRandomMutations replaces one random value anywhere in a valid
// step input with a random value, and checks the contract on whatever comes
// out: a transition passes CheckTransition and the kernel schema; a
// rejection is canonical and passes the kernel schema; the input is left as
// it was; and the step is deterministic.
func TestPropertyRandomMutations(tt *testing.T) {
	var bases [][2]any
	for _, ref := range []string{"observe-no-effect", "observe-with-effect", "observe-after-one"} {
		s, e := loadInput(tt, ref)
		sv, _ := cjson.Decode(s)
		ev, _ := cjson.Decode(e)
		bases = append(bases, [2]any{sv, ev})
	}
	values := []any{nil, true, false, int64(0), int64(1), int64(-1), int64(9223372036854775807), "", "x", "closed",
		"flrh-f-state/1", "sha256:" + string(make([]byte, 0)), "evt:1", "work:1", "2026-08-08T01:00:00Z",
		map[string]any{}, map[string]any{"a": int64(1)}, []any{}, []any{"a", "a"}, []any{"b:1", "a:1"}}
	rapid.Check(tt, func(t *rapid.T) {
		base := bases[rapid.IntRange(0, len(bases)-1).Draw(t, "base")]
		in := map[string]any{"snapshot": deepCopy(base[0]), "accepted_event": deepCopy(base[1])}
		var ptrs []string
		pointers(in, "", &ptrs)
		ptr := rapid.SampledFrom(ptrs[1:]).Draw(t, "pointer")
		val := deepCopy(rapid.SampledFrom(values).Draw(t, "value"))
		replaceAt(in, splitPointer(ptr), val)
		sv, ev := in["snapshot"], in["accepted_event"]
		before, _ := cjson.Encode(in)
		tr, err := StepValue(Observation{}, sv, ev)
		after, _ := cjson.Encode(in)
		if string(before) != string(after) {
			t.Fatal("input mutated")
		}
		if err != nil {
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("not a rejection: %v", err)
			}
			b, cerr := r.Canonical()
			if cerr != nil {
				t.Fatal(cerr)
			}
			if verr := Validate(SchemaRejection, b); verr != nil {
				t.Fatalf("rejection %s fails the schema: %v", b, verr)
			}
			return
		}
		if cerr := CheckTransition(Observation{}, tr); cerr != nil {
			t.Fatalf("transition fails its own check: %v", cerr)
		}
		b, _ := tr.Canonical()
		if verr := Validate(SchemaTransition, b); verr != nil {
			t.Fatalf("transition fails the schema: %v", verr)
		}
		tr2, err2 := StepValue(Observation{}, sv, ev)
		if err2 != nil || tr2.TransitionDigest != tr.TransitionDigest {
			t.Fatal("second run differs")
		}
	})
}

func splitPointer(p string) []string {
	var out []string
	cur := ""
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			out = append(out, unescapeToken(cur))
			cur = ""
			continue
		}
		cur += string(p[i])
	}
	return out
}

func unescapeToken(s string) string {
	out := ""
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && i+1 < len(s) {
			if s[i+1] == '1' {
				out += "/"
			} else {
				out += "~"
			}
			i++
			continue
		}
		out += string(s[i])
	}
	return out
}
