package sqlite

import (
	"context"
	"path/filepath"
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
