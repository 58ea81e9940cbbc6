package seam

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// AtomOfFact is held to AtomOf of the map it stands for: the same atom or
// the same error, over predicates and arguments of every kind the map
// could hold — strings that break the string rule (invalid UTF-8, not
// NFC, control characters, escapes), other number types, nested values,
// nil and empty argument lists.
func TestAtomOfFactIsAtomOf(t *testing.T) {
	str := rapid.OneOf(
		rapid.String(),
		rapid.SampledFrom([]string{"", "payee-1", "a\"b\\c", "tab\there", "e\u0301", "\u00e9", "\xff\xfe", "\u2028", "\x00", "\u007f"}),
	)
	arg := rapid.OneOf(
		rapid.Map(str, func(s string) any { return s }),
		rapid.Map(rapid.Int64(), func(n int64) any { return n }),
		rapid.Just[any](nil),
		rapid.Map(rapid.Int(), func(n int) any { return n }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.SliceOfN(rapid.Int64(), 0, 2), func(ns []int64) any { return ns }),
		rapid.Just[any](map[string]any{"k": "v"}),
	)
	rapid.Check(t, func(t *rapid.T) {
		predicate := str.Draw(t, "predicate")
		var args []any
		if !rapid.Bool().Draw(t, "nil") {
			args = rapid.SliceOfN(arg, 0, 5).Draw(t, "args")
		}
		got, gerr := AtomOfFact(predicate, args)
		want, werr := AtomOf(map[string]any{"predicate": predicate, "args": args})
		if got != want || !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("AtomOfFact = %q, %v; AtomOf = %q, %v", got.canon, gerr, want.canon, werr)
		}
	})
}

// A small atom is written on the stack: its string is the one allocation.
func TestAtomOfFactOneAllocation(t *testing.T) {
	args := []any{"alice", int64(42), nil}
	if a := testing.AllocsPerRun(20, func() { AtomOfFact("eligible", args) }); a != 1 {
		t.Fatalf("AtomOfFact makes %v allocations, want 1", a)
	}
	long := []any{strings.Repeat("x", 300)}
	got, err := AtomOfFact("eligible", long)
	want, werr := AtomOf(map[string]any{"predicate": "eligible", "args": long})
	if err != nil || werr != nil || got.canon != want.canon {
		t.Fatalf("a long atom: %q %v, want %q %v", got.canon, err, want.canon, werr)
	}
}
