package withrunner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store/postgres"
)

// A schema at version 30 with a shared limit's slot held and a rate
// booked migrates to version 31, which keeps the bound each request
// declared: the slot stays held, counted, under no recorded bound (it
// binds no one), and takes after it record theirs.
func TestMigrateSharedLimitsToVersion31(t *testing.T) {
	schema := freshSchema(t)
	openNamed(t, schema, "flrh-migrate30-old", postgres.Options{}).Close()
	far := time.Now().Add(time.Hour).UnixNano()
	execInSchema(t, schema, fmt.Sprintf(`
ALTER TABLE limit_slots DROP COLUMN bound;
ALTER TABLE limit_queue DROP COLUMN bound;
ALTER TABLE limit_rates DROP COLUMN per_second, DROP COLUMN bound_until;
DELETE FROM schema_migrations WHERE version > 30;
INSERT INTO limit_slots (name, slot, holder, held_until) VALUES ('pay', 0, 'old', %d), ('pay', 1, '', 0), ('pay', 2, '', 0);
INSERT INTO limit_rates (name, arrival) VALUES ('lookups', %d);`, far, far))
	st := openNamed(t, schema, "flrh-migrate30", postgres.Options{})
	migratedTo(t, st, 31)
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
