package ground

import (
	"math/big"
	"testing"

	"pgregory.net/rapid"
)

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
