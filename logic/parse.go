package logic

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tDirective // .decl .type .input .output (text without the dot)
	tNumber
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string // identifier, directive name, punctuation, or decoded string
	num  int64
	pos  Pos
	// minAbs marks the literal 9223372036854775808 (num holds
	// math.MinInt64): valid only after a minus sign, as the least number.
	minAbs bool
}

// lexer turns source bytes into tokens, tracking line and column.
type lexer struct {
	file string
	src  []byte
	off  int
	line int
	col  int
}

func (lx *lexer) pos() Pos { return Pos{File: lx.file, Line: lx.line, Col: lx.col} }

func (lx *lexer) advance(n int) {
	for i := 0; i < n && lx.off < len(lx.src); i++ {
		if lx.src[lx.off] == '\n' {
			lx.line++
			lx.col = 1
		} else {
			lx.col++
		}
		lx.off++
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '?' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// skipSpace skips white space and comments. An unterminated block comment
// is a syntax error at its opening.
func (lx *lexer) skipSpace() *Error {
	for lx.off < len(lx.src) {
		c := lx.src[lx.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			lx.advance(1)
		case c == '/' && lx.off+1 < len(lx.src) && lx.src[lx.off+1] == '/':
			for lx.off < len(lx.src) && lx.src[lx.off] != '\n' {
				lx.advance(1)
			}
		case c == '/' && lx.off+1 < len(lx.src) && lx.src[lx.off+1] == '*':
			start := lx.pos()
			lx.advance(2)
			for {
				if lx.off+1 >= len(lx.src) {
					return errorf(SyntaxError, start, "unterminated block comment")
				}
				if lx.src[lx.off] == '*' && lx.src[lx.off+1] == '/' {
					lx.advance(2)
					break
				}
				lx.advance(1)
			}
		default:
			return nil
		}
	}
	return nil
}

var puncts = []string{":-", "<=", ">=", "!=", "<:", ";", "|", "[", "(", ")", "{", "}", ",", ".", ":", "!", "-", "+", "*", "/", "%", "<", ">", "=", "_"}

func (lx *lexer) next() (token, *Error) {
	if err := lx.skipSpace(); err != nil {
		return token{}, err
	}
	p := lx.pos()
	if lx.off >= len(lx.src) {
		return token{kind: tEOF, pos: p}, nil
	}
	c := lx.src[lx.off]
	switch {
	case c == '.' && lx.off+1 < len(lx.src) && isIdentStart(lx.src[lx.off+1]):
		end := lx.off + 1
		for end < len(lx.src) && isIdentPart(lx.src[end]) {
			end++
		}
		text := string(lx.src[lx.off+1 : end])
		lx.advance(end - lx.off)
		return token{kind: tDirective, text: text, pos: p}, nil
	case isIdentStart(c):
		end := lx.off
		for end < len(lx.src) && isIdentPart(lx.src[end]) {
			end++
		}
		text := string(lx.src[lx.off:end])
		lx.advance(end - lx.off)
		if text == "_" {
			return token{kind: tPunct, text: "_", pos: p}, nil
		}
		return token{kind: tIdent, text: text, pos: p}, nil
	case c >= '0' && c <= '9':
		end := lx.off
		for end < len(lx.src) && isIdentPart(lx.src[end]) {
			end++
		}
		text := string(lx.src[lx.off:end])
		base, digits := 10, text
		if len(text) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') {
			base, digits = 16, text[2:]
		}
		n, err := strconv.ParseInt(digits, base, 64)
		minAbs := false
		if err != nil {
			u, uerr := strconv.ParseUint(digits, base, 64)
			switch {
			case uerr == nil && u == 1<<63:
				// Only "-" can make this a number; the parser decides.
				n, minAbs = math.MinInt64, true
			case uerr == nil || errors.Is(uerr, strconv.ErrRange):
				return token{}, errorf(SyntaxError, p, "number %q is out of range (numbers are signed 64-bit integers)", text)
			default:
				return token{}, errorf(SyntaxError, p, "malformed number %q", text)
			}
		}
		lx.advance(end - lx.off)
		return token{kind: tNumber, num: n, text: text, pos: p, minAbs: minAbs}, nil
	case c == '"':
		return lx.lexString(p)
	}
	for _, pu := range puncts {
		if strings.HasPrefix(string(lx.src[lx.off:min(lx.off+2, len(lx.src))]), pu) {
			lx.advance(len(pu))
			return token{kind: tPunct, text: pu, pos: p}, nil
		}
	}
	r, _ := utf8.DecodeRune(lx.src[lx.off:])
	return token{}, errorf(SyntaxError, p, "unexpected character %q", r)
}

func (lx *lexer) lexString(p Pos) (token, *Error) {
	lx.advance(1)
	var b strings.Builder
	for {
		if lx.off >= len(lx.src) || lx.src[lx.off] == '\n' {
			return token{}, errorf(SyntaxError, p, "unterminated string constant")
		}
		c := lx.src[lx.off]
		if c == '"' {
			lx.advance(1)
			break
		}
		if c == '\\' {
			if lx.off+1 >= len(lx.src) {
				return token{}, errorf(SyntaxError, p, "unterminated string constant")
			}
			e := lx.src[lx.off+1]
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				return token{}, errorf(SyntaxError, lx.pos(), "unknown escape \\%c in string constant", e)
			}
			lx.advance(2)
			continue
		}
		b.WriteByte(c)
		lx.advance(1)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		return token{}, errorf(SyntaxError, p, "string constant is not valid UTF-8")
	}
	return token{kind: tString, text: s, pos: p}, nil
}

// parser is a recursive-descent parser with one token of lookahead (two
// for distinguishing atoms from expressions).
type parser struct {
	lx    lexer
	tok   token
	peek  *token
	prog  *Program
	depth int // expression nesting, bounded so no input can exhaust the stack
	// inAggregate is set while an aggregate's body is parsed: aggregates
	// do not nest.
	inAggregate bool
	// aggColon is set once an aggregate's ':' is read: past it, what
	// follows can only be an aggregate's body.
	aggColon bool
}

// maxNesting bounds parentheses and unary minus chains in one expression.
const maxNesting = 256

// Parse parses a Datalog program. It checks syntax only; [Check] checks
// names, arities, types, safety and stratification. The error is an *Error
// with a file:line:column position.
func Parse(filename string, src []byte) (*Program, error) {
	p := &parser{lx: lexer{file: filename, src: src, line: 1, col: 1}, prog: &Program{File: filename}}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.prog, nil
}

func (p *parser) run() *Error {
	if err := p.advance(); err != nil {
		return err
	}
	for p.tok.kind != tEOF {
		var err *Error
		if p.tok.kind == tDirective {
			err = p.directive()
		} else {
			err = p.clause()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) advance() *Error {
	if p.peek != nil {
		p.tok = *p.peek
		p.peek = nil
		return nil
	}
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) lookahead() (token, *Error) {
	if p.peek == nil {
		t, err := p.lx.next()
		if err != nil {
			return token{}, err
		}
		p.peek = &t
	}
	return *p.peek, nil
}

func (p *parser) is(text string) bool { return p.tok.kind == tPunct && p.tok.text == text }

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tIdent:
		return "identifier " + strconv.Quote(t.text)
	case tDirective:
		return "directive ." + t.text
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

func (p *parser) expect(text, what string) *Error {
	if !p.is(text) {
		return errorf(SyntaxError, p.tok.pos, "expected %s, found %s", what, describe(p.tok))
	}
	return p.advance()
}

func (p *parser) ident(what string) (string, Pos, *Error) {
	if p.tok.kind != tIdent {
		return "", p.tok.pos, errorf(SyntaxError, p.tok.pos, "expected %s, found %s", what, describe(p.tok))
	}
	t := p.tok
	return t.text, t.pos, p.advance()
}

func (p *parser) directive() *Error {
	d := p.tok
	if err := p.advance(); err != nil {
		return err
	}
	switch d.text {
	case "decl":
		name, _, err := p.ident("relation name after .decl")
		if err != nil {
			return err
		}
		decl := &Decl{Pos: d.pos, Name: name}
		if err := p.expect("(", "'(' after relation name"); err != nil {
			return err
		}
		for !p.is(")") {
			if len(decl.Attrs) > 0 {
				if err := p.expect(",", "',' or ')' in attribute list"); err != nil {
					return err
				}
			}
			an, ap, err := p.ident("attribute name")
			if err != nil {
				return err
			}
			if err := p.expect(":", "':' after attribute name"); err != nil {
				return err
			}
			tn, _, err := p.ident("attribute type")
			if err != nil {
				return err
			}
			decl.Attrs = append(decl.Attrs, Attr{Pos: ap, Name: an, TypeName: tn})
		}
		if err := p.advance(); err != nil {
			return err
		}
		// Soufflé representation qualifiers (btree, brie, eqrel, ...) change
		// nothing here except eqrel, which changes meaning and is refused.
		for p.tok.kind == tIdent && (p.tok.text == "btree" || p.tok.text == "brie" || p.tok.text == "btree_delete" || p.tok.text == "eqrel" || p.tok.text == "overridable" || p.tok.text == "inline") {
			if p.tok.text == "eqrel" || p.tok.text == "overridable" || p.tok.text == "inline" {
				return errorf(UnsupportedFeature, p.tok.pos, "relation qualifier %q is not supported", p.tok.text)
			}
			if err := p.advance(); err != nil {
				return err
			}
		}
		p.prog.Decls = append(p.prog.Decls, decl)
		return nil
	case "type":
		name, _, err := p.ident("type name after .type")
		if err != nil {
			return err
		}
		if !p.is("<:") && !p.is("=") {
			return errorf(SyntaxError, p.tok.pos, "expected '<:' or '=' after type name, found %s", describe(p.tok))
		}
		if err := p.advance(); err != nil {
			return err
		}
		base, bp, err := p.ident("base type")
		if err != nil {
			return err
		}
		if p.is("|") || p.is("[") {
			return errorf(UnsupportedFeature, bp, "union and record types are not supported")
		}
		p.prog.Types = append(p.prog.Types, &TypeDecl{Pos: d.pos, Name: name, Base: base})
		return nil
	case "input", "output":
		for {
			name, np, err := p.ident("relation name after ." + d.text)
			if err != nil {
				return err
			}
			io := &IODirective{Pos: np, Name: name}
			if p.is("(") {
				if err := p.ioParams(io); err != nil {
					return err
				}
			}
			if d.text == "input" {
				p.prog.Inputs = append(p.prog.Inputs, io)
			} else {
				p.prog.Outputs = append(p.prog.Outputs, io)
			}
			if !p.is(",") {
				return nil
			}
			if err := p.advance(); err != nil {
				return err
			}
		}
	}
	return errorf(UnsupportedFeature, d.pos, "directive .%s is not supported (supported: .decl, .type, .input, .output)", d.text)
}

// ioParams parses `(key="value", ...)`. IO=file, filename, delimiter="\t"
// and headers=false are accepted; anything else is refused rather than
// silently ignored.
func (p *parser) ioParams(io *IODirective) *Error {
	if err := p.advance(); err != nil {
		return err
	}
	first := true
	for !p.is(")") {
		if !first {
			if err := p.expect(",", "',' or ')' in parameter list"); err != nil {
				return err
			}
		}
		first = false
		key, kp, err := p.ident("parameter name")
		if err != nil {
			return err
		}
		if err := p.expect("=", "'=' after parameter name"); err != nil {
			return err
		}
		var val string
		switch p.tok.kind {
		case tString, tIdent:
			val = p.tok.text
		default:
			return errorf(SyntaxError, p.tok.pos, "expected parameter value, found %s", describe(p.tok))
		}
		if err := p.advance(); err != nil {
			return err
		}
		switch {
		case key == "IO" && val == "file":
		case key == "filename":
			io.Filename = val
		case key == "delimiter" && val == "\t":
		case key == "headers" && val == "false":
		default:
			return errorf(UnsupportedFeature, kp, "I/O parameter %s=%q is not supported", key, val)
		}
	}
	return p.advance()
}

func (p *parser) clause() *Error {
	start := p.tok.pos
	head, err := p.atom(true)
	if err != nil {
		return err
	}
	c := &Clause{Pos: start, Head: head}
	if p.is(":-") {
		if err := p.advance(); err != nil {
			return err
		}
		for {
			it, err := p.bodyItem()
			if err != nil {
				return err
			}
			c.Body = append(c.Body, it)
			if !p.is(",") {
				break
			}
			if err := p.advance(); err != nil {
				return err
			}
		}
	}
	if p.is(";") || p.is("|") {
		return errorf(UnsupportedFeature, p.tok.pos, "disjunction in rule bodies is not supported")
	}
	if !p.is(".") {
		return errorf(SyntaxError, p.tok.pos, "expected ',' or '.' after %s, found %s", lastWhat(c), describe(p.tok))
	}
	p.prog.Clauses = append(p.prog.Clauses, c)
	return p.advance()
}

func lastWhat(c *Clause) string {
	if len(c.Body) == 0 {
		return "head " + c.Head.String()
	}
	switch it := c.Body[len(c.Body)-1].(type) {
	case *Literal:
		return it.String()
	case *Comparison:
		return it.String()
	}
	return "body"
}

// atom parses `[-]name(args)`. allowNeg permits the explicit-negation sign.
func (p *parser) atom(allowNeg bool) (*AtomExpr, *Error) {
	a := &AtomExpr{Pos: p.tok.pos}
	if p.is("-") && allowNeg {
		a.Neg = true
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	name, _, err := p.ident("relation name")
	if err != nil {
		return nil, err
	}
	a.Name = name
	if err := p.expect("(", "'(' after relation name "+strconv.Quote(name)); err != nil {
		return nil, err
	}
	for !p.is(")") {
		if len(a.Args) > 0 {
			if err := p.expect(",", "',' or ')' in argument list"); err != nil {
				return nil, err
			}
		}
		t, err := p.expr()
		if err != nil {
			return nil, err
		}
		a.Args = append(a.Args, t)
	}
	return a, p.advance()
}

func (p *parser) bodyItem() (BodyItem, *Error) {
	pos := p.tok.pos
	if p.is("!") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		a, err := p.atom(true)
		if err != nil {
			return nil, err
		}
		return &Literal{Pos: pos, Not: true, Atom: a}, nil
	}
	if p.tok.kind == tIdent {
		la, err := p.lookahead()
		if err != nil {
			return nil, err
		}
		if la.kind == tPunct && la.text == "(" {
			a, err := p.atom(false)
			if err != nil {
				return nil, err
			}
			return &Literal{Pos: pos, Atom: a}, nil
		}
	}
	if p.is("-") {
		la, err := p.lookahead()
		if err != nil {
			return nil, err
		}
		if la.kind == tIdent {
			// `-name(` is an explicitly negated atom; `-x < 3` an expression.
			save := p.lx
			saveTok := p.tok
			if err := p.advance(); err != nil {
				return nil, err
			}
			la2, err := p.lookahead()
			if err != nil {
				return nil, err
			}
			isAtom := la2.kind == tPunct && la2.text == "("
			// restore: re-lex from the saved state
			p.lx = save
			p.tok = saveTok
			identTok := la
			p.peek = &identTok
			if isAtom {
				a, err := p.atom(true)
				if err != nil {
					return nil, err
				}
				return &Literal{Pos: pos, Atom: a}, nil
			}
		}
	}
	l, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tPunct {
		return nil, errorf(SyntaxError, p.tok.pos, "expected comparison operator after %s, found %s", l.String(), describe(p.tok))
	}
	op := p.tok.text
	switch op {
	case "<", "<=", ">", ">=", "=", "!=":
	default:
		return nil, errorf(SyntaxError, p.tok.pos, "expected comparison operator after %s, found %s", l.String(), describe(p.tok))
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	r, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &Comparison{Pos: pos, Op: op, L: l, R: r}, nil
}

func (p *parser) expr() (Term, *Error) {
	l, err := p.mulExpr()
	if err != nil {
		return nil, err
	}
	for p.is("+") || p.is("-") {
		op, pos := p.tok.text[0], p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.mulExpr()
		if err != nil {
			return nil, err
		}
		l = &BinExpr{Pos: pos, Op: op, L: l, R: r}
	}
	return l, nil
}

func (p *parser) mulExpr() (Term, *Error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.is("*") || p.is("/") || p.is("%") {
		op, pos := p.tok.text[0], p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &BinExpr{Pos: pos, Op: op, L: l, R: r}
	}
	return l, nil
}

func (p *parser) unary() (Term, *Error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, errorf(SyntaxError, p.tok.pos, "expression nested more than %d deep", maxNesting)
	}
	if p.is("-") {
		pos := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tNumber {
			// A negative literal. For 9223372036854775808 the lexer holds
			// math.MinInt64, which negation leaves as it is: the least
			// number, as the fact reader reads it.
			t := p.tok
			if err := p.advance(); err != nil {
				return nil, err
			}
			return &NumConst{Pos: pos, Val: -t.num}, nil
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &BinExpr{Pos: pos, Op: '-', L: &NumConst{Pos: pos, Val: 0}, R: x}, nil
	}
	return p.primary()
}

// aggregates are Soufflé's aggregate functions. mean is refused by name
// rather than as a syntax error.
var aggregates = map[string]bool{"count": true, "sum": true, "min": true, "max": true, "mean": true}

// aggregate parses `count : {body}`, `sum e : {body}`, `min e : …` or
// `max e : …`, where a single atom may stand for the braces.
func (p *parser) aggregate() (Term, *Error) {
	t := p.tok
	if t.text == "mean" {
		return nil, errorf(UnsupportedFeature, t.pos, "aggregate mean is not supported: numbers are integers; divide a sum by a count")
	}
	if p.inAggregate {
		return nil, errorf(UnsupportedFeature, t.pos, "an aggregate inside an aggregate is not supported: derive the inner one into a relation of its own")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	a := &Aggregate{Pos: t.pos, Func: t.text}
	p.aggColon = false
	switch {
	case t.text == "count" && !p.is(":"):
		return nil, errorf(SyntaxError, p.tok.pos, "count takes no expression: write count : {…}, found %s", describe(p.tok))
	case t.text != "count":
		if p.is(":") {
			return nil, errorf(SyntaxError, p.tok.pos, "%s needs the expression it takes before ':', as in %s x : {…}", t.text, t.text)
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		a.Target = x
	}
	if err := p.expect(":", "':' after "+t.text); err != nil {
		return nil, err
	}
	p.aggColon = true
	p.inAggregate = true
	defer func() { p.inAggregate = false }()
	if !p.is("{") {
		pos := p.tok.pos
		neg := p.is("-")
		if !neg && p.tok.kind != tIdent {
			return nil, errorf(SyntaxError, pos, "expected an atom or '{' after %s :, found %s", t.text, describe(p.tok))
		}
		at, err := p.atom(true)
		if err != nil {
			return nil, err
		}
		a.Body = []BodyItem{&Literal{Pos: pos, Atom: at}}
		return a, nil
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for {
		it, err := p.bodyItem()
		if err != nil {
			return nil, err
		}
		a.Body = append(a.Body, it)
		if p.is("}") {
			break
		}
		if err := p.expect(",", "',' or '}' in the body of "+t.text); err != nil {
			return nil, err
		}
	}
	return a, p.advance()
}

func (p *parser) primary() (Term, *Error) {
	t := p.tok
	switch {
	case t.kind == tNumber:
		if t.minAbs {
			return nil, errorf(SyntaxError, t.pos, "number %q is out of range (numbers are signed 64-bit integers)", t.text)
		}
		return &NumConst{Pos: t.pos, Val: t.num}, p.advance()
	case t.kind == tString:
		return &SymConst{Pos: t.pos, Val: t.text}, p.advance()
	case t.kind == tIdent:
		la, err := p.lookahead()
		if err != nil {
			return nil, err
		}
		if la.kind == tPunct && la.text == "(" {
			if t.text == "sum" || t.text == "min" || t.text == "max" {
				// `sum (y + 1) * 2 : {…}` is an aggregate, `max(x, 1)` a
				// functor: it is the latter if no ':' follows the first
				// expression.
				lx, tok, peek := p.lx, p.tok, *p.peek
				a, err := p.aggregate()
				if err == nil || p.aggColon {
					return a, err
				}
				p.lx, p.tok, p.peek = lx, tok, &peek
			}
			return nil, errorf(UnsupportedFeature, t.pos, "functor or atom %q is not allowed inside a term", t.text)
		}
		if aggregates[t.text] && (la.kind == tPunct && la.text == ":" || la.kind == tIdent || la.kind == tNumber || la.kind == tString) {
			// Soufflé's `count : a(…)`, `sum x : {…}`: a variable is
			// never followed by either, so this misreads nothing.
			return p.aggregate()
		}
		return &Var{Pos: t.pos, Name: t.text}, p.advance()
	case p.is("_"):
		return &Wildcard{Pos: t.pos}, p.advance()
	case p.is("("):
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		return x, p.expect(")", "')'")
	}
	return nil, errorf(SyntaxError, t.pos, "expected a term, found %s", describe(t))
}
