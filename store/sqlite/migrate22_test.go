package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// A database at schema version 21 holding a notice part-delivered
// migrates to version 22, which keeps each route's wait: the notice is
// kept as it was, no route waiting, and a retry then keeps each route's
// wait.
func TestMigrateNoticesToVersion22(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v21.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 21)
	execOn(t, db)(`INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, last_error, sent)
VALUES ('r/3/0/approval_waiting', 'r', 3, 'approval_waiting', CAST('{"kind":"approval_waiting"}' AS BLOB), 1, 2, 0, 'route pager: down', 'chat')`)
	db.Close()
	st, _ := openMigrated(t, path, 22)
	got, err := st.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %+v (%v)", got, err)
	}
	if n := got[0]; n.ID != "r/3/0/approval_waiting" || n.Attempts != 3 || !slices.Equal(n.Sent, []string{"chat"}) || n.Waits != nil {
		t.Fatalf("after the migration the notice is %+v", n)
	}
	if err := st.NoticeRetry(ctx, got[0].ID, "a", "route pager: down", []string{"chat"},
		[]store.RouteWait{{Route: "pager", After: time.Hour}, {Route: "mail"}}); err != nil {
		t.Fatal(err)
	}
	got, err = st.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 || len(got[0].Waits) != 1 || got[0].Waits[0].Route != "pager" ||
		got[0].Waits[0].After <= 59*time.Minute || got[0].Waits[0].After > time.Hour {
		t.Fatalf("after a retry claimed %+v (%v)", got, err)
	}
}
