package logic

import (
	"strconv"
	"strings"
)

// Value is one argument of a fact: a number or a symbol. The zero Value is
// the number 0.
type Value struct {
	sym bool
	n   int64
	s   string
}

// Num returns a number value.
func Num(n int64) Value { return Value{n: n} }

// Sym returns a symbol value.
func Sym(s string) Value { return Value{sym: true, s: s} }

// IsSym reports whether v is a symbol.
func (v Value) IsSym() bool { return v.sym }

// Int returns the number (0 for a symbol).
func (v Value) Int() int64 { return v.n }

// Str returns the symbol text (empty for a number).
func (v Value) Str() string { return v.s }

// String renders v as a Datalog constant: numbers in decimal, symbols
// quoted.
func (v Value) String() string {
	if v.sym {
		return quoteSym(v.s)
	}
	return strconv.FormatInt(v.n, 10)
}

// compareValues orders numbers before symbols, numbers numerically and
// symbols bytewise.
func compareValues(a, b Value) int {
	if a.sym != b.sym {
		if !a.sym {
			return -1
		}
		return 1
	}
	if !a.sym {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return 0
	}
	return strings.Compare(a.s, b.s)
}

// Fact is a signed ground atom: Neg names negative (explicitly negated)
// evidence.
type Fact struct {
	Rel  string
	Neg  bool
	Args []Value
}

// String renders the fact in Datalog syntax, e.g. -blocked("a").
func (f Fact) String() string {
	var buf [96]byte
	return string(f.appendText(buf[:0]))
}

// Atom returns the fact without its sign.
func (f Fact) Atom() Fact { f.Neg = false; return f }

// compareFacts orders facts by relation, sign, then arguments.
func compareFacts(a, b Fact) int {
	if c := strings.Compare(a.Rel, b.Rel); c != 0 {
		return c
	}
	if a.Neg != b.Neg {
		if !a.Neg {
			return -1
		}
		return 1
	}
	for i := 0; i < len(a.Args) && i < len(b.Args); i++ {
		if c := compareValues(a.Args[i], b.Args[i]); c != 0 {
			return c
		}
	}
	return len(a.Args) - len(b.Args)
}

// TruthState is the four-valued state of an atom.
type TruthState uint8

const (
	Neither   TruthState = iota // no positive and no negative support
	TrueOnly                    // positive support only
	FalseOnly                   // negative support only
	Both                        // positive and negative support: a conflict
)

func (s TruthState) String() string {
	switch s {
	case Neither:
		return "NEITHER"
	case TrueOnly:
		return "TRUE_ONLY"
	case FalseOnly:
		return "FALSE_ONLY"
	case Both:
		return "BOTH"
	}
	return "INVALID"
}

// stateOf combines the two supports into a state, the reference truth table.
func stateOf(pos, neg bool) TruthState {
	switch {
	case pos && neg:
		return Both
	case pos:
		return TrueOnly
	case neg:
		return FalseOnly
	}
	return Neither
}

// DefaultNegationSucceeds is the truth table of `!p`: it succeeds exactly
// when p has no positive support.
func DefaultNegationSucceeds(s TruthState) bool { return s == Neither || s == FalseOnly }
