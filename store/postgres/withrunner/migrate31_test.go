package withrunner

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/storetest"
)

// A schema at version 30 with a shared limit's slot held and a rate
// booked migrates to version 31, which keeps the bound each request
// declared.
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
	storetest.MigratedLimits(t, st)
}
