package logic

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// ReadFacts parses a Soufflé fact file for relation rel: one tuple per
// line, columns separated by a tab, symbols written raw, numbers in
// decimal. A final line without a newline is accepted; a trailing empty
// line is not a tuple. Symbols are taken byte for byte (a carriage return
// before the newline belongs to the last symbol), so every symbol written
// by [Materialization.WriteFacts] reads back unchanged. name is used in error positions (name:line:col).
// Negative evidence can be supplied with neg.
func ReadFacts(c *Compiled, rel string, neg bool, name string, data []byte) ([]Fact, error) {
	ri, ok := c.relByName[rel]
	if !ok {
		return nil, errorf(UndeclaredRelation, Pos{File: name}, "relation %s is not declared", rel)
	}
	info := c.rels[ri]
	var out []Fact
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(info.types) == 0 {
			out = append(out, Fact{Rel: rel, Neg: neg})
			continue
		}
		cols := strings.Split(string(l), "\t")
		if len(cols) != len(info.types) {
			return nil, errorf(MalformedFact, Pos{File: name, Line: line, Col: 1}, "%s has %d column(s) but %s is declared with %d", describeLine(l), len(cols), rel, len(info.types))
		}
		f := Fact{Rel: rel, Neg: neg, Args: make([]Value, len(cols))}
		col := 1
		for i, s := range cols {
			if info.types[i] == TypeNumber {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return nil, errorf(MalformedFact, Pos{File: name, Line: line, Col: col}, "column %d (%s) of %s must be a number, found %q", i+1, info.attrs[i], rel, s)
				}
				f.Args[i] = Num(n)
			} else {
				if !utf8Valid(s) {
					return nil, errorf(MalformedFact, Pos{File: name, Line: line, Col: col}, "column %d (%s) of %s is not valid UTF-8", i+1, info.attrs[i], rel)
				}
				f.Args[i] = Sym(s)
			}
			col += len(s) + 1
		}
		out = append(out, f)
	}
	return out, nil
}

func describeLine(l []byte) string {
	if len(l) == 0 {
		return "empty line"
	}
	return "line"
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

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
