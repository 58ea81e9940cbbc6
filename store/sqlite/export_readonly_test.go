package sqlite

import (
	"testing"

	sqlite3 "modernc.org/sqlite/lib"
)

// HeldMmapSize is the mmap_size of one of s's held reading connections.
func (s *Store) HeldMmapSize(t testing.TB) int64 {
	t.Helper()
	lc := s.rrecs.take()
	if lc == nil {
		t.Fatal("no held reading connection")
	}
	defer s.rrecs.give(lc)
	st, err := lc.prepare("PRAGMA mmap_size")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite3.Xsqlite3_reset(st.tls, st.p)
	if sqlite3.Xsqlite3_step(st.tls, st.p) != sqlite3.SQLITE_ROW {
		t.Fatal("PRAGMA mmap_size read no row")
	}
	return st.int64(0)
}

// ReadOnlyMmap is the mmap_size a read-only store's connections are
// opened with.
const ReadOnlyMmap = readOnlyMmap
