package logic

import "strconv"

// The append forms below are the one definition of the text of values,
// facts, positions, absences and supports: each String method is its
// append form into a fresh buffer. Callers that digest or compare that
// text in a loop (a support's derived id is the digest of its text)
// append into a buffer they reuse instead of building a string each time.

// appendSym appends a symbol as a Datalog string constant.
func appendSym(b []byte, s string) []byte {
	b = append(b, '"')
	// Most symbols need no escape: copy the run before the first byte
	// that does whole, then go on byte by byte. The run is found eight
	// bytes at a time while no byte of a word is below a space, a quote
	// or a backslash (a superset of the escaped bytes), then byte by byte.
	i := plainPrefix(s)
	for i < len(s) && !needsEscape(s[i]) {
		i++
	}
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, `\n`...)
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// plainPrefix returns a multiple of eight such that no byte of s before
// it is a control byte (below 0x20), '"' or '\\', so none of them needs an
// escape.
func plainPrefix(s string) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// Some byte's high bit is set in a term exactly when some byte
		// of w is below 0x20 (the first), or is '"' or '\\' (a zero byte
		// of w XOR that byte repeated, the second and third).
		q := w ^ (ones * '"')
		bs := w ^ (ones * '\\')
		if ((w-ones*0x20)&^w|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	return i
}

// needsEscape reports whether appendSym writes c as an escape.
func needsEscape(c byte) bool {
	return c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r'
}

func (v Value) appendText(b []byte) []byte {
	if v.sym {
		return appendSym(b, v.s)
	}
	return strconv.AppendInt(b, v.n, 10)
}

// AppendText appends f's text, exactly as String renders it, to b: for
// callers outside this package that build the text of many facts into one
// reused buffer.
func (f Fact) AppendText(b []byte) []byte { return f.appendText(b) }

func (f Fact) appendText(b []byte) []byte {
	if f.Neg {
		b = append(b, '-')
	}
	b = append(b, f.Rel...)
	b = append(b, '(')
	for i, a := range f.Args {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = a.appendText(b)
	}
	return append(b, ')')
}

func (a Absence) appendText(b []byte) []byte {
	b = append(b, '!')
	if a.Pattern.Neg {
		b = append(b, '-')
	}
	b = append(b, a.Pattern.Rel...)
	b = append(b, '(')
	for i, v := range a.Pattern.Args {
		if i > 0 {
			b = append(b, ", "...)
		}
		if a.Wildcard[i] {
			b = append(b, '_')
		} else {
			b = v.appendText(b)
		}
	}
	return append(b, ')')
}

func (p Pos) appendText(b []byte) []byte {
	b = append(b, p.File...)
	if p.Line == 0 {
		return b
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(p.Line), 10)
	b = append(b, ':')
	return strconv.AppendInt(b, int64(p.Col), 10)
}

// AppendText appends the support's text, the bytes String returns; the
// error is always nil.
func (s Support) AppendText(b []byte) ([]byte, error) {
	if s.Base {
		if len(s.BaseIDs) == 0 {
			return append(b, "base fact"...), nil
		}
		b = append(b, "base support "...)
		for i, id := range s.BaseIDs {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, id...)
		}
		return b, nil
	}
	b = append(b, "rule "...)
	b = append(b, s.RuleText...)
	b = append(b, " ("...)
	b = s.RulePos.appendText(b)
	b = append(b, ')')
	for i, p := range s.Premises {
		if i == 0 {
			b = append(b, " with "...)
		} else {
			b = append(b, ", "...)
		}
		b = p.appendText(b)
	}
	for i, a := range s.Absent {
		if i == 0 && len(s.Premises) == 0 {
			b = append(b, " with "...)
		} else {
			b = append(b, ", "...)
		}
		b = a.appendText(b)
	}
	for i, a := range s.Aggregates {
		if i == 0 && len(s.Premises) == 0 && len(s.Absent) == 0 {
			b = append(b, " with "...)
		} else {
			b = append(b, ", "...)
		}
		b = a.appendText(b)
	}
	return b, nil
}

// appendText writes `count : { a(x, _) } = 2 over a(1, 2); a(1, 3)`.
func (a Aggregation) appendText(b []byte) []byte {
	b = append(b, a.Text...)
	b = append(b, " = "...)
	b = strconv.AppendInt(b, a.Value, 10)
	for i, f := range a.Over {
		if i == 0 {
			b = append(b, " over "...)
		} else {
			b = append(b, "; "...)
		}
		b = f.appendText(b)
	}
	return b
}
