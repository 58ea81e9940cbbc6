package sqlite

import (
	"context"
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
