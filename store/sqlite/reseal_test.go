package sqlite

import (
	"context"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A checkpoint's body and a trace row's records may change only while
// resealing names the run, and nothing else of either row even then:
// outside a pass they are append-only for SQL written by hand too.
func TestResealingOpensBodiesAlone(t *testing.T) {
	ctx := context.Background()
	s := open(t, time.Now).(*Store)
	defer s.Close()
	body := []byte(`{"a":1}`)
	cp := store.Checkpoint{Seq: 1, FormatVersion: 1, BuildDigest: "b", Body: body, Digest: store.BodyDigest(body)}
	if err := s.Commit(ctx, leasedRun(t, s), store.Tick{Events: []store.Event{storetest.Ev("A", `{}`)}, Checkpoint: &cp,
		Trace: []store.TraceRecord{{Kind: "k", Body: []byte(`{"t":1}`)}}}); err != nil {
		t.Fatal(err)
	}
	bodies := []string{`UPDATE checkpoints SET body = x'00' WHERE run_id = 'r'`, `UPDATE trace SET records = x'00' WHERE run_id = 'r'`}
	for _, q := range bodies {
		if _, err := s.DB().Exec(q); err == nil {
			t.Errorf("outside a pass: %s succeeded", q)
		}
	}
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT INTO resealing (run_id, started_at) VALUES ('r', 1)`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE checkpoints SET digest = 'x' WHERE run_id = 'r'`, `UPDATE checkpoints SET n = 2 WHERE run_id = 'r'`,
		`UPDATE trace SET seq = 5 WHERE run_id = 'r'`, `UPDATE trace SET recorded_at = 0 WHERE run_id = 'r'`, `DELETE FROM trace WHERE run_id = 'r'`} {
		if _, err := tx.Exec(q); err == nil {
			t.Errorf("during a pass: %s succeeded", q)
		}
	}
	for _, q := range bodies {
		if _, err := tx.Exec(q); err != nil {
			t.Errorf("during a pass: %s: %v", q, err)
		}
	}
}
