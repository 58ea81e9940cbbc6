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
// of an intent by id or idempotency key use their unique indexes; an
// intent's outbox row and attempts are found by its commit order, their
// key since schema version 9, in every read and write of them; and no
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
		{intentsQuery, []any{"r"}, []string{"intents_by_run (run_id=?)", byOrder}},
		{runAttemptsQuery, []any{"r"}, []string{"intents_by_run (run_id=?)", attemptsByOrder}},
		{attemptsQuery, []any{"i"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", attemptsByOrder}},
		{`SELECT content_digest FROM intents WHERE idempotency_key = ?`, []any{"k"}, []string{"sqlite_autoindex_intents_2 (idempotency_key=?)"}},
		{runIntentOutbox, []any{"i", "r"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", byOrder}},
		{runIntentOutboxAttempts, []any{"i", "r"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", byOrder}},
		{finishAttempt, []any{"succeeded", "", 1, "i", "r", 1}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", "SEARCH attempts USING PRIMARY KEY (intent_order=? AND n=?)"}},
		{insertAttempt, []any{"i", "i", 1, 1, 1}, []string{"sqlite_autoindex_intents_1 (intent_id=?)"}},
		{moveOutbox, []any{"done", "", 1, "i"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", "SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)"}},
		{closeOutbox, []any{1, "i"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", "SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)"}},
		{attemptOutbox, []any{1, 1, "i"}, []string{"sqlite_autoindex_intents_1 (intent_id=?)", "SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)"}},
		{recordAllQuery, []any{"r"}, []string{"intents_by_run (run_id=?)", byOrder, attemptsByOrder}},
		{recordBatchAllQuery, recordBatchArgs("r"), []string{"intents_by_run (run_id=?)", byOrder, attemptsByOrder}},
	} {
		plan := queryPlan(t, s.db, c.query, c.args...)
		if len(plan) == 0 {
			t.Errorf("no plan of %.60q", c.query)
		}
		text := strings.Join(plan, "\n")
		for _, want := range c.want {
			if !strings.Contains(text, want) {
				t.Errorf("plan of %.60q lacks %q:\n%s", c.query, want, text)
			}
		}
		for _, step := range plan {
			// The batch's run ids are a table of values, scanned.
			if strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "(subquery") && step != "SCAN b" && step != "SCAN 16 CONSTANT ROWS" {
				t.Errorf("plan of %.60q scans a whole table (%s):\n%s", c.query, step, text)
			}
		}
		if c.query == intentsQuery && strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("plan of a run's intents sorts them:\n%s", text)
		}
	}
}

// The plans' steps that find an intent's outbox row and its attempts by
// the intent's commit order.
const (
	byOrder         = "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"
	attemptsByOrder = "USING PRIMARY KEY (intent_order=?)"
)

// recordBatchArgs are the batch statement's arguments for the runs ids:
// their ids, then NULL up to RecordBatch.
func recordBatchArgs(ids ...string) []any {
	args := make([]any, RecordBatch)
	for i, id := range ids {
		args[i] = id
	}
	return args
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
