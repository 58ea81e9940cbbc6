package sqlite_test

import (
	"path/filepath"
	"testing"

	"flrh.dev/flrh/store/storetest"
)

// A database at schema version 21 holding a notice part-delivered
// migrates to version 22, which keeps each route's wait.
func TestMigrateNoticesToVersion22(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v21.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 21)
	execOn(t, db)(`INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, last_error, sent)
VALUES ('r/3/0/approval_waiting', 'r', 3, 'approval_waiting', CAST('{"kind":"approval_waiting"}' AS BLOB), 1, 2, 0, 'route pager: down', 'chat')`)
	db.Close()
	st, _ := openMigrated(t, path, 22)
	storetest.MigratedWaits(t, st)
}
