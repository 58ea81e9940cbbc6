package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A transaction's last round trip — its queued writes and COMMIT — goes
// through the connection's protocol layer itself when none of them wants
// its result read back (see wtx.commitDirect): each statement is prepared
// once per connection and kept by its text, and its parameters are
// encoded here, straight into one buffer the connection keeps, in the
// formats pgx would choose for them. The statements, their parameters'
// bytes and their order are those pgx would send; only the client's work
// to get them there is less.

// directKey names a connection's directConn in its custom data.
const directKey = "flrh.direct"

// maxDirect bounds the statements prepared on one connection for the
// direct path; a round trip that would need more goes through pgx.
const maxDirect = 512

// directConn is what one connection keeps for the direct path. It is only
// used while the connection is acquired, by one transaction at a time.
type directConn struct {
	stmts map[string]*pgconn.StatementDescription // by SQL text
	seq   int                                     // names prepared so far; a name is never reused
	buf   []byte                                  // parameter bytes of the round trip being encoded
	spans []span                                  // each parameter's bytes in buf, in statement order
	fmts  []int16                                 // each parameter's format code, in statement order
	vals  [][]byte                                // one statement's parameters, as sent
	wbuf  writeBuffer                             // the round trip's messages, kept between round trips
}

// span is a parameter's bytes in directConn.buf; start < 0 is NULL.
type span struct{ start, end int }

func directOf(pc *pgconn.PgConn) *directConn {
	d, _ := pc.CustomData()[directKey].(*directConn)
	if d == nil {
		d = &directConn{stmts: map[string]*pgconn.StatementDescription{}}
		pc.CustomData()[directKey] = d
	}
	return d
}

// prepare prepares sqls (none of them prepared yet) in one round trip.
func (d *directConn) prepare(ctx context.Context, pc *pgconn.PgConn, sqls []string) error {
	p := pc.StartPipeline(ctx)
	names := make([]string, len(sqls))
	for i, sql := range sqls {
		d.seq++
		names[i] = "flrh_" + strconv.Itoa(d.seq)
		p.SendPrepare(names[i], sql, nil)
	}
	if err := p.Sync(); err != nil {
		return err
	}
	for i, sql := range sqls {
		res, err := p.GetResults()
		if err != nil {
			p.Close()
			return err
		}
		sd, ok := res.(*pgconn.StatementDescription)
		if !ok {
			p.Close()
			return fmt.Errorf("preparing a statement: unexpected result %T", res)
		}
		sd.Name, sd.SQL = names[i], sql
		d.stmts[sql] = sd
	}
	if res, err := p.GetResults(); err != nil {
		p.Close()
		return err
	} else if _, ok := res.(*pgconn.PipelineSync); !ok {
		p.Close()
		return fmt.Errorf("preparing statements: unexpected result %T", res)
	}
	return p.Close()
}

// writeBuffer is a frontend message of no bytes that hands the
// connection's message encoder a buffer the directConn keeps. pgproto3
// appends each message of a round trip to its write buffer and, after
// writing a buffer of more than 1 KB, replaces it with a new one of 1 KB:
// a round trip of a tick's parameters (tens of KB, the checkpoint's and
// the events' bodies) regrew it from 1 KB by successive copies at every
// round trip, about 90 KB allocated a governed step. Sent first, this
// message makes the encoder append the round trip's messages to buf,
// which is large enough to hold them, instead: the bytes sent are the
// same, and the encoder lets go of buf once it has written it.
type writeBuffer struct{ buf []byte }

// Encode returns buf holding dst's bytes (messages already in the
// encoder's buffer, none at the start of a round trip); dst may be buf
// itself, when the encoder kept it after writing less than 1 KB.
func (w *writeBuffer) Encode(dst []byte) ([]byte, error) {
	if cap(w.buf) < len(dst) {
		return dst, nil
	}
	return append(w.buf[:0], dst...), nil
}

// Decode is never called: the message is never received.
func (w *writeBuffer) Decode([]byte) error { return errors.New("a write buffer is not received") }

// Frontend marks writeBuffer a frontend message.
func (w *writeBuffer) Frontend() {}

// maxWriteBuffer bounds the write buffer a directConn keeps; a round trip
// that needs more leaves the encoder to grow its own.
const maxWriteBuffer = 1 << 20

// handWriteBuffer gives pc's message encoder d's write buffer, grown to
// size bytes if smaller, before a round trip whose messages take at most
// size bytes. It sends nothing.
func (d *directConn) handWriteBuffer(pc *pgconn.PgConn, size int) {
	if size > maxWriteBuffer {
		return
	}
	if cap(d.wbuf.buf) < size {
		d.wbuf.buf = make([]byte, 0, size+size/4)
	}
	pc.Frontend().Send(&d.wbuf)
}

// messagesSize is an upper bound of the bytes of a round trip's messages:
// the Bind and Execute messages of n statements whose parameters take
// params bytes in all (with a length and a format code each), and the
// Sync.
func messagesSize(params, nparams, n int) int {
	return params + 6*nparams + n*(64+len("flrh_")+20) + 5
}

// forgetOnError drops the connection's prepared statements when err says
// the server no longer has them as described (a statement gone, or its
// result's type changed under it); the next round trip prepares afresh.
func (d *directConn) forgetOnError(err error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "0A000") {
		clear(d.stmts)
	}
}

// PostgreSQL type OIDs the direct path encodes itself; any other
// parameter is encoded by pgx's type map.
const (
	oidBool       = 16
	oidBytea      = 17
	oidInt8       = 20
	oidText       = 25
	oidVarchar    = 1043
	oidByteaArray = 1001
	oidTextArray  = 1009
)

const (
	textFormat   int16 = pgtype.TextFormatCode
	binaryFormat int16 = pgtype.BinaryFormatCode
)

// encode appends the parameters args of a statement whose parameters have
// the types oids to d's buffer, each in the format pgx chooses for it
// (strings as text, everything else in the type's preferred format) and
// as pgx encodes it: a nil slice, pointer or interface is NULL.
func (d *directConn) encode(m *pgtype.Map, oids []uint32, args []any) error {
	if len(oids) != len(args) {
		return fmt.Errorf("statement takes %d parameters, given %d", len(oids), len(args))
	}
	for i, a := range args {
		if err := d.encodeOne(m, oids[i], a); err != nil {
			return err
		}
	}
	return nil
}

// encodeOne appends one parameter a of type oid (see encode).
func (d *directConn) encodeOne(m *pgtype.Map, oid uint32, a any) error {
	start := len(d.buf)
	f := binaryFormat
	null := false
	switch v := a.(type) {
	case nil:
		return d.encodeOther(m, oid, a)
	case string:
		f = textFormat
		d.buf = append(d.buf, v...)
	case *string:
		f = textFormat
		if null = v == nil; !null {
			d.buf = append(d.buf, *v...)
		}
	case int64:
		if oid != oidInt8 {
			return d.encodeOther(m, oid, a)
		}
		d.buf = binary.BigEndian.AppendUint64(d.buf, uint64(v))
	case *int64:
		if oid != oidInt8 {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil; !null {
			d.buf = binary.BigEndian.AppendUint64(d.buf, uint64(*v))
		}
	case bool:
		if oid != oidBool {
			return d.encodeOther(m, oid, a)
		}
		b := byte(0)
		if v {
			b = 1
		}
		d.buf = append(d.buf, b)
	case []byte:
		if oid != oidBytea {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil; !null {
			d.buf = append(d.buf, v...)
		}
	case *[]byte:
		if oid != oidBytea {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil || *v == nil; !null {
			d.buf = append(d.buf, *v...)
		}
	case []string:
		if oid != oidTextArray {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil; !null {
			d.buf = appendTextArray(d.buf, v)
		}
	case *[]string:
		if oid != oidTextArray {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil || *v == nil; !null {
			d.buf = appendTextArray(d.buf, *v)
		}
	case []*string:
		if oid != oidTextArray {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil; !null {
			nulls := false
			for _, s := range v {
				nulls = nulls || s == nil
			}
			d.buf = appendArray(d.buf, oidText, len(v), nulls, func(b []byte, i int) ([]byte, bool) {
				if v[i] == nil {
					return b, false
				}
				return append(b, *v[i]...), true
			})
		}
	case [][]byte:
		if oid != oidByteaArray {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil; !null {
			d.buf = appendByteaArray(d.buf, v)
		}
	case *[][]byte:
		if oid != oidByteaArray {
			return d.encodeOther(m, oid, a)
		}
		if null = v == nil || *v == nil; !null {
			d.buf = appendByteaArray(d.buf, *v)
		}
	default:
		return d.encodeOther(m, oid, a)
	}
	if null {
		start = -1
	}
	d.spans = append(d.spans, span{start, len(d.buf)})
	d.fmts = append(d.fmts, f)
	return nil
}

// encodeOther encodes one parameter as pgx would (see
// pgx.ExtendedQueryBuilder): in its type's preferred format, else in the
// other one.
func (d *directConn) encodeOther(m *pgtype.Map, oid uint32, a any) error {
	start := len(d.buf)
	f := m.FormatCodeForOID(oid)
	buf, err := m.Encode(oid, f, a, d.buf)
	if err != nil {
		f = textFormat + binaryFormat - f
		var err2 error
		if buf, err2 = m.Encode(oid, f, a, d.buf); err2 != nil {
			return fmt.Errorf("encoding a parameter of type %d: %w", oid, err)
		}
	}
	if buf == nil {
		d.spans = append(d.spans, span{-1, start})
	} else {
		d.buf = buf
		d.spans = append(d.spans, span{start, len(d.buf)})
	}
	d.fmts = append(d.fmts, f)
	return nil
}

// appendTextArray appends v as a text[] (see appendArray).
func appendTextArray(b []byte, v []string) []byte {
	return appendArray(b, oidText, len(v), false, func(b []byte, i int) ([]byte, bool) { return append(b, v[i]...), true })
}

// appendByteaArray appends v as a bytea[], a nil element NULL (see
// appendArray).
func appendByteaArray(b []byte, v [][]byte) []byte {
	nulls := false
	for _, s := range v {
		nulls = nulls || s == nil
	}
	return appendArray(b, oidBytea, len(v), nulls, func(b []byte, i int) ([]byte, bool) { return append(b, v[i]...), v[i] != nil })
}

// appendArray appends a one-dimensional array of n elements of type elem
// in PostgreSQL's binary array format; el appends element i and reports
// false for NULL. An empty array has one dimension of length 0, as pgx
// sends it.
func appendArray(b []byte, elem uint32, n int, nulls bool, el func([]byte, int) ([]byte, bool)) []byte {
	hasNull := uint32(0)
	if nulls {
		hasNull = 1
	}
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, elem)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for i := range n {
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var ok bool
		b, ok = el(b, i)
		size := uint32(len(b) - at - 4)
		if !ok {
			size = 0xFFFFFFFF // -1: NULL
		}
		binary.BigEndian.PutUint32(b[at:], size)
	}
	return b
}

// params returns the parameters spans[from:to] as sent, sharing d's
// buffers.
func (d *directConn) params(from, to int) ([][]byte, []int16) {
	d.vals = d.vals[:0]
	for _, s := range d.spans[from:to] {
		if s.start < 0 {
			d.vals = append(d.vals, nil)
			continue
		}
		d.vals = append(d.vals, d.buf[s.start:s.end:s.end])
	}
	return d.vals, d.fmts[from:to]
}

// reset empties the buffers for the next round trip, keeping their
// memory unless a large value grew them.
func (d *directConn) reset() {
	const keep = 64 << 10
	if cap(d.buf) > keep {
		d.buf = nil
	}
	d.buf, d.spans, d.fmts = d.buf[:0], d.spans[:0], d.fmts[:0]
}

// testSettingSQL reads synchronous_commit for wtx.testSetting.
const testSettingSQL = `SELECT current_setting('synchronous_commit')`

// commitDirect is commit on the direct path: BEGIN when not yet sent, the
// queued writes, the lazy setting, the test's reading and COMMIT, in that
// order and in one round trip, as commit sends them through pgx. A
// transaction marked implicit and not yet begun sends neither BEGIN nor
// COMMIT: its statements and the one Sync after them are the whole
// transaction, which the server runs as one (at the session's isolation
// level), commits at the Sync and rolls back whole at any error. handled
// is false, and nothing was sent, when a queued write wants its result
// read back or the connection holds too many prepared statements: the
// caller then sends the round trip through pgx.
func (t *wtx) commitDirect(ctx context.Context) (handled bool, err error) {
	for _, q := range t.pending {
		if q.Fn != nil {
			return false, nil
		}
	}
	pc := t.conn.Conn().PgConn()
	d := directOf(pc)
	implicit := t.implicit && !t.begun
	lazy := t.lazy && !t.lazySent
	var sqlBuf [8]string // a tick's statements, on the stack
	sqls := sqlBuf[:0]
	if !t.begun && !implicit {
		sqls = append(sqls, t.begin())
	}
	for _, q := range t.pending {
		sqls = append(sqls, q.SQL)
	}
	if lazy {
		sqls = append(sqls, lazySQL)
	}
	if testSent != nil {
		// A copy: handing the tests sqls itself would move sqlBuf to the
		// heap at every commit.
		testSent(slices.Clone(sqls))
	}
	test := -1
	if t.testSetting != nil {
		test = len(sqls)
		sqls = append(sqls, testSettingSQL)
	}
	if !implicit {
		sqls = append(sqls, `COMMIT`)
	}

	var missing []string
	for _, sql := range sqls {
		if d.stmts[sql] == nil && !containsString(missing, sql) {
			missing = append(missing, sql)
		}
	}
	if len(d.stmts)+len(missing) > maxDirect {
		return false, nil
	}
	if len(missing) > 0 {
		// Nothing of the transaction has been sent in this round trip
		// yet: a failure leaves COMMIT unsent.
		if err := d.prepare(ctx, pc, missing); err != nil {
			d.forgetOnError(err)
			return true, err
		}
	}

	// Every parameter is encoded before anything is sent, so that an
	// encoding failure sends nothing.
	d.reset()
	defer d.reset()
	m := t.conn.Conn().TypeMap()
	var endBuf [8]int
	ends := endBuf[:0] // each statement's last parameter's end in d.spans
	if len(sqls) <= len(endBuf) {
		ends = endBuf[:len(sqls)]
	} else {
		ends = make([]int, len(sqls))
	}
	off := 0
	if !t.begun && !implicit {
		off = 1
	}
	for i, q := range t.pending {
		if err := d.encode(m, d.stmts[q.SQL].ParamOIDs, q.Arguments); err != nil {
			return true, err
		}
		ends[off+i] = len(d.spans)
	}
	for i := off + len(t.pending); i < len(sqls); i++ {
		ends[i] = len(d.spans)
	}

	queued := len(t.pending)
	t.begun, t.pending = true, nil
	t.commitSent = true
	d.handWriteBuffer(pc, messagesSize(len(d.buf), len(d.spans), len(sqls)))
	if implicit && len(sqls) == 1 && testAfterSync == nil {
		return t.execOne(ctx, pc, d, sqls[0], ends[0])
	}
	p := pc.StartPipeline(ctx)
	from := 0
	for i, sql := range sqls {
		vals, fmts := d.params(from, ends[i])
		from = ends[i]
		p.SendQueryStatement(d.stmts[sql], vals, fmts, nil)
	}
	if err := p.Sync(); err == nil && testAfterSync != nil {
		testAfterSync(pc)
	} else if err != nil {
		// The pipeline never left this process, or left it only in
		// part: as commit judges it.
		if pgconn.SafeToRetry(err) {
			t.commitSent = false
		}
		return true, err
	}
	reached := false // COMMIT's answer was awaited
	var tag pgconn.CommandTag
	for i := range sqls {
		reached = i == len(sqls)-1 && !implicit
		res, err := p.GetResults()
		if err == nil {
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				err = fmt.Errorf("unexpected pipeline result %T", res)
			} else {
				var v string
				if i == test && rr.NextRow() && len(rr.Values()) > 0 {
					v = string(rr.Values()[0])
				}
				tag, err = rr.Close()
				if i == test && err == nil {
					t.testSetting(v)
				}
			}
		}
		if err != nil {
			p.Close()
			d.forgetOnError(err)
			var pe *pgconn.PgError
			if !reached && (errors.As(err, &pe) || pgconn.SafeToRetry(err)) {
				// An error the server sent for a statement aborts the
				// transaction, an implicit one whole: nothing of it
				// was written.
				t.commitSent = false
			}
			if pe != nil && i >= off && i < off+queued {
				t.failed = i - off + 1
			}
			return true, err
		}
	}
	if err := p.Close(); err != nil {
		// An implicit transaction commits at the Sync: an error the
		// server sent there rolled it back; a connection lost while its
		// answer was awaited leaves the outcome unknown.
		var pe *pgconn.PgError
		if implicit && errors.As(err, &pe) {
			t.commitSent = false
		}
		return true, err
	}
	if implicit {
		t.done = true
		return true, nil
	}
	if tag.String() != "COMMIT" {
		// The server answers COMMIT of a failed transaction with ROLLBACK.
		return true, fmt.Errorf("%w (%s)", errRolledBack, tag)
	}
	t.done = true
	return true, nil
}

// execOne sends an implicit transaction of one statement (the one-round-
// trip tick whose fence is folded into its appended statement) through the
// connection's own exchange for one prepared statement: the Bind, Execute
// and Sync the pipeline would send, the same answers read, without the
// pipeline's records of each request (ten allocations a round trip
// fewer). As in the pipeline, an error the server sent, for the statement
// or at the Sync's commit, rolled the whole back; a connection lost once
// the messages were sent leaves the outcome unknown.
func (t *wtx) execOne(ctx context.Context, pc *pgconn.PgConn, d *directConn, sql string, end int) (bool, error) {
	vals, fmts := d.params(0, end)
	_, err := pc.ExecStatement(ctx, d.stmts[sql], vals, fmts, nil).Close()
	if err != nil {
		d.forgetOnError(err)
		var pe *pgconn.PgError
		if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
			t.commitSent = false
		}
		if pe != nil {
			t.failed = 1
		}
		return true, err
	}
	t.done = true
	return true, nil
}

// testAfterSync, when set (by this package's tests, which do not run in
// parallel), is called once a direct commit's pipeline has been sent,
// before its answers are read.
var testAfterSync func(*pgconn.PgConn)

// testSent, when set (by this package's tests, which do not run in
// parallel), is told the statements of each direct commit as it starts:
// BEGIN when it sends it, the queued writes and the lazy setting (not the
// tests' reading of the setting, nor COMMIT).
var testSent func(sqls []string)

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
