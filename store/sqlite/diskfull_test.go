package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/internal/smallfs"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// The disk under the database and its log fills for real (a small tmpfs,
// the kernel's ENOSPC): storetest.DiskFull's promises hold, SQLite's
// report is SQLITE_FULL, and the file reopens with what was committed and
// passes SQLite's integrity check.
func TestDiskFullLeavesNothingHalfWritten(t *testing.T) {
	ctx := context.Background()
	dir := smallfs.Mount(t, 8<<20, 0, 0)
	path := filepath.Join(dir, "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.DiskFull(t, s, storetest.DiskFullDisk{
		Cut: func() {
			var fs syscall.Statfs_t
			if err := syscall.Statfs(dir, &fs); err != nil {
				t.Fatal(err)
			}
			smallfs.Resize(t, dir, int64(fs.Blocks-fs.Bfree)*fs.Bsize+512<<10, 0, 0)
		},
		Free: func() { smallfs.Resize(t, dir, 64<<20, 0, 0) },
		Cause: func(err error) bool {
			code, ok := sqliteCode(err)
			return ok && code&0xff == sqlite3.SQLITE_FULL
		},
		Reopen: func() store.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(ctx, path, Options{}); err != nil {
				t.Fatalf("reopening after the full disk: %v", err)
			}
			var check string
			if err := s.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
				t.Fatalf("integrity_check after the full disk: %q, %v", check, err)
			}
			return s
		},
	})
}

// A backup to a disk that fills, and a restore onto one, fail saying so
// and leave nothing behind: no backup and no partial file; the store
// restored onto as it was, where it was, and nothing set aside.
func TestBackupAndRestoreOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	small := smallfs.Mount(t, 640<<10, 0, 0)
	c := storetest.NewClock()
	big, err := Open(ctx, filepath.Join(t.TempDir(), "big.db"), Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	for i := range 250 {
		storetest.EndedWithEverything(t, big, c, fmt.Sprintf("run-%04d", i))
	}
	dest := filepath.Join(small, "backup.db")
	_, err = big.Backup(ctx, dest, BackupOptions{})
	if store.CodeOf(err) != store.CodeUnavailable || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a backup to a full disk: %v", err)
	}
	if left, _ := os.ReadDir(small); len(left) != 0 {
		t.Fatalf("a backup to a full disk left %v", left)
	}

	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := big.Backup(ctx, backup, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(small, "flrh.db")
	s, err := Open(ctx, path, Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	storetest.EndedWithEverything(t, s, c, "small")
	want := tableRows(t, s.DB())
	s.Close()
	_, err = Restore(ctx, backup, path, RestoreOptions{})
	if store.CodeOf(err) != store.CodeUnavailable || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "the store is as it was") {
		t.Fatalf("a restore onto a full disk: %v", err)
	}
	left, _ := os.ReadDir(small)
	if len(left) != 1 || left[0].Name() != "flrh.db" {
		t.Fatalf("a restore onto a full disk left %v", left)
	}
	if got := rowsAt(t, path); !reflect.DeepEqual(got, want) {
		t.Fatal("a restore onto a full disk changed the store")
	}
}
