// Package fmath holds the transcendental functions the active-inference
// controller needs, written so that they produce identical bits on every
// architecture Go supports.
//
// The standard library cannot promise that: math.Exp has assembly bodies on
// amd64 and arm64, math.Log has one on amd64, and the pure-Go fallbacks are
// compiled with fused multiply-add on arm64 but not on amd64. Every function
// here is built from IEEE-754 basic operations only (add, subtract, multiply,
// divide, exact scaling), and every product that feeds a sum is wrapped in an
// explicit float64 conversion, which the Go specification says must round and
// therefore cannot be fused. The results are within a few units in the last
// place of the true values; what matters for replay is that they are the same
// everywhere, which the package's golden bit tests check.
//
// The polynomial approximations for Exp and Log follow the classic
// argument-reduction schemes of the FreeBSD msun library (as does Go's own
// math package); Lgamma and Digamma use upward recurrence followed by the
// Stirling and asymptotic series, which is accurate for the positive
// arguments that Dirichlet and Beta counts produce.
package fmath

import "math"

const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	log2e = 1.44269504088896338700e+00

	expOverflow  = 7.09782712893383973096e+02
	expUnderflow = -7.45133219101941108420e+02
	expNearZero  = 1.0 / (1 << 28)

	expP1 = 1.66666666666666657415e-01
	expP2 = -2.77777777770155933842e-03
	expP3 = 6.61375632143793436117e-05
	expP4 = -1.65339022054652515390e-06
	expP5 = 4.13813679705723846039e-08

	logL1 = 6.666666666666735130e-01
	logL2 = 3.999999999940941908e-01
	logL3 = 2.857142874366239149e-01
	logL4 = 2.222219843214978396e-01
	logL5 = 1.818357216161805012e-01
	logL6 = 1.531383769920937332e-01
	logL7 = 1.479819860511658591e-01

	// Ln2Pi is ln(2π), used by Lgamma and by Gaussian entropies.
	Ln2Pi     = 1.8378770664093454835606594728112
	halfLn2Pi = Ln2Pi / 2 // folded at compile time; no run-time product
)

// Exp returns e**x.
func Exp(x float64) float64 {
	switch {
	case x != x || x > expOverflow:
		if x != x {
			return x
		}
		return math.Inf(1)
	case x < expUnderflow:
		return 0
	case -expNearZero < x && x < expNearZero:
		return 1 + x
	}
	// Reduce x = k*ln2 + r with |r| <= ln2/2.
	var k int
	t := float64(log2e * x)
	if x < 0 {
		k = int(t - 0.5)
	} else {
		k = int(t + 0.5)
	}
	fk := float64(k)
	hi := x - float64(fk*ln2Hi)
	lo := float64(fk * ln2Lo)
	r := hi - lo
	rr := float64(r * r)
	p := expP4 + float64(rr*expP5)
	p = expP3 + float64(rr*p)
	p = expP2 + float64(rr*p)
	p = expP1 + float64(rr*p)
	c := r - float64(rr*p)
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return math.Ldexp(y, k)
}

// Log returns the natural logarithm of x.
func Log(x float64) float64 {
	switch {
	case x != x || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := logL5 + float64(s4*logL7)
	t1 = logL3 + float64(s4*t1)
	t1 = logL1 + float64(s4*t1)
	t1 = float64(s2 * t1)
	t2 := logL4 + float64(s4*logL6)
	t2 = logL2 + float64(s4*t2)
	t2 = float64(s4 * t2)
	R := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	inner := float64(s*(hfsq+R)) + float64(k*ln2Lo)
	return float64(k*ln2Hi) - ((hfsq - inner) - f)
}

// Lgamma returns ln Γ(x) for x > 0 and NaN otherwise. Dirichlet and Beta
// counts are always positive, so the reflection formula is not needed.
func Lgamma(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		if math.IsInf(x, 1) {
			return x
		}
		return math.NaN()
	}
	// Shift x up to at least 10 with Γ(x) = Γ(x+n) / (x(x+1)...(x+n-1)).
	shift := 0.0
	if x < 10 {
		prod := 1.0
		for x < 10 {
			prod = float64(prod * x)
			x++
		}
		shift = Log(prod)
	}
	// Stirling series with terms through x^-13.
	ix := 1 / x
	ix2 := float64(ix * ix)
	series := -1.0/1188 + float64(ix2*(691.0/360360))
	series = 1.0/1680 + float64(ix2*series)
	series = -1.0/1260 + float64(ix2*series)
	series = 1.0/360 + float64(ix2*series)
	series = -1.0/12 + float64(ix2*series)
	// series now holds -(1/12 - 1/(360x²) + ...); the correction is -series/x.
	corr := -float64(series * ix)
	main := float64((x-0.5)*Log(x)) - x + halfLn2Pi
	return main + corr - shift
}

// Digamma returns ψ(x) = d/dx ln Γ(x) for x > 0 and NaN otherwise.
func Digamma(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		if math.IsInf(x, 1) {
			return x
		}
		return math.NaN()
	}
	acc := 0.0
	for x < 10 {
		acc += 1 / x
		x++
	}
	ix := 1 / x
	ix2 := float64(ix * ix)
	// ψ(x) ≈ ln x - 1/(2x) - 1/(12x²) + 1/(120x⁴) - 1/(252x⁶) + 1/(240x⁸)
	//        - 1/(132x¹⁰) + 691/(32760x¹²) - 1/(12x¹⁴)
	s := 691.0/32760 - float64(ix2*(1.0/12))
	s = -1.0/132 + float64(ix2*s)
	s = 1.0/240 + float64(ix2*s)
	s = -1.0/252 + float64(ix2*s)
	s = 1.0/120 + float64(ix2*s)
	s = -1.0/12 + float64(ix2*s)
	s = float64(ix2 * s)
	return Log(x) - float64(0.5*ix) + s - acc
}

// LogSumExp returns ln Σ exp(v[i]), summed in index order after shifting by
// the maximum. It returns -Inf for an empty slice.
func LogSumExp(v []float64) float64 {
	if len(v) == 0 {
		return math.Inf(-1)
	}
	m := v[0]
	for _, x := range v[1:] {
		if x > m {
			m = x
		}
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, x := range v {
		s += Exp(x - m)
	}
	return m + Log(s)
}

// Softmax writes exp(v[i]) / Σ exp(v[j]) into dst (which may alias v) and
// returns it. dst is allocated when nil.
func Softmax(dst, v []float64) []float64 {
	if dst == nil {
		dst = make([]float64, len(v))
	}
	if len(v) == 0 {
		return dst
	}
	m := v[0]
	for _, x := range v[1:] {
		if x > m {
			m = x
		}
	}
	s := 0.0
	for i, x := range v {
		e := Exp(x - m)
		dst[i] = e
		s += e
	}
	for i := range dst {
		dst[i] /= s
	}
	return dst
}

// Dot returns Σ a[i]*b[i] in index order with every product rounded before
// it is added, so no multiply-add is fused.
func Dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += float64(x * b[i])
	}
	return s
}
