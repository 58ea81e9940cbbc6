package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// A row read inside a write transaction scans as database/sql's Row.Scan
// scans the same row: the same values, and an error where it errs, for
// every type of column value and every kind of destination the store
// scans into.
func TestWriterScanMatchesDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	if _, err := s.db.Exec(`CREATE TABLE probe (id INTEGER PRIMARY KEY, v ANY)`); err != nil {
		t.Fatal(err)
	}
	values := []any{"text", "", "42", "1", "true", "0", int64(0), int64(1), int64(2), int64(-7), int64(1 << 40),
		[]byte{}, []byte("bytes"), []byte{0xff, 0}, nil, 1.5, "é"}
	for i, v := range values {
		if _, err := s.db.Exec(`INSERT INTO probe (id, v) VALUES (?, ?)`, i, v); err != nil {
			t.Fatal(err)
		}
	}
	dests := []func() any{
		func() any { return new(string) },
		func() any { return new(int64) },
		func() any { return new(int) },
		func() any { return new(bool) },
		func() any { return new([]byte) },
		func() any { return new(any) },
		func() any { return new(float64) }, // not one the store uses: refused, never guessed
	}
	deref := func(d any) any { return reflect.ValueOf(d).Elem().Interface() }
	for i, v := range values {
		for j, mk := range dests {
			want, got := mk(), mk()
			wantErr := s.db.QueryRowContext(ctx, `SELECT v FROM probe WHERE id = ?`, i).Scan(want)
			var gotErr error
			if err := s.withWriter(ctx, func(tx *wtx) {
				gotErr = s.queryRow(ctx, tx, `SELECT v FROM probe WHERE id = ?`, i).Scan(got)
			}); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%#v into %T", v, want)
			if j == len(dests)-1 {
				if gotErr == nil {
					t.Errorf("%s: scanned, want a refusal", name)
				}
				continue
			}
			if (gotErr != nil) != (wantErr != nil) {
				t.Errorf("%s: error %v, database/sql's %v", name, gotErr, wantErr)
				continue
			}
			if gotErr == nil && !reflect.DeepEqual(deref(got), deref(want)) {
				t.Errorf("%s: %#v, database/sql read %#v", name, deref(got), deref(want))
			}
		}
	}
	// No row is sql.ErrNoRows, as the store's callers test for.
	var n int64
	var err error
	s.withWriter(ctx, func(tx *wtx) {
		err = s.queryRow(ctx, tx, `SELECT id FROM probe WHERE id = -1`).Scan(&n)
	})
	if err != sql.ErrNoRows {
		t.Fatalf("no row: %v, want sql.ErrNoRows", err)
	}
	// Columns and destinations must agree in number.
	s.withWriter(ctx, func(tx *wtx) {
		err = s.queryRow(ctx, tx, `SELECT id, v FROM probe WHERE id = 0`).Scan(&n)
	})
	if err == nil {
		t.Fatal("two columns scanned into one destination")
	}
}

// Arguments are converted as database/sql converts them: a named type, an
// int land as their driver values. A driver.Valuer, which the store never
// binds (its Value would be called on what the caller holds), is refused.
func TestWriterBindMatchesDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	if _, err := s.db.Exec(`CREATE TABLE probe (id INTEGER PRIMARY KEY, v ANY)`); err != nil {
		t.Fatal(err)
	}
	type named string
	args := []any{named("n"), int(3), int32(-4), uint16(5), true, sql.NullString{String: "x", Valid: true}, sql.NullInt64{}, []byte("b"), 2.5}
	for i, a := range args {
		if _, err := s.db.Exec(`INSERT INTO probe (id, v) VALUES (?, ?)`, i, a); err != nil {
			t.Fatal(err)
		}
		var err error
		s.withWriter(ctx, func(tx *wtx) {
			_, err = s.exec(ctx, tx, `INSERT INTO probe (id, v) VALUES (?, ?)`, 100+i, a)
		})
		if _, valuer := a.(driver.Valuer); valuer {
			if err == nil {
				t.Errorf("%#v: a Valuer was bound", a)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%#v: %v", a, err)
		}
		var want, got any
		var wantType, gotType string
		if err := s.db.QueryRow(`SELECT v, typeof(v) FROM probe WHERE id = ?`, i).Scan(&want, &wantType); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRow(`SELECT v, typeof(v) FROM probe WHERE id = ?`, 100+i).Scan(&got, &gotType); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || gotType != wantType {
			t.Errorf("%#v: stored %#v (%s), database/sql stored %#v (%s)", a, got, gotType, want, wantType)
		}
	}
	var err error
	s.withWriter(ctx, func(tx *wtx) {
		_, err = s.exec(ctx, tx, `INSERT INTO probe (id, v) VALUES (?, ?)`, 999, struct{}{})
	})
	if err == nil {
		t.Fatal("a struct was bound")
	}
}

// Close waits for the batch under way and gives the writing connection
// back; a write after it is refused as unavailable, as writes to a closed
// database were, and none is lost half-done.
func TestWriterClose(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; err == nil; i++ {
			err = s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"})
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; store.CodeOf(err) != store.CodeUnavailable {
		t.Fatalf("a write racing Close: %v, want %s", err, store.CodeUnavailable)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "late", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); store.CodeOf(err) != store.CodeUnavailable {
		t.Fatalf("a write after Close: %v, want %s", err, store.CodeUnavailable)
	}
}
