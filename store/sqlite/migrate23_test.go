package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store/storetest"
)

// A database at schema version 22 with a shared limit's slot held and a
// rate booked migrates to version 23, which keeps the bound each request
// declared.
func TestMigrateSharedLimitsToVersion23(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v22.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 22)
	far := time.Now().Add(time.Hour).UnixNano()
	execOn(t, db)(`INSERT INTO limit_slots (name, slot, holder, held_until) VALUES ('pay', 0, 'old', ?)`, far)
	execOn(t, db)(`INSERT INTO limit_rates (name, arrival) VALUES ('lookups', ?)`, far)
	db.Close()
	st, _ := openMigrated(t, path, 23)
	storetest.MigratedLimits(t, st)
}
