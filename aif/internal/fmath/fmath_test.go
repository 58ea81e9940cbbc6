package fmath

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"
)

// ulpDiff returns the distance between a and b in units in the last place.
func ulpDiff(a, b float64) uint64 {
	ia, ib := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if ia < 0 {
		ia = math.MinInt64 - ia
	}
	if ib < 0 {
		ib = math.MinInt64 - ib
	}
	if ia > ib {
		return uint64(ia - ib)
	}
	return uint64(ib - ia)
}

// expExact returns e**x correctly rounded: the series of e**(x/2**12) summed
// at 256 bits and squared twelve times (a relative error of about 2**-243,
// far below half an ulp), then rounded to the nearest float64 once.
func expExact(x float64) float64 {
	const prec, halvings = 256, 12
	r := new(big.Float).SetPrec(prec).SetFloat64(x)
	r.SetMantExp(r, -halvings)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	n := new(big.Float).SetPrec(prec)
	for i := int64(1); i <= 60; i++ { // |x/2**12| < 0.18: the 60th term is below 2**-400
		term.Mul(term, r)
		term.Quo(term, n.SetInt64(i))
		sum.Add(sum, term)
	}
	for range halvings {
		sum.Mul(sum, sum)
	}
	f, _ := sum.Float64()
	return f
}

// Exp is held to e**x correctly rounded (expExact), within the one ulp its
// algorithm promises. The standard library's Exp is no oracle for that: on
// amd64 it is a different algorithm, itself within an ulp, so the two can
// be two apart (Exp(-32.25)). Log is held to the standard library's Log.
// Neither standard function is bitwise stable across architectures, which
// is why they are not used in the controller.
func TestExpLogAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(-700, 700).Draw(t, "x")
		if want := expExact(x); ulpDiff(Exp(x), want) > 1 {
			t.Fatalf("Exp(%v)=%v want %v (%d ulp)", x, Exp(x), want, ulpDiff(Exp(x), want))
		}
		y := rapid.Float64Range(1e-300, 1e300).Draw(t, "y")
		if d := ulpDiff(Log(y), math.Log(y)); d > 1 {
			t.Fatalf("Log(%v)=%v want %v (%d ulp)", y, Log(y), math.Log(y), d)
		}
	})
}

// TestExpExactIsExact holds the oracle itself to values whose rounding is
// known: e**0, e**1, and e**-32.25 where the standard library's Exp on amd64
// and this package's differ by two ulp.
func TestExpExactIsExact(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{0, 1},
		{1, math.E},
		{-1, 1 / math.E},
		{math.Ln2, 2},
		{10 * math.Ln2, 1024},
	} {
		if got := expExact(c.x); ulpDiff(got, c.want) > 1 {
			t.Errorf("expExact(%v)=%v want %v", c.x, got, c.want)
		}
	}
	// Exp's own result for -32.25 is within an ulp of the exact value.
	if d := ulpDiff(Exp(-32.25), expExact(-32.25)); d > 1 {
		t.Errorf("Exp(-32.25) %d ulp from exact", d)
	}
}

func TestSpecialValues(t *testing.T) {
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"Exp(0)", Exp(0), 1},
		{"Exp(800)", Exp(800), math.Inf(1)},
		{"Exp(-800)", Exp(-800), 0},
		{"Log(1)", Log(1), 0},
		{"Log(0)", Log(0), math.Inf(-1)},
		{"Log(+Inf)", Log(math.Inf(1)), math.Inf(1)},
		{"Lgamma(1)", Lgamma(1), 0},
		{"Lgamma(2)", Lgamma(2), 0},
		{"Lgamma(+Inf)", Lgamma(math.Inf(1)), math.Inf(1)},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-14 && c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, v := range []float64{math.NaN(), -1} {
		if !math.IsNaN(Log(v)) || !math.IsNaN(Lgamma(v)) || !math.IsNaN(Digamma(v)) {
			t.Errorf("bad input %v did not give NaN", v)
		}
	}
	if !math.IsNaN(Exp(math.NaN())) || !math.IsNaN(Lgamma(0)) {
		t.Error("NaN/zero input did not give NaN")
	}
}

func TestLgammaAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(1e-6, 1e6).Draw(t, "x")
		want, _ := math.Lgamma(x)
		got := Lgamma(x)
		if math.Abs(got-want) > 1e-13*math.Max(1, math.Abs(want)) {
			t.Fatalf("Lgamma(%v)=%v want %v", x, got, want)
		}
	})
}

func TestDigamma(t *testing.T) {
	// ψ(1) = -γ (Euler–Mascheroni); ψ(x+1) = ψ(x) + 1/x; ψ is the slope of ln Γ.
	if got := Digamma(1); math.Abs(got+0.5772156649015329) > 1e-14 {
		t.Errorf("Digamma(1) = %v", got)
	}
	if got := Digamma(0.5); math.Abs(got-(-1.9635100260214235)) > 1e-14 {
		t.Errorf("Digamma(0.5) = %v", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(1e-3, 1e4).Draw(t, "x")
		if d := Digamma(x+1) - Digamma(x) - 1/x; math.Abs(d) > 1e-12*math.Max(1, 1/x) {
			t.Fatalf("recurrence off by %v at %v", d, x)
		}
		h := 1e-5 * math.Max(x, 1e-2)
		num := (Lgamma(x+h) - Lgamma(x-h)) / (2 * h)
		if x > 2*h && math.Abs(num-Digamma(x)) > 1e-5*math.Max(1, math.Abs(num)) {
			t.Fatalf("Digamma(%v)=%v, numeric slope %v", x, Digamma(x), num)
		}
	})
}

func TestSoftmaxAndLogSumExp(t *testing.T) {
	v := []float64{0, 3, -3}
	p := Softmax(nil, v)
	s := p[0] + p[1] + p[2]
	if math.Abs(s-1) > 1e-15 || !(p[1] > p[0] && p[0] > p[2]) {
		t.Fatalf("softmax %v", p)
	}
	if got, want := LogSumExp(v), math.Log(1+math.Exp(3)+math.Exp(-3)); math.Abs(got-want) > 1e-15 {
		t.Fatalf("LogSumExp = %v want %v", got, want)
	}
	if !math.IsInf(LogSumExp(nil), -1) {
		t.Fatal("empty LogSumExp")
	}
}

// goldenInputs is a fixed spread of arguments; the digest of the result bits
// is pinned below. The same test runs under GOARCH=arm64 (qemu-user) and must
// produce the same digest, which is the cross-architecture guarantee.
func goldenDigest() string {
	h := sha256.New()
	var buf [8]byte
	put := func(f float64) {
		binary.BigEndian.PutUint64(buf[:], math.Float64bits(f))
		h.Write(buf[:])
	}
	for i := -2000; i <= 2000; i++ {
		x := float64(i) * 0.3517
		put(Exp(x / 3))
		if x > 0 {
			put(Log(x))
			put(Lgamma(x / 50))
			put(Digamma(x / 50))
		}
	}
	for _, x := range []float64{1e-300, 1e-16, 0.001, 0.02, 0.98, 1, 2, 30, 30.001, 1e10} {
		put(Log(x))
		put(Lgamma(x))
		put(Digamma(x))
		put(Exp(-x))
	}
	put(LogSumExp([]float64{0, 3, -3}))
	return hex.EncodeToString(h.Sum(nil))
}

const goldenWant = "85ebbdab7461462fa178e3f1a08a0179d9e5653856bc57031035b0d9d5044f75"

func TestGoldenBits(t *testing.T) {
	if got := goldenDigest(); got != goldenWant {
		t.Fatalf("result bits changed: digest %s, want %s", got, goldenWant)
	}
}

func BenchmarkExp(b *testing.B) {
	x := 0.0
	for i := 0; i < b.N; i++ {
		x += Exp(float64(i&1023) * 0.001)
	}
	_ = x
}

func BenchmarkLog(b *testing.B) {
	x := 0.0
	for i := 0; i < b.N; i++ {
		x += Log(float64(i&1023) + 0.5)
	}
	_ = x
}
