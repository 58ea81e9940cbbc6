package fixed

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Num
		err  error
	}{
		{"0", 0, nil},
		{"1", Scale, nil},
		{"0.98", 980_000_000, nil},
		{"-3", -3 * Scale, nil},
		{"16", 16 * Scale, nil},
		{"1e-3", 1_000_000, nil},
		{"0.001", 1_000_000, nil},
		{"1.5E+2", 150 * Scale, nil},
		{"0.000000001", 1, nil},
		{"0.0000000010", 1, nil},
		{"0.0000000001", 0, ErrPrecision},
		{"1e-10", 0, ErrPrecision},
		{"9200000001", 0, ErrRange},
		{"1e30", 0, ErrRange},
		{"", 0, ErrSyntax},
		{"-", 0, ErrSyntax},
		{"1.", 0, ErrSyntax},
		{"abc", 0, ErrSyntax},
		{"1e", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if !errors.Is(err, c.err) || (err == nil && got != c.want) {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := Num(rapid.Int64Range(-9_000_000_000_000_000_000, 9_000_000_000_000_000_000).Draw(t, "n"))
		got, err := Parse(n.String())
		if err != nil || got != n {
			t.Fatalf("%d -> %q -> %d, %v", n, n.String(), got, err)
		}
	})
}

func TestFromFloat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want Num
	}{{0.98, 980_000_000}, {-0.5e-9, -1}, {0.5e-9, 1}, {0.4e-9, 0}, {0.7058823529411765, 705_882_353}} {
		got, err := FromFloat(c.x)
		if err != nil || got != c.want {
			t.Errorf("FromFloat(%v) = %d, %v; want %d", c.x, got, err, c.want)
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), 1e10, -1e10} {
		if _, err := FromFloat(x); err == nil {
			t.Errorf("FromFloat(%v) accepted", x)
		}
		if _, sat := MustFloat(x); !sat {
			t.Errorf("MustFloat(%v) did not flag saturation", x)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(-9e9, 9e9).Draw(t, "x")
		n, err := FromFloat(x)
		if err != nil || math.Abs(n.Float()-x) > 0.5e-9+math.Abs(x)*1e-15 {
			t.Fatalf("FromFloat(%v) = %d, %v", x, n, err)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0.98", "-3", "1e-3", "9.2e9", "0.0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(n.String())
		if err != nil || back != n {
			t.Fatalf("%q -> %d -> %q -> %d, %v", s, n, n.String(), back, err)
		}
	})
}
