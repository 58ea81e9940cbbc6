package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A database at schema version 22 with a shared limit's slot held and a
// rate booked migrates to version 23, which keeps the bound each request
// declared: the slot stays held, counted, under no recorded bound (it
// binds no one), and takes after it record theirs.
func TestMigrateSharedLimitsToVersion23(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v22.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 22)
	far := time.Now().Add(time.Hour).UnixNano()
	execOn(t, db)(`INSERT INTO limit_slots (name, slot, holder, held_until) VALUES ('pay', 0, 'old', ?)`, far)
	execOn(t, db)(`INSERT INTO limit_rates (name, arrival) VALUES ('lookups', ?)`, far)
	db.Close()
	st, _ := openMigrated(t, path, 23)
	uses, err := st.LimitsInUse(ctx)
	if err != nil || len(uses) != 2 || uses[1].Name != "pay" || len(uses[1].Held) != 1 || uses[1].Held[0].Holder != "old" ||
		uses[1].Held[0].Bound != 0 || uses[1].Bounds != nil || uses[0].PerSecond != 0 {
		t.Fatalf("after the migration in use: %+v (%v)", uses, err)
	}
	if slot, ok, err := st.TakeSlot(ctx, "pay", 2, "new", time.Minute, 0); err != nil || !ok || slot != 1 {
		t.Fatalf("took slot %d, %v (%v)", slot, ok, err)
	}
	if _, ok, err := st.TakeSlot(ctx, "pay", 3, "more", time.Minute, 0); err != nil || ok {
		t.Fatalf("a third request taken (%v) while two were open under a bound of two", err)
	}
	uses, err = st.LimitsInUse(ctx)
	if err != nil || !slices.Equal(uses[1].Bounds, []int{2}) {
		t.Fatalf("in use: %+v (%v)", uses, err)
	}
}
