package postgres

import (
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// A write queued with queueTyped keeps its parameters as they are typed
// (strings, byte slices and int64s unboxed) rather than as a []any, so
// that queueing it boxes none of them. The direct path (commitDirect)
// encodes them straight into its buffer, byte for byte as it encodes the
// same values boxed; the path through pgx boxes them when it takes them.

// paramKind says which of a param's fields holds its value.
type paramKind uint8

const (
	paramAny paramKind = iota // a, as pgx takes it
	paramString
	paramBytes // b; a nil slice is NULL
	paramInt64
)

// param is one typed parameter (see queueTyped).
type param struct {
	kind paramKind
	s    string
	b    []byte
	i    int64
	a    any
}

func pstr(s string) param   { return param{kind: paramString, s: s} }
func pbytes(b []byte) param { return param{kind: paramBytes, b: b} }
func pint(i int64) param    { return param{kind: paramInt64, i: i} }
func pany(a any) param      { return param{kind: paramAny, a: a} }

// boxed is p's value as an argument to pgx.
func (p param) boxed() any {
	switch p.kind {
	case paramString:
		return p.s
	case paramBytes:
		return p.b
	case paramInt64:
		return p.i
	}
	return p.a
}

// typedQuery is a queued write whose parameters are typed: its query's
// Arguments is self, one element that points back to it, until the path
// through pgx replaces them by the boxed parameters (see unbox).
type typedQuery struct {
	q    pgx.QueuedQuery
	self [1]any
	ps   []param
}

// queueTyped is Queue with typed parameters.
func (t *wtx) queueTyped(sql string, ps ...param) *pgx.QueuedQuery {
	tq := &typedQuery{ps: ps}
	tq.self[0] = tq
	tq.q = pgx.QueuedQuery{SQL: sql, Arguments: tq.self[:]}
	t.pending = append(t.pending, &tq.q)
	return &tq.q
}

// typedArgs returns the typed parameters that args stands for, if it is
// a typed query's.
func typedArgs(args []any) ([]param, bool) {
	if len(args) != 1 {
		return nil, false
	}
	tq, ok := args[0].(*typedQuery)
	if !ok {
		return nil, false
	}
	return tq.ps, true
}

// unbox gives q, if it was queued typed, its parameters boxed, as pgx
// takes them.
func unbox(q *pgx.QueuedQuery) {
	ps, ok := typedArgs(q.Arguments)
	if !ok {
		return
	}
	args := make([]any, len(ps))
	for i, p := range ps {
		args[i] = p.boxed()
	}
	q.Arguments = args
}

// encodeTyped is encode for typed parameters: each is encoded as encode
// encodes the same value boxed.
func (d *directConn) encodeTyped(m *pgtype.Map, oids []uint32, ps []param) error {
	if len(oids) != len(ps) {
		return fmt.Errorf("statement takes %d parameters, given %d", len(oids), len(ps))
	}
	for i, p := range ps {
		start := len(d.buf)
		f := binaryFormat
		switch {
		case p.kind == paramString:
			f = textFormat
			d.buf = append(d.buf, p.s...)
		case p.kind == paramInt64 && oids[i] == oidInt8:
			d.buf = binary.BigEndian.AppendUint64(d.buf, uint64(p.i))
		case p.kind == paramBytes && oids[i] == oidBytea:
			if p.b == nil {
				start = -1
			} else {
				d.buf = append(d.buf, p.b...)
			}
		default:
			if err := d.encodeOne(m, oids[i], p.boxed()); err != nil {
				return err
			}
			continue
		}
		d.spans = append(d.spans, span{start, len(d.buf)})
		d.fmts = append(d.fmts, f)
	}
	return nil
}
