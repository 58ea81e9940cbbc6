package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A checkpoint's body and a trace row's bodies may change only while
// resealing names the run, and nothing else of either row even then:
// outside a pass they are append-only for SQL written by hand too.
func TestResealingOpensBodiesAlone(t *testing.T) {
	s := openTest(t, Options{})
	l := setupRun(t, s, "r", "rs1")
	must(t, s.Commit(ctx, l, bigTick(0, "rs1", nil)))
	adm := admin(t)
	sch := s.Schema()
	bodies := []string{
		fmt.Sprintf(`UPDATE %s.checkpoints SET body = '\x00' WHERE run_id = 'r'`, sch),
		fmt.Sprintf(`UPDATE %s.trace SET bodies = array_fill('\x00'::bytea, ARRAY[cardinality(bodies)]) WHERE run_id = 'r'`, sch),
	}
	for _, q := range bodies {
		if _, err := adm.Exec(ctx, q); pgCode(err) != pgAppendOnly {
			t.Errorf("outside a pass: %s: err = %v, want the append-only refusal", q, err)
		}
	}
	pass := func(fn func(tx pgx.Tx)) {
		tx, err := adm.Begin(ctx)
		must(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.resealing (run_id, started_at) VALUES ('r', 1)`, sch))
		must(t, err)
		fn(tx)
	}
	for _, q := range []string{
		`UPDATE %s.checkpoints SET digest = 'x' WHERE run_id = 'r'`, `UPDATE %s.checkpoints SET seq = 9 WHERE run_id = 'r'`,
		`UPDATE %s.trace SET recorded_at = 0 WHERE run_id = 'r'`, `UPDATE %s.trace SET kinds = array_fill('x'::text, ARRAY[cardinality(kinds)]) WHERE run_id = 'r'`,
		`UPDATE %s.trace SET bodies = bodies || '\x00'::bytea WHERE run_id = 'r'`, `DELETE FROM %s.trace WHERE run_id = 'r'`,
	} {
		q = fmt.Sprintf(q, sch)
		pass(func(tx pgx.Tx) {
			if _, err := tx.Exec(ctx, q); pgCode(err) != pgAppendOnly {
				t.Errorf("during a pass: %s: err = %v, want the append-only refusal", q, err)
			}
		})
	}
	pass(func(tx pgx.Tx) {
		for _, q := range bodies {
			if _, err := tx.Exec(ctx, q); err != nil {
				t.Errorf("during a pass: %s: %v", q, err)
			}
		}
	})
}
