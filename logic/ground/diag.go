package ground

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Diagnostic order is a total order over arbitrary caller values, canonical
// or not (its definition as a comparison lives beside the tests, which check
// that diagKey agrees with it). It is never hashed: it only fixes which malformed element of a
// set-like collection is reported first, so that the rejection does not
// depend on the order the caller listed the elements in. It follows the
// reference's ranking: null < booleans < integers < floats < strings <
// arrays < objects < anything else; strings by code points, arrays
// element-wise, objects by their (key, value) entries in key order.

const (
	rankNull = iota
	rankBool
	rankInt
	rankFloat
	rankString
	rankArray
	rankObject
	rankOther
)

func diagRank(v any) int {
	switch x := v.(type) {
	case nil:
		return rankNull
	case bool:
		return rankBool
	case int64, int, *big.Int:
		return rankInt
	case float64, float32:
		return rankFloat
	case json.Number:
		if isIntegerLiteral(string(x)) {
			return rankInt
		}
		return rankFloat
	case string:
		return rankString
	case []any:
		return rankArray
	case map[string]any:
		return rankObject
	}
	return rankOther
}

func asBig(v any) *big.Int {
	switch x := v.(type) {
	case int64:
		return big.NewInt(x)
	case int:
		return big.NewInt(int64(x))
	case *big.Int:
		if x == nil {
			return new(big.Int)
		}
		return x
	case json.Number:
		n, _ := new(big.Int).SetString(string(x), 10)
		if n == nil {
			return new(big.Int)
		}
		return n
	}
	return new(big.Int)
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	}
	return 0
}

// pyFloatHex renders a float the way the reference's diagnostic key does
// (hexadecimal significand, 13 digits, binary exponent).
func pyFloatHex(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sign := ""
	if math.Signbit(f) {
		sign = "-"
		f = -f
	}
	if f == 0 {
		return sign + "0x0.0p+0"
	}
	bits := math.Float64bits(f)
	exp := int((bits >> 52) & 0x7ff)
	mant := bits & (1<<52 - 1)
	lead := "1"
	e := exp - 1023
	if exp == 0 {
		lead = "0"
		e = -1022
	}
	es := strconv.Itoa(e)
	if e >= 0 {
		es = "+" + es
	}
	m := strconv.FormatUint(mant, 16)
	m = strings.Repeat("0", 13-len(m)) + m
	return sign + "0x" + lead + "." + m + "p" + es
}

func compareCodePoints(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	return slices.Compare(ra, rb)
}

func sortedKeysCP(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareCodePoints)
	return keys
}

// diagSorted returns a new slice holding xs in diagnostic order.
func diagSorted(xs []any) []any {
	out := slices.Clone(xs)
	sortByKey(out, diagKey)
	return out
}

// diagKey encodes a value so that comparing encodings byte-wise gives
// diagnostic order. Every encoding is self-delimiting, so the encodings of
// sequences compare element by element, shorter sequences first.
func diagKey(v any) []byte { return appendDiagKey(nil, v) }

func appendDiagString(dst []byte, s string) []byte {
	// UTF-8 byte order is code point order; 0x00 is escaped so the
	// terminator 0x00 0x01 sorts below every continuation.
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xff)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, 0, 1)
}

func appendDiagKey(dst []byte, v any) []byte {
	switch diagRank(v) {
	case rankNull:
		return append(dst, 1)
	case rankBool:
		if v.(bool) {
			return append(dst, 2, 1)
		}
		return append(dst, 2, 0)
	case rankInt:
		n := asBig(v)
		mag := new(big.Int).Abs(n).Bytes()
		l := uint32(len(mag))
		if n.Sign() < 0 {
			l = ^l
			dst = append(dst, 3, 1, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
			for _, b := range mag {
				dst = append(dst, ^b)
			}
			return dst
		}
		dst = append(dst, 3, 2, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
		return append(dst, mag...)
	case rankFloat:
		return appendDiagString(append(dst, 4), pyFloatHex(asFloat(v)))
	case rankString:
		return appendDiagString(append(dst, 5), v.(string))
	case rankArray:
		dst = append(dst, 6)
		for _, item := range v.([]any) {
			dst = appendDiagKey(append(dst, 1), item)
		}
		return append(dst, 0)
	case rankObject:
		m := v.(map[string]any)
		dst = append(dst, 7)
		for _, k := range sortedKeysCP(m) {
			dst = appendDiagString(append(dst, 1), k)
			dst = appendDiagKey(dst, m[k])
		}
		return append(dst, 0)
	}
	return appendDiagString(append(dst, 8), fmt.Sprintf("%T", v))
}
