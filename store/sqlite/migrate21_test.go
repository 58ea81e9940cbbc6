package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// A database at schema version 20 holding notices migrates to version
// 21, which keeps the routes each notice reached: every notice is kept,
// as it was, reached by none, and a retry then keeps its routes.
func TestMigrateNoticesToVersion21(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v20.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 20)
	execOn(t, db)(`INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, last_error)
VALUES ('r/3/0/approval_waiting', 'r', 3, 'approval_waiting', CAST('{"kind":"approval_waiting"}' AS BLOB), 1, 2, 0, 'the receiver answered 503')`)
	db.Close()
	st, _ := openMigrated(t, path, 21)
	got, err := st.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %+v (%v)", got, err)
	}
	if n := got[0]; n.ID != "r/3/0/approval_waiting" || n.Attempts != 3 || n.LastError != "the receiver answered 503" || n.Sent != nil ||
		string(n.Body) != `{"kind":"approval_waiting"}` {
		t.Fatalf("after the migration the notice is %+v", n)
	}
	if err := st.NoticeRetry(ctx, got[0].ID, "a", "route pager: down", []string{"chat"}, []store.RouteWait{{Route: "pager", Failures: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, err = st.ClaimNotices(ctx, "a", time.Minute, 10); err != nil || len(got) != 1 || !slices.Equal(got[0].Sent, []string{"chat"}) {
		t.Fatalf("after a retry claimed %+v (%v)", got, err)
	}
}
