package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// backedUp makes a store with every kind of run at dir/flrh.db, backs it
// up to dir/backup.db, then starts one more run, and returns the store
// (open), the backup's rows and the rows the store has after the backup.
func backedUp(t *testing.T, dir string) (s *Store, backup string, atBackup, after map[string][]string) {
	t.Helper()
	ctx := context.Background()
	c := storetest.NewClock()
	s = storeWithEveryKindOfRun(t, filepath.Join(dir, "flrh.db"), c, nil)
	backup = filepath.Join(dir, "backup.db")
	if _, err := s.Backup(ctx, backup, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	atBackup = tableRows(t, s.DB())
	if err := s.CreateRun(ctx, store.Run{ID: "later", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	return s, backup, atBackup, tableRows(t, s.DB())
}

func rowsAt(t *testing.T, path string) map[string][]string {
	t.Helper()
	s, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return tableRows(t, s.DB())
}

// Restore puts the backup's rows in the store's place, sets the store it
// replaces aside whole (the run started after the backup is in it), and
// leaves a store that opens for writing, in WAL mode.
func TestRestoreReplacesTheStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, backup, atBackup, after := backedUp(t, dir)
	s.Close()
	path := filepath.Join(dir, "flrh.db")
	now := time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC)
	r, err := Restore(ctx, backup, path, RestoreOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := Restored{Path: path, SchemaVersion: SchemaVersion, Runs: 4, Replaced: path + ReplacedInfix + "20261205T010203.000000004Z"}
	if r != want {
		t.Fatalf("Restore = %+v; want %+v", r, want)
	}
	if got := rowsAt(t, path); !reflect.DeepEqual(got, atBackup) {
		t.Fatal("the restored store does not hold the backup's rows")
	}
	if got := rowsAt(t, r.Replaced); !reflect.DeepEqual(got, after) {
		t.Fatal("the store set aside does not hold what the store held")
	}
	for _, leftover := range []string{path + PartialSuffix, r.Replaced + "-wal"} {
		if _, err := os.Stat(leftover); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", leftover, err)
		}
	}
	s2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.CreateRun(ctx, store.Run{ID: "again", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	if wal, err := inWALMode(path); err != nil || !wal {
		t.Fatalf("the restored store in WAL mode: %v, %v", wal, err)
	}
	if _, err := s2.Run(ctx, "later"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("the run started after the backup, in the restored store: %v", err)
	}
}

// Every refusal says why and changes nothing: the store stays where it
// was, byte for byte.
func TestRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, backup, _, after := backedUp(t, dir)
	path := filepath.Join(dir, "flrh.db")

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	copyOf(t, backup, newer)
	execAt(t, newer, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion+1))
	other := filepath.Join(dir, "other.db")
	if o, err := Open(ctx, other, Options{}); err != nil {
		t.Fatal(err)
	} else {
		defer o.Close()
	}
	damaged := filepath.Join(dir, "damaged.db")
	copyOf(t, backup, damaged)
	damagePage(t, damaged)

	for _, tc := range []struct {
		name, from string
		code       store.Code
		says       string
	}{
		{"no backup", filepath.Join(dir, "none.db"), store.CodeInvalidInput, "no backup at"},
		{"a directory", dir, store.CodeInvalidInput, "not a file"},
		{"the store itself", path, store.CodeInvalidInput, "is the store itself"},
		{"another store", other, store.CodeInvalidInput, "WAL mode"},
		{"not a database", garbage, store.CodeCorrupt, ""},
		{"a damaged page", damaged, store.CodeCorrupt, "integrity check"},
		{"a newer schema", newer, store.CodeSchemaTooNew, "newer than this build's"},
		{"the store open", backup, store.CodeUnavailable, "stop everything that uses it"},
	} {
		_, err := Restore(ctx, tc.from, path, RestoreOptions{})
		if store.CodeOf(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("%s: Restore = %v; want %s saying %q", tc.name, err, tc.code, tc.says)
		}
	}
	if got := tableRows(t, s.DB()); !reflect.DeepEqual(got, after) {
		t.Fatal("a refused restore changed the store")
	}
	if err := s.CreateRun(ctx, store.Run{ID: "still", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatalf("the store after refused restores: %v", err)
	}
	s.Close()
	matches, _ := filepath.Glob(path + ".*")
	if len(matches) != 0 {
		t.Fatalf("refused restores left %v", matches)
	}

	// A log without its database is never joined to the backup's copy.
	lone := filepath.Join(t.TempDir(), "flrh.db")
	if err := os.WriteFile(lone+"-wal", []byte("frames of another database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, backup, lone, RestoreOptions{}); store.CodeOf(err) != store.CodeInvalidInput || !strings.Contains(fmt.Sprint(err), "without its database") {
		t.Fatalf("a log without its database: %v", err)
	}
	if _, err := os.Stat(lone); !os.IsNotExist(err) {
		t.Fatalf("the refused restore wrote %s: %v", lone, err)
	}
}

// A store too damaged to open is set aside as it is, and the backup takes
// its place.
func TestRestoreOverADamagedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, backup, atBackup, _ := backedUp(t, dir)
	s.Close()
	path := filepath.Join(dir, "flrh.db")
	if err := os.WriteFile(path, []byte("ruined by a disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(ctx, backup, path, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(r.Replaced); string(b) != "ruined by a disk" {
		t.Fatalf("the damaged store set aside holds %q", b)
	}
	if got := rowsAt(t, path); !reflect.DeepEqual(got, atBackup) {
		t.Fatal("the restored store does not hold the backup's rows")
	}
}

// Stopped at either cut point (by a panic here, which runs restore's
// deferred clean-up; the CLI tests kill it for real), restore leaves the
// store in its place or set aside whole, and run again it finishes.
func TestRestoreInterrupted(t *testing.T) {
	for _, point := range []string{"restore-set-aside", "restore-written"} {
		t.Run(point, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, backup, atBackup, after := backedUp(t, dir)
			s.Close()
			path := filepath.Join(dir, "flrh.db")
			stop := func(at string) {
				if at == point {
					panic(at)
				}
			}
			func() {
				defer func() {
					if recover() != point {
						t.Fatalf("restore did not reach %s", point)
					}
				}()
				Restore(ctx, backup, path, RestoreOptions{Cut: stop})
			}()
			aside, _ := filepath.Glob(path + ReplacedInfix + "*Z")
			if point == "restore-written" {
				// The copy is whole, the store still in its place.
				if len(aside) != 0 || !reflect.DeepEqual(rowsAt(t, path), after) {
					t.Fatalf("stopped at %s: the store moved (%v) or changed", point, aside)
				}
			} else {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("stopped at %s, the store's path holds a file: %v", point, err)
				}
				if len(aside) != 1 || !reflect.DeepEqual(rowsAt(t, aside[0]), after) {
					t.Fatalf("stopped at %s, the store set aside: %v", point, aside)
				}
			}
			r, err := Restore(ctx, backup, path, RestoreOptions{})
			if err != nil || (r.Replaced != "") != (point == "restore-written") {
				t.Fatalf("restore again: %+v, %v", r, err)
			}
			if got := rowsAt(t, path); !reflect.DeepEqual(got, atBackup) {
				t.Fatal("the restored store does not hold the backup's rows")
			}
		})
	}
}

func copyOf(t *testing.T, from, to string) {
	t.Helper()
	if err := copyFile(from, to); err != nil {
		t.Fatal(err)
	}
}

func execAt(t *testing.T, path, q string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// damagePage overwrites the middle of the root page of the events' b-tree
// in the database at path: a page in use however the file's pages are
// laid out (its last may be free).
func damagePage(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var root, size int64
	err = db.QueryRow(`SELECT (SELECT rootpage FROM sqlite_schema WHERE name = 'events'), (SELECT page_size FROM pragma_page_size)`).Scan(&root, &size)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 512), (root-1)*size+8); err != nil {
		t.Fatal(err)
	}
}
