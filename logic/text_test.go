package logic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The text forms as they were written with a strings.Builder and fmt:
// the append forms must give the same bytes, since derived support ids
// are digests of them.

func oldQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func oldValueText(v Value) string {
	if v.sym {
		return oldQuote(v.s)
	}
	return fmt.Sprint(v.n)
}

func oldFactText(f Fact) string {
	var b strings.Builder
	if f.Neg {
		b.WriteByte('-')
	}
	b.WriteString(f.Rel)
	b.WriteByte('(')
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(oldValueText(a))
	}
	b.WriteByte(')')
	return b.String()
}

func oldAbsenceText(a Absence) string {
	var b strings.Builder
	b.WriteString("!")
	if a.Pattern.Neg {
		b.WriteByte('-')
	}
	b.WriteString(a.Pattern.Rel)
	b.WriteByte('(')
	for i, v := range a.Pattern.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		if a.Wildcard[i] {
			b.WriteByte('_')
		} else {
			b.WriteString(oldValueText(v))
		}
	}
	b.WriteByte(')')
	return b.String()
}

func oldPosText(p Pos) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

func oldSupportText(s Support) string {
	if s.Base {
		if len(s.BaseIDs) > 0 {
			return "base support " + strings.Join(s.BaseIDs, ", ")
		}
		return "base fact"
	}
	var parts []string
	for _, p := range s.Premises {
		parts = append(parts, oldFactText(p))
	}
	for _, a := range s.Absent {
		parts = append(parts, oldAbsenceText(a))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("rule %s (%s)", s.RuleText, oldPosText(s.RulePos))
	}
	return fmt.Sprintf("rule %s (%s) with %s", s.RuleText, oldPosText(s.RulePos), strings.Join(parts, ", "))
}

func TestTextFormsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	syms := []string{"", "a", "payee-3", `q"uote`, `back\slash`, "new\nline", "tab\there", "cr\r", "ünï", strings.Repeat("long", 40)}
	value := func() Value {
		switch r.IntN(4) {
		case 0:
			return Num([]int64{0, -1, 1, 42, -9223372036854775808, 9223372036854775807}[r.IntN(6)])
		case 1:
			return Num(r.Int64() - r.Int64())
		default:
			return Sym(syms[r.IntN(len(syms))])
		}
	}
	fact := func() Fact {
		f := Fact{Rel: []string{"p", "eligible_refund", "r"}[r.IntN(3)], Neg: r.IntN(2) == 0}
		for range r.IntN(4) {
			f.Args = append(f.Args, value())
		}
		return f
	}
	pos := func() Pos {
		if r.IntN(3) == 0 {
			return Pos{File: []string{"", "rules.dl"}[r.IntN(2)]}
		}
		return Pos{File: []string{"", "rules.dl", "a:b"}[r.IntN(3)], Line: r.IntN(2000) + 1, Col: r.IntN(200)}
	}
	for i := range 5000 {
		f := fact()
		if got, want := f.String(), oldFactText(f); got != want {
			t.Fatalf("case %d: Fact.String %q, want %q", i, got, want)
		}
		a := Absence{Pattern: fact()}
		for range a.Pattern.Args {
			a.Wildcard = append(a.Wildcard, r.IntN(2) == 0)
		}
		if got, want := a.String(), oldAbsenceText(a); got != want {
			t.Fatalf("case %d: Absence.String %q, want %q", i, got, want)
		}
		p := pos()
		if got, want := p.String(), oldPosText(p); got != want {
			t.Fatalf("case %d: Pos.String %q, want %q", i, got, want)
		}
		v := value()
		if got, want := v.String(), oldValueText(v); got != want {
			t.Fatalf("case %d: Value.String %q, want %q", i, got, want)
		}
		s := Support{Base: r.IntN(4) == 0, RuleText: []string{"", "p(X) :- q(X).", "r(X, Y) :- p(X), !s(Y)."}[r.IntN(3)], RulePos: pos()}
		for range r.IntN(3) {
			s.BaseIDs = append(s.BaseIDs, syms[r.IntN(len(syms))])
		}
		for range r.IntN(3) {
			s.Premises = append(s.Premises, fact())
		}
		for range r.IntN(3) {
			ab := Absence{Pattern: fact()}
			for range ab.Pattern.Args {
				ab.Wildcard = append(ab.Wildcard, r.IntN(2) == 0)
			}
			s.Absent = append(s.Absent, ab)
		}
		want := oldSupportText(s)
		if got := s.String(); got != want {
			t.Fatalf("case %d: Support.String %q, want %q", i, got, want)
		}
		prefix := []byte("kept:")
		got, err := s.AppendText(prefix)
		if err != nil || string(got) != "kept:"+want {
			t.Fatalf("case %d: AppendText %q, %v, want %q", i, got, err, "kept:"+want)
		}
	}
}

// TestAppendSymMatchesByteQuoting holds appendSym, which copies the run
// before the first escaped byte whole, to quoting every byte in turn, with
// escaped bytes anywhere in the symbol.
func TestAppendSymMatchesByteQuoting(t *testing.T) {
	near := rapid.SampledFrom([]byte{0, 'a', 'Z', ' ', '"', '\\', '\n', '\t', '\r', 0x7f, 0xc3, 0xff})
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOfN(near, 0, 40).Draw(t, "s"))
		if got, want := string(appendSym([]byte("x"), s)), "x"+oldQuote(s); got != want {
			t.Fatalf("appendSym(%q) = %q, want %q", s, got, want)
		}
	})
}
