package determinism

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type state struct {
	Count  int
	Tags   map[string][]int
	Next   *state
	hidden []string
}

func TestCopyIsDeepAndIndependent(t *testing.T) {
	s := &state{Count: 1, Tags: map[string][]int{"a": {1, 2}}, hidden: []string{"x"}}
	s.Next = s // a cycle must survive the copy
	c := Copy(s)
	if !reflect.DeepEqual(c, s) {
		t.Fatal("copy differs from original")
	}
	c.Tags["a"][0] = 99
	c.hidden[0] = "y"
	if s.Tags["a"][0] != 1 || s.hidden[0] != "x" {
		t.Fatal("copy shares memory with the original")
	}
	if c.Next != c {
		t.Fatal("cycle not preserved")
	}
}

// recorder captures failures instead of failing the real test, so the
// checker itself can be tested.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckPassesPureStep(t *testing.T) {
	r := &recorder{TB: t}
	out := Check(r, []int{3, 1, 2}, func(xs []int) int {
		sum := 0
		for _, x := range xs {
			sum += x
		}
		return sum
	})
	if len(r.errs) != 0 || out != 6 {
		t.Fatalf("errs=%v out=%d", r.errs, out)
	}
}

func TestCheckCatchesMutation(t *testing.T) {
	r := &recorder{TB: t}
	Check(r, []int{3, 1, 2}, func(xs []int) int { xs[0] = 0; return 0 })
	if len(r.errs) == 0 || !strings.Contains(r.errs[0], "mutated") {
		t.Fatalf("mutation not caught: %v", r.errs)
	}
}

func TestCheckCatchesNondeterminism(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	Check(r, 1, func(x int) int { calls++; return x + calls })
	if len(r.errs) == 0 || !strings.Contains(r.errs[0], "differ") {
		t.Fatalf("nondeterminism not caught: %v", r.errs)
	}
}

func TestCheck2(t *testing.T) {
	r := &recorder{TB: t}
	got := Check2(r, map[string]int{"a": 1}, "a", func(m map[string]int, k string) int { return m[k] })
	if got != 1 || len(r.errs) != 0 {
		t.Fatalf("got %d errs %v", got, r.errs)
	}
}

func TestCopyNilInterface(t *testing.T) {
	var v any
	if got := Copy(v); got != nil {
		t.Fatalf("Copy(nil any) = %v", got)
	}
	if got := Copy([]any{nil, 1}); got[0] != nil || got[1] != 1 {
		t.Fatalf("Copy = %v", got)
	}
}

type hidden struct {
	n    int
	tags map[string]inner
	any  any
}

type inner struct{ secret []string }

// Values behind interfaces and in maps are not addressable; their unexported
// fields must still be copied deeply.
func TestCopyUnexportedBehindInterfacesAndMaps(t *testing.T) {
	v := any(hidden{n: 1, tags: map[string]inner{"a": {secret: []string{"x"}}}, any: inner{secret: []string{"y"}}})
	c := Copy(v)
	if !reflect.DeepEqual(c, v) {
		t.Fatalf("copy differs: %#v", c)
	}
	c.(hidden).tags["a"].secret[0] = "changed"
	if v.(hidden).tags["a"].secret[0] != "x" {
		t.Fatal("copy shares memory with the original")
	}
}
