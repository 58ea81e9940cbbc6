package logic

import (
	"testing"

	"pgregory.net/rapid"
)

// The round column answers like a plain per-row slice whether it holds
// runs or has been expanded, across pushes of any order, truncation and
// chunk boundaries.
func TestRoundsMatchAPlainColumn(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var v rounds
		var want []uint32
		cur := uint32(0)
		for op := range rapid.IntRange(1, 40).Draw(t, "ops") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				n := int32(rapid.IntRange(0, len(want)).Draw(t, "n"))
				v.truncate(n)
				want = want[:n]
			case 1:
				v.expand(int32(len(want)))
			default:
				// Mostly nondecreasing, as a from-scratch evaluation
				// appends; sometimes smaller, as an update may.
				switch rapid.IntRange(0, 5).Draw(t, "step") {
				case 0:
					cur = uint32(rapid.IntRange(0, 3).Draw(t, "low"))
				case 1, 2:
					cur++
				}
				k := rapid.SampledFrom([]int{1, 3, 1000, rowsPerChunk + 5}).Draw(t, "k")
				for range k {
					v.push(int32(len(want)), cur)
					want = append(want, cur)
				}
			}
			for r := range want {
				if g := v.get(int32(r)); g != want[r] {
					t.Fatalf("op %d: row %d has round %d, want %d", op, r, g, want[r])
				}
			}
		}
		c := v.clone()
		c.expand(int32(len(want)))
		for r := range want {
			c.set(int32(r), want[r]+1)
			if g := v.get(int32(r)); g != want[r] {
				t.Fatalf("setting a clone changed row %d of the original", r)
			}
		}
	})
}

// The first round of same-generation reads sg before it has rows; that
// must not build (and then maintain) an index on sg that no later round
// uses.
func TestEmptyViewBuildsNoIndex(t *testing.T) {
	c, err := Load("sg.dl", []byte(sgProgram))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, randomTree(300, 10, 1), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sg := m.tables[m.c.relByName["sg"]*2]
	if sg.n == 0 {
		t.Fatal("no sg tuples")
	}
	for k, ix := range sg.idx {
		if ix != nil {
			t.Fatalf("sg has index %d on columns %v after a from-scratch evaluation", k, ix.cols)
		}
	}
}
