package logic

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ReadFacts parses a Soufflé fact file for relation rel: one tuple per
// line, columns separated by a tab, symbols written raw, numbers in
// decimal. A final line without a newline is accepted; a trailing empty
// line is not a tuple. Symbols are taken byte for byte (a carriage return
// before the newline belongs to the last symbol), so every symbol written
// by [Materialization.WriteFacts] reads back unchanged. name is used in error positions (name:line:col).
// Negative evidence can be supplied with neg.
func ReadFacts(c *Compiled, rel string, neg bool, name string, data []byte) ([]Fact, error) {
	sc, err := scanFacts(c, rel, name, data)
	if err != nil {
		return nil, err
	}
	// Facts are read from one copy of the file, without splitting lines
	// or columns into strings of their own: numbers are parsed in place,
	// and only a symbol is copied out (a substring would keep the whole
	// file alive as long as the symbol table holds it). Every fact's
	// arguments are carved from blocks of argsBlock facts' worth.
	out := make([]Fact, 0, min(sc.lines(), factsPrealloc))
	arity := len(sc.cols)
	var args []Value
	for sc.next() {
		if arity == 0 {
			out = append(out, Fact{Rel: rel, Neg: neg})
			continue
		}
		if cap(args)-len(args) < arity {
			args = make([]Value, 0, argsBlock*arity)
		}
		f := Fact{Rel: rel, Neg: neg, Args: args[len(args) : len(args)+arity : len(args)+arity]}
		args = args[:len(args)+arity]
		for i, v := range sc.cols {
			if v.sym {
				v.s = strings.Clone(v.s)
			}
			f.Args[i] = v
		}
		out = append(out, f)
	}
	if sc.err != nil {
		return nil, sc.err
	}
	return out, nil
}

// factScanner reads a fact file a line at a time: after each next, cols
// holds the line's values, a symbol's text a substring of the file's.
type factScanner struct {
	rel, name string
	info      *relInfo
	text      string // what is left to read
	line      int
	cols      []Value
	err       error
}

// scanFacts starts reading data as rel's facts, or says rel is not
// declared.
func scanFacts(c *Compiled, rel, name string, data []byte) (*factScanner, error) {
	ri, ok := c.relByName[rel]
	if !ok {
		return nil, errorf(UndeclaredRelation, Pos{File: name}, "relation %s is not declared", rel)
	}
	info := c.rels[ri]
	return &factScanner{rel: rel, name: name, info: info, text: string(data), cols: make([]Value, len(info.types))}, nil
}

// lines is how many facts what is left holds, if every line reads: one a
// line, a final one without its newline included.
func (sc *factScanner) lines() int {
	n := strings.Count(sc.text, "\n")
	if len(sc.text) > 0 && sc.text[len(sc.text)-1] != '\n' {
		n++
	}
	return n
}

// next reads the next line into cols; false at the end, or at a line
// that does not read (err then says where and why).
func (sc *factScanner) next() bool {
	if len(sc.text) == 0 || sc.err != nil {
		return false
	}
	sc.line++
	var l string
	if i := strings.IndexByte(sc.text, '\n'); i >= 0 {
		l, sc.text = sc.text[:i], sc.text[i+1:]
	} else {
		l, sc.text = sc.text, ""
	}
	arity := len(sc.cols)
	if arity == 0 {
		return true
	}
	if n := strings.Count(l, "\t") + 1; n != arity {
		sc.err = errorf(MalformedFact, Pos{File: sc.name, Line: sc.line, Col: 1}, "%s has %d column(s) but %s is declared with %d", describeLine(l), n, sc.rel, arity)
		return false
	}
	col := 1
	for i := range arity {
		s := l
		if j := strings.IndexByte(l, '\t'); j >= 0 {
			s, l = l[:j], l[j+1:]
		}
		if sc.info.types[i] == TypeNumber {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				sc.err = errorf(MalformedFact, Pos{File: sc.name, Line: sc.line, Col: col}, "column %d (%s) of %s must be a number, found %q", i+1, sc.info.attrs[i], sc.rel, s)
				return false
			}
			sc.cols[i] = Num(n)
		} else {
			if !utf8.ValidString(s) {
				sc.err = errorf(MalformedFact, Pos{File: sc.name, Line: sc.line, Col: col}, "column %d (%s) of %s is not valid UTF-8", i+1, sc.info.attrs[i], sc.rel)
				return false
			}
			sc.cols[i] = Sym(s)
		}
		col += len(s) + 1
	}
	return true
}

// factsPrealloc bounds the facts ReadFacts makes room for up front, by
// counting lines: a file of empty lines is refused at its first, and
// must not cost a list of a fact per byte first.
const factsPrealloc = 1 << 16

// argsBlock is how many facts' arguments ReadFacts allocates at once.
const argsBlock = 1024

func describeLine(l string) string {
	if len(l) == 0 {
		return "empty line"
	}
	return "line"
}

// WriteFacts renders one side of a relation in the Soufflé output format:
// one tuple per line in sorted order (numbers numerically, symbols
// bytewise, column by column), tab-separated.
func (m *Materialization) WriteFacts(rel string, neg bool) ([]byte, error) {
	var b bytes.Buffer
	if _, err := m.WriteFactsTo(&b, rel, neg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// factsBuffer is how much WriteFactsTo renders before each write.
const factsBuffer = 64 << 10

// WriteFactsTo streams what [Materialization.WriteFacts] renders to w,
// through one small buffer, and returns the number of bytes written. A
// write error stops it and is returned as is.
func (m *Materialization) WriteFactsTo(w io.Writer, rel string, neg bool) (int64, error) {
	if m.consumed {
		return 0, errConsumed()
	}
	ri, ok := m.c.relByName[rel]
	if !ok {
		return 0, errorf(UndeclaredRelation, Pos{}, "relation %s is not declared", rel)
	}
	t := ri * 2
	if neg {
		t++
	}
	rows := m.sortedRows(t)
	tb := m.tables[t]
	types := m.c.rels[ri].types
	var total int64
	b := make([]byte, 0, min(factsBuffer, len(rows)*(tb.arity*8+1))+factsBuffer/4)
	flush := func() error {
		n, err := w.Write(b)
		total += int64(n)
		b = b[:0]
		return err
	}
	tup := make([]int64, tb.arity)
	for _, r := range rows {
		for i, v := range tb.load(r, tup) {
			if i > 0 {
				b = append(b, '\t')
			}
			if types[i] == TypeSymbol {
				b = append(b, m.syms[v]...)
			} else {
				b = strconv.AppendInt(b, v, 10)
			}
		}
		b = append(b, '\n')
		if len(b) >= factsBuffer {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if len(b) > 0 {
		if err := flush(); err != nil {
			return total, err
		}
	}
	return total, nil
}

// ParseFact parses a signed ground atom such as `path("a", 3)` or
// `-blocked("x")` against the program's declarations.
func ParseFact(c *Compiled, text string) (Fact, error) {
	p := &parser{lx: lexer{file: "fact", src: []byte(text), line: 1, col: 1}, prog: &Program{}}
	if err := p.advance(); err != nil {
		return Fact{}, err
	}
	a, err := p.atom(true)
	if err != nil {
		return Fact{}, err
	}
	if p.is(".") {
		if err := p.advance(); err != nil {
			return Fact{}, err
		}
	}
	if p.tok.kind != tEOF {
		return Fact{}, errorf(SyntaxError, p.tok.pos, "unexpected %s after the fact", describe(p.tok))
	}
	_, rel, cerr := c.resolveAtom(a)
	if cerr != nil {
		return Fact{}, cerr
	}
	f := Fact{Rel: a.Name, Neg: a.Neg, Args: make([]Value, len(a.Args))}
	for i, t := range a.Args {
		switch t := t.(type) {
		case *NumConst:
			if rel.types[i] != TypeNumber {
				return Fact{}, errorf(TypeMismatch, t.Pos, "argument %d (%s) of %s must be a symbol", i+1, rel.attrs[i], rel.name)
			}
			f.Args[i] = Num(t.Val)
		case *SymConst:
			if rel.types[i] != TypeSymbol {
				return Fact{}, errorf(TypeMismatch, t.Pos, "argument %d (%s) of %s must be a number", i+1, rel.attrs[i], rel.name)
			}
			f.Args[i] = Sym(t.Val)
		default:
			return Fact{}, errorf(UnsafeVariable, t.termPos(), "argument %d of %s must be a constant, found %s", i+1, rel.name, t)
		}
	}
	return f, nil
}
