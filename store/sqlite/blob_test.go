package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestBlobScanMatchesDatabaseSQL holds blob to a *[]byte destination: every
// row's value, kept while later rows are read (which fails if the driver
// ever reuses a returned slice), and every kind of value a column can hold,
// converted the same way.
func TestBlobScanMatchesDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "blob.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (n INTEGER PRIMARY KEY, v)`); err != nil {
		t.Fatal(err)
	}
	values := []any{[]byte("first"), []byte{0, 1, 2, 255}, "text", int64(-42), 2.5, nil, []byte{}, bytes.Repeat([]byte("x"), 5000)}
	for i := range 200 {
		v := values[i%len(values)]
		if b, ok := v.([]byte); ok && len(b) > 0 {
			v = append(append([]byte{}, b...), byte(i)) // distinct bytes per row
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO t (n, v) VALUES (?, ?)`, i, v); err != nil {
			t.Fatal(err)
		}
	}
	read := func(dest func(*[]byte) any) [][]byte {
		rows, err := db.QueryContext(ctx, `SELECT v FROM t ORDER BY n`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out [][]byte
		for rows.Next() {
			var b []byte
			if err := rows.Scan(dest(&b)); err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := read(func(b *[]byte) any { return b })
	got := read(func(b *[]byte) any { return blob{b} })
	if len(got) != 200 || len(want) != 200 {
		t.Fatalf("read %d and %d rows, want 200", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
			t.Fatalf("row %d: blob read %q (nil %v), *[]byte %q (nil %v)", i, got[i], got[i] == nil, want[i], want[i] == nil)
		}
	}
}
