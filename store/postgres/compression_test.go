package postgres

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// Large values are written lz4-compressed (where the server has lz4) and
// read back byte for byte; a value written pglz-compressed before the
// migration reads back unchanged beside them.
func TestLargeValuesCompressedWithLZ4(t *testing.T) {
	s := openTest(t, Options{})
	var lz4 bool
	must(t, s.pool.QueryRow(ctx, `SELECT count(*) = 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)`).Scan(&lz4))
	if !lz4 {
		t.Skip("this server has no lz4")
	}
	// Every large column of the store compresses with lz4.
	rows, err := s.pool.Query(ctx, `SELECT c.relname || '.' || a.attname, a.attcompression::text FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
AND (SELECT COALESCE(NULLIF(typbasetype, 0), oid) FROM pg_type WHERE oid = a.atttypid) IN ('bytea'::regtype, 'bytea[]'::regtype)`)
	must(t, err)
	got := map[string]string{}
	for rows.Next() {
		var col, method string
		must(t, rows.Scan(&col, &method))
		got[col] = method
	}
	must(t, rows.Err())
	for _, col := range []string{"checkpoints.body", "trace.bodies", "events.bodies", "intents.body", "receipts.body", "inbox.body", "approvals.body"} {
		if got[col] != "l" {
			t.Errorf("%s compression %q, want lz4 (l)", col, got[col])
		}
	}

	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	large := func(i int) []byte {
		var b strings.Builder
		b.WriteString(`{"journey":[`)
		for j := range 300 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"at":%d,"step":"refund %d paid","tick":%d}`, j*7919%1000, j, i)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	commit := func(head int64, i int) {
		t.Helper()
		body := large(i)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{{Kind: "k", Body: body, Digest: store.BodyDigest(body)}},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)},
			Trace:      []store.TraceRecord{{Kind: "a", Body: body}, {Kind: "b", Body: []byte(`{}`)}}}))
	}
	// The first tick as a server without the migration writes it.
	for _, q := range []string{`ALTER TABLE checkpoints ALTER COLUMN body SET COMPRESSION pglz`, `ALTER TABLE events ALTER COLUMN bodies SET COMPRESSION pglz`,
		`ALTER TABLE trace ALTER COLUMN bodies SET COMPRESSION pglz`} {
		_, err := s.pool.Exec(ctx, q)
		must(t, err)
	}
	commit(0, 0)
	for _, q := range []string{`ALTER TABLE checkpoints ALTER COLUMN body SET COMPRESSION lz4`, `ALTER TABLE events ALTER COLUMN bodies SET COMPRESSION lz4`,
		`ALTER TABLE trace ALTER COLUMN bodies SET COMPRESSION lz4`} {
		_, err := s.pool.Exec(ctx, q)
		must(t, err)
	}
	commit(1, 1)

	var methods []string
	rows, err = s.pool.Query(ctx, `SELECT COALESCE(pg_column_compression(body), 'none') FROM checkpoints WHERE run_id = 'r' ORDER BY n`)
	must(t, err)
	for rows.Next() {
		var m string
		must(t, rows.Scan(&m))
		methods = append(methods, m)
	}
	must(t, rows.Err())
	if strings.Join(methods, ",") != "pglz,lz4" {
		t.Fatalf("checkpoints compressed with %v, want pglz then lz4", methods)
	}
	var ev string
	must(t, s.pool.QueryRow(ctx, `SELECT COALESCE(pg_column_compression(bodies), 'none') FROM events WHERE run_id = 'r' AND seq = 2`).Scan(&ev))
	if ev != "lz4" {
		t.Fatalf("a large event compressed with %s, want lz4", ev)
	}

	cp, err := s.Checkpoint(ctx, "r")
	must(t, err)
	if !bytes.Equal(cp.Body, large(1)) || cp.Digest != store.BodyDigest(large(1)) {
		t.Fatal("the lz4 checkpoint does not read back as written")
	}
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	tr, err := s.Trace(ctx, "r")
	must(t, err)
	if len(evs) != 2 || len(tr) != 4 {
		t.Fatalf("%d events and %d trace records, want 2 and 4", len(evs), len(tr))
	}
	for i := range 2 {
		if !bytes.Equal(evs[i].Body, large(i)) || !bytes.Equal(tr[2*i].Body, large(i)) || string(tr[2*i+1].Body) != `{}` {
			t.Fatalf("tick %d (%s) does not read back as written", i, []string{"pglz", "lz4"}[i])
		}
	}
}

// A checkpoint or a trace row that fits a page is stored as it is, whole
// in its row; one that does not is still compressed. Both read back byte
// for byte.
func TestRowsUpToAPageStoredWhole(t *testing.T) {
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	small := []byte(`{"journey":"` + strings.Repeat("x", 7000) + `"}`)
	big := []byte(`{"journey":"` + strings.Repeat("x", 9000) + `"}`)
	for i, body := range [][]byte{small, big} {
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)},
			Trace: []store.TraceRecord{{Kind: "k", Body: body}}}))
		cp, err := s.Checkpoint(ctx, "r")
		must(t, err)
		tr, err := s.Trace(ctx, "r")
		must(t, err)
		if !bytes.Equal(cp.Body, body) || len(tr) != i+1 || !bytes.Equal(tr[i].Body, body) {
			t.Fatalf("tick %d does not read back as written", i)
		}
	}
	for _, q := range []string{`SELECT string_agg(COALESCE(pg_column_compression(body), 'none'), ',' ORDER BY n) FROM checkpoints`,
		`SELECT string_agg(COALESCE(pg_column_compression(bodies), 'none'), ',' ORDER BY seq) FROM trace`} {
		var got string
		must(t, s.pool.QueryRow(ctx, q).Scan(&got))
		if got != "none,lz4" && got != "none,pglz" {
			t.Fatalf("%s: %s, want the first stored as it is and the second compressed", q, got)
		}
	}
}
