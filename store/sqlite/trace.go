package sqlite

import (
	"encoding/binary"
	"fmt"
)

// A tick's trace records are kept in one row (since schema version 6):
// seq and last_seq number its first and last record, and records holds
// them in order, each as its kind and its body (sealed, if a sealer is
// set, exactly as a record of its own would be), each preceded by its
// length in four bytes, big-endian. One row where there were several: a
// tick writes eight trace records or so, and each row costs its own
// b-tree insertion, index entry and foreign-key probe. Rows written
// before version 6 became one-record rows of the same form.

// appendTraceRecord appends one record to a tick's frame.
func appendTraceRecord(frame []byte, kind string, body []byte) []byte {
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(kind)))
	frame = append(frame, kind...)
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
	return append(frame, body...)
}

// traceRecord is one record read out of a frame.
type traceRecord struct {
	kind string
	body []byte
}

// splitTrace reads a frame of n records. A frame that does not hold
// exactly n well-formed records was not written by this store.
func splitTrace(frame []byte, n int64) ([]traceRecord, error) {
	if n < 1 || n > int64(len(frame))/8 {
		return nil, fmt.Errorf("a trace row numbered for %d records in %d bytes", n, len(frame))
	}
	out := make([]traceRecord, 0, n)
	for i := int64(0); i < n; i++ {
		kind, rest, ok := cutTraceField(frame)
		if !ok {
			return nil, fmt.Errorf("trace record %d of %d: kind cut short", i+1, n)
		}
		body, rest, ok := cutTraceField(rest)
		if !ok {
			return nil, fmt.Errorf("trace record %d of %d: body cut short", i+1, n)
		}
		out = append(out, traceRecord{kind: string(kind), body: body})
		frame = rest
	}
	if len(frame) != 0 {
		return nil, fmt.Errorf("%d bytes after the last of %d trace records", len(frame), n)
	}
	return out, nil
}

func cutTraceField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n : 4+n], b[4+n:], true
}
