package withrunner

import (
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/storetest"
)

// A schema at version 28 holding a notice migrates to version 29, which
// keeps the routes each notice reached: the notice is kept as it was,
// reached by none, and a retry then keeps its routes.
func TestMigrateNoticesToVersion29(t *testing.T) {
	schema := freshSchema(t)
	openNamed(t, schema, "flrh-migrate28-old", postgres.Options{}).Close()
	execInSchema(t, schema, `
ALTER TABLE notices DROP COLUMN sent, DROP COLUMN waits;
DELETE FROM schema_migrations WHERE version > 28;
INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, holder, held_until, last_error)
VALUES ('r/3/0/approval_waiting', 'r', 3, 'approval_waiting', '{"kind":"approval_waiting"}'::bytea, 1, 2, 0, '', 0, 'the receiver answered 503');`)
	st := openNamed(t, schema, "flrh-migrate28", postgres.Options{})
	migratedTo(t, st, 29)
	got, err := st.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %+v (%v)", got, err)
	}
	if n := got[0]; n.ID != "r/3/0/approval_waiting" || n.Attempts != 3 || n.LastError != "the receiver answered 503" || n.Sent != nil ||
		string(n.Body) != `{"kind":"approval_waiting"}` {
		t.Fatalf("after the migration the notice is %+v", n)
	}
	must(t, st.NoticeRetry(ctx, got[0].ID, "a", "route pager: down", []string{"chat"}, []store.RouteWait{{Route: "pager", Failures: 1}}))
	if got, err = st.ClaimNotices(ctx, "a", time.Minute, 10); err != nil || len(got) != 1 || !slices.Equal(got[0].Sent, []string{"chat"}) {
		t.Fatalf("after a retry claimed %+v (%v)", got, err)
	}
}

// A schema at version 29 holding a notice part-delivered migrates to
// version 30, which keeps each route's wait.
func TestMigrateNoticesToVersion30(t *testing.T) {
	schema := freshSchema(t)
	openNamed(t, schema, "flrh-migrate29-old", postgres.Options{}).Close()
	execInSchema(t, schema, `
ALTER TABLE notices DROP COLUMN waits;
DELETE FROM schema_migrations WHERE version > 29;
INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, holder, held_until, last_error, sent)
VALUES ('r/3/0/approval_waiting', 'r', 3, 'approval_waiting', '{"kind":"approval_waiting"}'::bytea, 1, 2, 0, '', 0, 'route pager: down', 'chat');`)
	st := openNamed(t, schema, "flrh-migrate29", postgres.Options{})
	migratedTo(t, st, 30)
	storetest.MigratedWaits(t, st)
}
