package postgres

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/store"
)

// The key triggers of migration 19 refuse, outside the fence, exactly what
// the foreign keys they replaced refused: one-row inserts into each table
// whose key became a trigger, naming every combination of an existing, a
// missing or a NULL run and intent (an intent of the other run among
// them), go to a copy of the table with its old key and to the table,
// each in a transaction rolled back, and both store the row or both
// refuse it with one SQLSTATE.
func TestKeyTriggersRefuseWhatTheKeysRefused(t *testing.T) {
	s := openTest(t, Options{})
	for _, r := range []string{"r", "q"} {
		must(t, s.CreateRun(ctx, store.Run{ID: r, WorkflowID: "wf", State: "S"}))
	}
	for _, q := range []string{
		`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
VALUES ('ir', 'r', 1, 'e', 'kr', 'c', '\x00', 'd', 1, 0), ('iq', 'q', 1, 'e', 'kq', 'c', '\x00', 'd', 1, 0)`,
		`CREATE TABLE keyed_checkpoints (LIKE checkpoints INCLUDING DEFAULTS, FOREIGN KEY (run_id) REFERENCES runs (run_id))`,
		`CREATE TABLE keyed_intents (LIKE intents INCLUDING DEFAULTS INCLUDING IDENTITY, FOREIGN KEY (run_id) REFERENCES runs (run_id))`,
		`CREATE TABLE keyed_inbox (LIKE inbox INCLUDING DEFAULTS, FOREIGN KEY (run_id) REFERENCES runs (run_id))`,
		`CREATE TABLE keyed_outbox (LIKE outbox INCLUDING DEFAULTS, FOREIGN KEY (intent_id, run_id) REFERENCES keyed_pairs (intent_id, run_id))`,
		`CREATE TABLE keyed_receipts (LIKE receipts INCLUDING DEFAULTS INCLUDING IDENTITY, FOREIGN KEY (intent_id, run_id) REFERENCES keyed_pairs (intent_id, run_id))`,
		`CREATE TABLE keyed_attempts (LIKE attempts INCLUDING DEFAULTS, FOREIGN KEY (intent_id) REFERENCES intents (intent_id))`,
	} {
		if q == `CREATE TABLE keyed_outbox (LIKE outbox INCLUDING DEFAULTS, FOREIGN KEY (intent_id, run_id) REFERENCES keyed_pairs (intent_id, run_id))` {
			// The pair key needs a unique pair to reference, which intents
			// no longer have: a copy of its pairs with one.
			_, err := s.pool.Exec(ctx, `CREATE TABLE keyed_pairs AS SELECT intent_id, run_id FROM intents; ALTER TABLE keyed_pairs ADD UNIQUE (intent_id, run_id)`)
			must(t, err)
		}
		_, err := s.pool.Exec(ctx, q)
		must(t, err)
	}
	seen := map[string]int{}
	for _, run := range []string{"'r'", "'q'", "'gone'", "NULL"} {
		for _, intent := range []string{"'ir'", "'iq'", "'nope'", "NULL"} {
			for _, w := range []struct{ table, rest string }{
				{"checkpoints", fmt.Sprintf(`(run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at) VALUES (%s, 9, 1, 1, 'b', '\x00', 'd', 1, 0)`, run)},
				{"intents", fmt.Sprintf(`(intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES ('new', %s, 1, 'e', 'knew', 'c', '\x00', 'd', 1, 0)`, run)},
				{"inbox", fmt.Sprintf(`(run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at) VALUES (%s, 9, 'in9', 'k', 'a', 'a', 'c', '\x00', 'd', 0)`, run)},
				{"outbox", fmt.Sprintf(`(intent_id, run_id, status, updated_at) VALUES (%s, %s, 'pending', 0)`, intent, run)},
				{"receipts", fmt.Sprintf(`(intent_id, run_id, outcome, body, digest, generation, recorded_at) VALUES (%s, %s, 'o', '\x00', 'd', 1, 0)`, intent, run)},
				{"attempts", fmt.Sprintf(`(intent_id, n, status, generation, started_at) VALUES (%s, 1, 'started', 1, 0)`, intent)},
			} {
				was, is := rolledBackCode(s, "INSERT INTO keyed_"+w.table+" "+w.rest), rolledBackCode(s, "INSERT INTO "+w.table+" "+w.rest)
				if was != is {
					t.Errorf("%s %s: the key %q, the trigger %q", w.table, w.rest, was, is)
				}
				seen[w.table+" "+is]++
			}
		}
	}
	for _, table := range []string{"checkpoints", "intents", "inbox", "outbox", "receipts", "attempts"} {
		if seen[table+" "] == 0 || seen[table+" "+pgForeignKeyViolation] == 0 {
			t.Errorf("%s: %d stored, %d refused by its key: the test proves nothing of it", table, seen[table+" "], seen[table+" "+pgForeignKeyViolation])
		}
	}
}
