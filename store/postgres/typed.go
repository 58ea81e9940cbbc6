package postgres

import (
	"encoding/binary"
	"fmt"
	"unsafe"

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

// param is one typed parameter (see queueTyped). A string's or a byte
// slice's bytes are kept by their address and length, so that a param
// is no larger than it must be (it is copied into the write's list of
// parameters); the bytes are only read.
type param struct {
	p    *byte // a string's or a byte slice's first byte
	i    int64 // its length, or the int64
	a    any
	kind paramKind
}

func pstr(s string) param { return param{kind: paramString, p: unsafe.StringData(s), i: int64(len(s))} }

func pbytes(b []byte) param {
	if b == nil {
		return param{kind: paramBytes}
	}
	if len(b) == 0 {
		return param{kind: paramBytes, p: &emptyBytes} // not NULL
	}
	return param{kind: paramBytes, p: unsafe.SliceData(b), i: int64(len(b))}
}

// emptyBytes is where an empty, non-nil byte slice param points.
var emptyBytes byte

func pint(i int64) param { return param{kind: paramInt64, i: i} }
func pany(a any) param   { return param{kind: paramAny, a: a} }

// str is a string param's value.
func (p param) str() string { return unsafe.String(p.p, int(p.i)) }

// bytes is a byte slice param's value (nil for NULL).
func (p param) bytes() []byte {
	if p.p == nil {
		return nil
	}
	return unsafe.Slice(p.p, int(p.i))
}

// boxed is p's value as an argument to pgx.
func (p param) boxed() any {
	switch p.kind {
	case paramString:
		return p.str()
	case paramBytes:
		return p.bytes()
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
			d.buf = append(d.buf, p.str()...)
		case p.kind == paramInt64 && oids[i] == oidInt8:
			d.buf = binary.BigEndian.AppendUint64(d.buf, uint64(p.i))
		case p.kind == paramBytes && oids[i] == oidBytea:
			if b := p.bytes(); b == nil {
				start = -1
			} else {
				d.buf = append(d.buf, b...)
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
