package logic

import (
	"strconv"
	"strings"
)

// Program is a parsed, unchecked Datalog program: the syntax tree of one
// source file. [Check] turns it into a [Compiled] program.
type Program struct {
	File    string
	Types   []*TypeDecl
	Decls   []*Decl
	Inputs  []*IODirective
	Outputs []*IODirective
	Clauses []*Clause // rules and inline facts, in source order
}

// Type is an attribute's primitive type.
type Type uint8

const (
	TypeNumber Type = iota + 1 // a signed 64-bit integer
	TypeSymbol                 // an interned string
)

func (t Type) String() string {
	switch t {
	case TypeNumber:
		return "number"
	case TypeSymbol:
		return "symbol"
	}
	return "?"
}

// TypeDecl is `.type Name <: symbol` or `.type Name = number`.
type TypeDecl struct {
	Pos  Pos
	Name string
	Base string // symbol, number or another declared type
}

// Decl is `.decl name(attr: type, ...)`.
type Decl struct {
	Pos   Pos
	Name  string
	Attrs []Attr
}

// Attr is one declared attribute.
type Attr struct {
	Pos      Pos
	Name     string
	TypeName string
}

// IODirective is `.input name` or `.output name`, with optional
// `(filename="...")` parameters.
type IODirective struct {
	Pos      Pos
	Name     string
	Filename string
}

// Clause is a rule `head :- body.` or, with an empty body, a fact `head.`.
type Clause struct {
	Pos  Pos
	Head *AtomExpr
	Body []BodyItem
}

// AtomExpr is an atom in a clause: optionally explicitly negated
// (`-p(x)`), with argument terms.
type AtomExpr struct {
	Pos  Pos
	Neg  bool // explicit negation: the atom names negative evidence
	Name string
	Args []Term
}

// BodyItem is one conjunct of a rule body: *Literal or *Comparison.
type BodyItem interface{ bodyItem() }

// Literal is an atom in a body, possibly under default negation `!`.
type Literal struct {
	Pos  Pos
	Not  bool // default negation: succeeds when the atom has no support of its sign
	Atom *AtomExpr
}

// Comparison is `lhs op rhs` with op one of < <= > >= = !=.
type Comparison struct {
	Pos Pos
	Op  string
	L   Term
	R   Term
}

func (*Literal) bodyItem()    {}
func (*Comparison) bodyItem() {}

// Term is an argument or expression: *Var, *Wildcard, *NumConst,
// *SymConst, *BinExpr or, as a whole side of a comparison, *Aggregate.
type Term interface {
	termPos() Pos
	String() string
}

// Var is a named variable.
type Var struct {
	Pos  Pos
	Name string
}

// Wildcard is `_`.
type Wildcard struct{ Pos Pos }

// NumConst is an integer constant.
type NumConst struct {
	Pos Pos
	Val int64
}

// SymConst is a string constant.
type SymConst struct {
	Pos Pos
	Val string
}

// BinExpr is integer arithmetic `L op R`, op one of + - * / %.
// Unary minus on a non-constant is parsed as `0 - x`.
type BinExpr struct {
	Pos Pos
	Op  byte
	L   Term
	R   Term
}

// Aggregate is `count : {body}`, `sum e : {body}`, `min e : {body}` or
// `max e : {body}` (a single atom may stand for the braces): a number
// computed over every instantiation of its body, given the values of the
// variables it shares with the rest of its rule. It may only stand as a
// whole side of a comparison, most often `n = count : {…}`.
type Aggregate struct {
	Pos    Pos
	Func   string // count, sum, min or max
	Target Term   // the expression summed or compared; nil for count
	Body   []BodyItem
}

func (t *Aggregate) termPos() Pos { return t.Pos }

func (t *Aggregate) String() string {
	var b strings.Builder
	b.WriteString(t.Func)
	switch x := t.Target.(type) {
	case nil:
	case *BinExpr:
		// Without its outer parentheses, which would read back as a
		// functor's: `sum y * 2 : {…}`.
		b.WriteString(" " + x.L.String() + " " + string(x.Op) + " " + x.R.String())
	default:
		b.WriteString(" " + x.String())
	}
	b.WriteString(" : { ")
	writeBody(&b, t.Body)
	b.WriteString(" }")
	return b.String()
}

// writeBody writes body items separated by commas.
func writeBody(b *strings.Builder, body []BodyItem) {
	for i, it := range body {
		if i > 0 {
			b.WriteString(", ")
		}
		switch it := it.(type) {
		case *Literal:
			b.WriteString(it.String())
		case *Comparison:
			b.WriteString(it.String())
		}
	}
}

func (t *Var) termPos() Pos      { return t.Pos }
func (t *Wildcard) termPos() Pos { return t.Pos }
func (t *NumConst) termPos() Pos { return t.Pos }
func (t *SymConst) termPos() Pos { return t.Pos }
func (t *BinExpr) termPos() Pos  { return t.Pos }

func (t *Var) String() string      { return t.Name }
func (t *Wildcard) String() string { return "_" }
func (t *NumConst) String() string { return strconv.FormatInt(t.Val, 10) }
func (t *SymConst) String() string { return quoteSym(t.Val) }
func (t *BinExpr) String() string {
	return "(" + t.L.String() + " " + string(t.Op) + " " + t.R.String() + ")"
}

func (a *AtomExpr) String() string {
	var b strings.Builder
	if a.Neg {
		b.WriteByte('-')
	}
	b.WriteString(a.Name)
	b.WriteByte('(')
	for i, t := range a.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.String())
	}
	b.WriteByte(')')
	return b.String()
}

func (l *Literal) String() string {
	if l.Not {
		return "!" + l.Atom.String()
	}
	return l.Atom.String()
}

func (c *Comparison) String() string { return c.L.String() + " " + c.Op + " " + c.R.String() }

func (c *Clause) String() string {
	var b strings.Builder
	b.WriteString(c.Head.String())
	if len(c.Body) > 0 {
		b.WriteString(" :- ")
		writeBody(&b, c.Body)
	}
	b.WriteByte('.')
	return b.String()
}

// quoteSym renders a symbol as a Datalog string constant.
func quoteSym(s string) string {
	var buf [64]byte
	return string(appendSym(buf[:0], s))
}
