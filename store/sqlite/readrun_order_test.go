package sqlite

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestInOrderMatchesOrdered holds inOrder, which orders a part's rows in
// place and keeps them as read when their keys increase, to ordered,
// which sorts keyed copies: the same rows in the same order, nil for
// none, and the very array read when no row is out of order.
func TestInOrderMatchesOrdered(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10).Draw(t, "n")
		texts := rapid.SliceOfN(rapid.SampledFrom([]string{"", "a", "a:1", "a:10", "b", "\xff"}), n, n).Draw(t, "texts")
		nums := rapid.SliceOfN(rapid.Int64Range(-2, 3), n, n).Draw(t, "nums")
		type row struct {
			i    int
			text string
		}
		vals := make([]row, n)
		rows := make([]keyed[row], n)
		for i := range vals {
			vals[i] = row{i: i, text: texts[i]}
			rows[i] = keyed[row]{v: vals[i], text: texts[i], n: nums[i]}
		}
		want := ordered(rows)
		read := append([]row(nil), vals...)
		got := inOrder(vals, func(i int) (string, int64) { return vals[i].text, nums[vals[i].i] })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("inOrder %v, ordered %v", got, want)
		}
		if n > 0 && reflect.DeepEqual(want, read) && &got[0] != &vals[0] {
			t.Fatal("rows already in order were copied")
		}
	})
}
