package postgres

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"pgregory.net/rapid"
)

// sent is what the direct path sends for the parameters encoded into d:
// each one's bytes (nil for NULL) and its format.
func sent(d *directConn) ([][]byte, []int16) {
	vals, fmts := d.params(0, len(d.spans))
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v != nil {
			out[i] = append([]byte{}, v...)
		}
	}
	return out, append([]int16{}, fmts...)
}

// genParam returns a typed parameter and the same value boxed.
func genParam(t *rapid.T, label string) (param, any) {
	switch rapid.IntRange(0, 3).Draw(t, label+" kind") {
	case 0:
		s := rapid.String().Draw(t, label+" string")
		return pstr(s), s
	case 1:
		var b []byte
		switch rapid.IntRange(0, 2).Draw(t, label+" bytes kind") {
		case 1:
			b = []byte{}
		case 2:
			b = rapid.SliceOf(rapid.Byte()).Draw(t, label+" bytes")
		}
		return pbytes(b), b
	case 2:
		i := rapid.Int64().Draw(t, label+" int")
		return pint(i), i
	}
	others := []any{nil, true, false, int64(7), int32(-3), "s", []byte(nil), []byte{1, 2}, []string{"a", ""}, [][]byte{nil, {9}}, (*string)(nil), 1.5}
	a := others[rapid.IntRange(0, len(others)-1).Draw(t, label+" other")]
	return pany(a), a
}

// TestEncodeTypedAsBoxed checks that typed parameters are sent byte for
// byte, format for format and error for error as the same values boxed.
func TestEncodeTypedAsBoxed(t *testing.T) {
	m := pgtype.NewMap()
	types := []uint32{oidBool, oidBytea, oidInt8, oidText, oidVarchar, oidByteaArray, oidTextArray, pgtype.Int4OID, pgtype.Float8OID}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		ps := make([]param, n)
		boxed := make([]any, n)
		oids := make([]uint32, n)
		for i := range ps {
			ps[i], boxed[i] = genParam(t, fmt.Sprint(i))
			oids[i] = rapid.SampledFrom(types).Draw(t, fmt.Sprint(i, " oid"))
		}
		if rapid.IntRange(0, 9).Draw(t, "short") == 0 && n > 0 {
			oids = oids[:n-1]
		}
		// A statement encoded before, to check offsets into a used buffer.
		prefix := rapid.SliceOf(rapid.Byte()).Draw(t, "prefix")
		old, typed := &directConn{}, &directConn{}
		for _, d := range []*directConn{old, typed} {
			d.buf = append(d.buf, prefix...)
			d.spans = append(d.spans, span{0, len(prefix)})
			d.fmts = append(d.fmts, binaryFormat)
		}
		tq := &typedQuery{ps: ps}
		tq.self[0] = tq
		errOld := old.encode(m, oids, boxed)
		errTyped := typed.encode(m, oids, tq.self[:])
		if fmt.Sprint(errOld) != fmt.Sprint(errTyped) {
			t.Fatalf("errors differ: boxed %v, typed %v", errOld, errTyped)
		}
		if errOld != nil {
			return
		}
		ov, of := sent(old)
		tv, tf := sent(typed)
		if len(ov) != len(tv) {
			t.Fatalf("%d parameters boxed, %d typed", len(ov), len(tv))
		}
		for i := range ov {
			if (ov[i] == nil) != (tv[i] == nil) || !bytes.Equal(ov[i], tv[i]) || of[i] != tf[i] {
				t.Fatalf("parameter %d: boxed %x (format %d, null %v), typed %x (format %d, null %v)",
					i, ov[i], of[i], ov[i] == nil, tv[i], tf[i], tv[i] == nil)
			}
		}
	})
}

// TestQueueTypedThroughPgx checks that a typed write reaches pgx with its
// parameters boxed, in order, and that an untyped one is left alone.
func TestQueueTypedThroughPgx(t *testing.T) {
	tx := &wtx{begun: true}
	q := tx.queueTyped("SELECT $1, $2, $3, $4, $5, $6, $7", pstr("a"), pbytes(nil), pint(1<<40), pany(true), pbytes([]byte{1}), pbytes([]byte{}), pstr(""))
	u := tx.Queue("SELECT $1", "b")
	b := tx.batch(&pgx.Batch{})
	if len(b.QueuedQueries) != 2 || b.QueuedQueries[0] != q || b.QueuedQueries[1] != u {
		t.Fatalf("batch %v", b.QueuedQueries)
	}
	want := []any{"a", []byte(nil), int64(1 << 40), true, []byte{1}, []byte{}, ""}
	if got := q.Arguments; fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Fatalf("arguments %#v, want %#v", got, want)
	}
	if fmt.Sprintf("%#v", u.Arguments) != fmt.Sprintf("%#v", []any{"b"}) {
		t.Fatalf("untyped arguments %#v", u.Arguments)
	}
}
