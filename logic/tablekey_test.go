package logic

import (
	"testing"

	"pgregory.net/rapid"
)

// tupleKey and tableKey are the keys an update's pending insertions were
// stored under, a string made for every lookup; appendTableKey writes the
// same bytes into a buffer the caller holds.
func tupleKey(tup []int64) string {
	b := make([]byte, 0, len(tup)*8)
	for _, v := range tup {
		u := uint64(v)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
	}
	return string(b)
}

func tableKey(t int, tup []int64) string {
	return tupleKey(append([]int64{int64(t)}, tup...))
}

// TestAppendTableKeyIsTableKey holds appendTableKey's bytes to tableKey's
// for any table and tuple (longer ones than its stack buffer holds too),
// appended after whatever a buffer already held.
func TestAppendTableKeyIsTableKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tb := rapid.IntRange(0, 1<<20).Draw(t, "table")
		tup := rapid.SliceOfN(rapid.Int64(), 0, 12).Draw(t, "tuple")
		pre := rapid.SliceOfN(rapid.Byte(), 0, 9).Draw(t, "prefix")
		var kb [tableKeyBuf]byte
		got := appendTableKey(append(kb[:0], pre...), tb, tup)
		if string(got) != string(pre)+tableKey(tb, tup) {
			t.Fatalf("table %d tuple %v: % x, want % x", tb, tup, got, string(pre)+tableKey(tb, tup))
		}
	})
}
