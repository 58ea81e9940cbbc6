// Package fixed is the fixed-point representation in which the
// active-inference controller persists every real-valued quantity.
//
// Canonical records admit only integers (flrh-cjson/1 rejects floats), so a
// probability, a precision or a free energy is stored as a [Num]: a signed
// 64-bit count of billionths ([Scale] = 10⁹). Conversion from float64 rounds
// to the nearest billionth, halves away from zero, which is exact and the
// same on every architecture; the representable range is about ±9.2×10⁹.
//
// Model files may spell numbers as decimal literals ("0.98", "-3", "1e-3");
// [Parse] converts them to a Num exactly, without passing through float64,
// and refuses digits finer than 10⁻⁹ rather than silently rounding them.
package fixed

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Scale is the number of Num units in 1.0.
const Scale = 1_000_000_000

// Num is a real number stored as an integer count of 10⁻⁹.
type Num int64

// Errors returned by conversions. Callers wrap them with the location of the
// offending value.
var (
	ErrNotFinite = errors.New("value is NaN or infinite")
	ErrRange     = errors.New("value outside the fixed-point range ±9.2e9")
	ErrPrecision = errors.New("value has digits below 1e-9, the fixed-point resolution")
	ErrSyntax    = errors.New("not a decimal number")
)

// maxFloat is the largest magnitude whose scaled value fits in an int64 with
// room to spare for rounding.
const maxFloat = 9.2e9

// FromFloat rounds x to the nearest billionth.
func FromFloat(x float64) (Num, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, ErrNotFinite
	}
	if x >= maxFloat || x <= -maxFloat {
		return 0, ErrRange
	}
	// x*Scale is a single correctly rounded product; math.Round is exact.
	return Num(math.Round(float64(x * Scale))), nil
}

// MustFloat is FromFloat for values the caller has already range-checked
// (probabilities, bounded scores); out-of-range values saturate and NaN maps
// to zero so that a persisted record is always well formed. The flag reports
// whether saturation happened.
func MustFloat(x float64) (Num, bool) {
	n, err := FromFloat(x)
	switch {
	case err == nil:
		return n, false
	case math.IsNaN(x):
		return 0, true
	case x > 0:
		return math.MaxInt64, true
	default:
		return math.MinInt64 + 1, true
	}
}

// Float returns n as a float64 (a single correctly rounded division).
func (n Num) Float() float64 { return float64(n) / Scale }

// String renders n as a decimal with up to nine fractional digits and no
// trailing zeros, e.g. "0.98", "-3", "0.000010797".
func (n Num) String() string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	ip, fp := u/Scale, u%Scale
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(ip, 10))
	if fp != 0 {
		f := strconv.FormatUint(fp+Scale, 10)[1:] // zero-padded to 9 digits
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	return b.String()
}

// Parse converts a JSON-style decimal literal (optional minus, digits,
// optional fraction, optional exponent) to a Num exactly.
func Parse(s string) (Num, error) {
	if s == "" {
		return 0, ErrSyntax
	}
	i := 0
	neg := false
	if s[0] == '-' {
		neg = true
		i++
	}
	var digits []byte
	point := -1
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '.' && point < 0:
			point = len(digits)
		default:
			goto exponent
		}
	}
exponent:
	if len(digits) == 0 || point == len(digits) {
		return 0, ErrSyntax
	}
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return 0, ErrSyntax
		}
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return 0, ErrSyntax
		}
		exp = e
	}
	if point < 0 {
		point = len(digits)
	}
	// The value is digits × 10^(exp - (len(digits)-point)); scale by 10⁹.
	shift := exp - (len(digits) - point) + 9
	// Strip leading zeros so the magnitude check below is meaningful.
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if shift < 0 {
		cut := len(digits) + shift
		if cut < 0 {
			cut = 0
		}
		for _, c := range digits[cut:] {
			if c != '0' {
				return 0, ErrPrecision
			}
		}
		digits = digits[:cut]
		shift = 0
	}
	if len(digits)+shift > 19 {
		if strings.Trim(string(digits), "0") != "" {
			return 0, ErrRange
		}
	}
	var v uint64
	for _, c := range digits {
		v = v*10 + uint64(c-'0')
		if v > math.MaxInt64 {
			return 0, ErrRange
		}
	}
	for ; shift > 0; shift-- {
		if v > math.MaxInt64/10 {
			return 0, ErrRange
		}
		v *= 10
	}
	if v > uint64(maxFloat*Scale) {
		return 0, ErrRange
	}
	if neg {
		return -Num(v), nil
	}
	return Num(v), nil
}

// Floats converts a slice of Num to float64.
func Floats(v []Num) []float64 {
	out := make([]float64, len(v))
	for i, n := range v {
		out[i] = n.Float()
	}
	return out
}
