package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// The reads of a run's intents find them through intents_by_run (the run
// and, as in every index, the rowid, which is the commit order since
// schema version 8), in commit order without a sort; a commit's lookups
// of an intent by id or idempotency key use their unique indexes; and no
// plan scans a whole table.
func TestIntentReadsUseTheirIndexes(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		query string
		args  []any
		want  []string
	}{
		{`SELECT i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts
FROM intents i JOIN outbox o ON o.intent_id = i.intent_id WHERE i.run_id = ? ORDER BY i.commit_order`, []any{"r"}, []string{"intents_by_run (run_id=?)"}},
		{`SELECT a.intent_id, a.n FROM intents i JOIN attempts a ON a.intent_id = i.intent_id WHERE i.run_id = ? ORDER BY a.intent_id, a.n`, []any{"r"}, []string{"intents_by_run (run_id=?)"}},
		{`SELECT content_digest FROM intents WHERE idempotency_key = ?`, []any{"k"}, []string{"sqlite_autoindex_intents_2 (idempotency_key=?)"}},
		{`SELECT o.status FROM outbox o JOIN intents i ON i.intent_id = o.intent_id WHERE o.intent_id = ? AND i.run_id = ?`, []any{"i", "r"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)"}},
		{finishAttempt, []any{"succeeded", "", 1, "i", 1, "i", "r"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)"}},
		{recordAllQuery, []any{"r"}, []string{"intents_by_run (run_id=?)"}},
	} {
		plan := queryPlan(t, s.db, c.query, c.args...)
		text := strings.Join(plan, "\n")
		for _, want := range c.want {
			if !strings.Contains(text, want) {
				t.Errorf("plan of %.60q lacks %q:\n%s", c.query, want, text)
			}
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "(subquery") {
				t.Errorf("plan of %.60q scans a whole table (%s):\n%s", c.query, step, text)
			}
		}
		if strings.HasPrefix(c.query, "SELECT i.intent_id") && strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("plan of a run's intents sorts them:\n%s", text)
		}
	}
}

// A migration run with foreign keys off (version 8 rebuilds intents)
// leaves no connection without them: the writing connection, which the
// store opens after migrating, and the pool's enforce them.
func TestMigrationLeavesForeignKeysOn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, m := range append(migrations[:7:7], `PRAGMA user_version = 7`) {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var writer int64 = -1
	if err := s.withWriter(ctx, func(tx *wtx) {
		if err := s.queryRow(ctx, tx, `PRAGMA foreign_keys`).Scan(&writer); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if writer != 1 {
		t.Fatalf("the writing connection has foreign_keys %d after migration", writer)
	}
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var on int64
		if err := c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || on != 1 {
			t.Fatalf("a pooled connection has foreign_keys %d (%v) after migration", on, err)
		}
	}
}
