package ground

import (
	"cmp"
	"math/big"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// diagCompare is the definition of diagnostic order as a comparison.
func diagCompare(a, b any) int {
	ra, rb := diagRank(a), diagRank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch ra {
	case rankNull:
		return 0
	case rankBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case rankInt:
		return asBig(a).Cmp(asBig(b))
	case rankFloat:
		return strings.Compare(pyFloatHex(asFloat(a)), pyFloatHex(asFloat(b)))
	case rankString:
		return compareCodePoints(a.(string), b.(string))
	case rankArray:
		x, y := a.([]any), b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := diagCompare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(x), len(y))
	case rankObject:
		x, y := a.(map[string]any), b.(map[string]any)
		kx, ky := sortedKeysCP(x), sortedKeysCP(y)
		for i := 0; i < len(kx) && i < len(ky); i++ {
			if c := compareCodePoints(kx[i], ky[i]); c != 0 {
				return c
			}
			if c := diagCompare(x[kx[i]], y[ky[i]]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(kx), len(ky))
	}
	return 0
}

func drawValue(t *rapid.T, depth int) any {
	kinds := 7
	if depth > 2 {
		kinds = 5
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		if rapid.IntRange(0, 9).Draw(t, "big") == 0 {
			n, _ := new(big.Int).SetString(rapid.SampledFrom([]string{"9223372036854775808", "-9223372036854775809", "123456789012345678901234567890"}).Draw(t, "bigs"), 10)
			return n
		}
		return rapid.Int64Range(-300, 300).Draw(t, "int")
	case 3:
		return rapid.Float64().Draw(t, "float")
	case 4:
		return rapid.StringOf(rapid.SampledFrom([]rune{0, 'a', 'b', '!', ' ', 'é', '\U0001F600', '~'})).Draw(t, "string")
	case 5:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		out := make([]any, n)
		for i := range out {
			out[i] = drawValue(t, depth+1)
		}
		return out
	default:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		out := map[string]any{}
		for range n {
			out[rapid.StringOf(rapid.SampledFrom([]rune{'a', 'b', 0, 'é'})).Draw(t, "key")] = drawValue(t, depth+1)
		}
		return out
	}
}

// The byte key agrees with the direct comparison (the specification of
// diagnostic order) on arbitrary values.
func TestDiagKeyMatchesCompare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := drawValue(t, 0), drawValue(t, 0)
		want := diagCompare(a, b)
		got := compareBytes(diagKey(a), diagKey(b))
		if sign(got) != sign(want) {
			t.Fatalf("compare(%#v, %#v) = %d, key order %d", a, b, want, got)
		}
	})
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestPyFloatHex(t *testing.T) {
	for f, want := range map[float64]string{
		3.0: "0x1.8000000000000p+1", 0.5: "0x1.0000000000000p-1", 0: "0x0.0p+0", -1: "-0x1.0000000000000p+0",
		5e-324: "0x0.0000000000001p-1022",
	} {
		if got := pyFloatHex(f); got != want {
			t.Errorf("pyFloatHex(%v) = %s, want %s", f, got, want)
		}
	}
}
