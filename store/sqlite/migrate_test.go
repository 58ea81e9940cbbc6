package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A database written at schema version 3 (events, trace and checkpoints in
// WITHOUT ROWID tables; receipts ordered by a separate unique index; the
// outbox a rowid table) migrates: every row reads back the same, the chain,
// checkpoint, trace and receipt numbering go on from where they were, and
// the evidence is still append-only.
func TestMigrateFromVersion3(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:3] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
	// Two runs written the way version 3 wrote them.
	var want []store.Event
	for _, run := range []string{"a", "b"} {
		if _, err := db.Exec(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_seq, head_hash, lease_owner, lease_generation, lease_expires_at, created_at, updated_at, created_order)
VALUES (?, 'wf', '1', 'S', 3, '', 'w', 1, ?, 1, 1, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs))`, run, time.Now().Add(time.Hour).UnixNano()); err != nil {
			t.Fatal(err)
		}
		prev := store.GenesisHash
		for seq := int64(1); seq <= 3; seq++ {
			ev := storetest.Ev("E", fmt.Sprintf(`{"run":%q,"seq":%d}`, run, seq))
			next := store.ChainHash(prev, seq, ev.Digest)
			if _, err := db.Exec(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES (?, ?, 'E', ?, ?, ?, ?, 1, ?)`,
				run, seq, ev.Body, ev.Digest, prev, next, seq); err != nil {
				t.Fatal(err)
			}
			if run == "a" {
				want = append(want, store.Event{Seq: seq, Kind: "E", Body: ev.Body, Digest: ev.Digest, PrevHash: prev, ChainHash: next, Generation: 1, RecordedAt: time.Unix(0, seq).UTC()})
			}
			if _, err := db.Exec(`INSERT INTO trace (run_id, seq, kind, body, recorded_at) VALUES (?, ?, 't', ?, ?)`, run, seq, []byte(fmt.Sprintf(`{"t":%d}`, seq)), seq); err != nil {
				t.Fatal(err)
			}
			cp := fmt.Sprintf(`{"cp":%d}`, seq)
			if _, err := db.Exec(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at) VALUES (?, ?, ?, 1, 'b', ?, ?, 1, ?)`,
				run, seq, seq, []byte(cp), store.BodyDigest([]byte(cp)), seq); err != nil {
				t.Fatal(err)
			}
			prev = next
		}
		if _, err := db.Exec(`UPDATE runs SET head_hash = ? WHERE run_id = ?`, prev, run); err != nil {
			t.Fatal(err)
		}
	}
	// An intent of run a, done, with its receipt; one of run b in flight.
	wantIntent := storetest.In("ia", "ka", "a")
	wantIntent.RunID, wantIntent.Seq, wantIntent.Outbox, wantIntent.Attempts = "a", 3, store.OutboxDone, 1
	inB := storetest.In("ib", "kb", "b")
	rcA := store.Receipt{IntentID: "ia", Outcome: "confirmed_success", Body: []byte(`{"receipt":"a"}`)}
	rcA.Digest = store.BodyDigest(rcA.Body)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO intents (intent_id, run_id, seq, commit_order, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES (?, 'a', 3, 1, ?, ?, ?, ?, ?, 1, 1)`,
			[]any{wantIntent.ID, wantIntent.EffectType, wantIntent.IdempotencyKey, wantIntent.ContentDigest, wantIntent.Body, wantIntent.Digest}},
		{`INSERT INTO intents (intent_id, run_id, seq, commit_order, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES (?, 'b', 3, 2, ?, ?, ?, ?, ?, 1, 1)`,
			[]any{inB.ID, inB.EffectType, inB.IdempotencyKey, inB.ContentDigest, inB.Body, inB.Digest}},
		{`INSERT INTO outbox (intent_id, run_id, status, attempts, updated_at) VALUES ('ia', 'a', 'done', 1, 1), ('ib', 'b', 'in_flight', 1, 1)`, nil},
		{`INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ('ia', 1, 'succeeded', 1, 1), ('ib', 1, 'started', 1, 1)`, nil},
		{`INSERT INTO receipts (intent_id, run_id, commit_order, outcome, body, digest, generation, recorded_at) VALUES ('ia', 'a', 1, ?, ?, ?, 1, 1)`,
			[]any{rcA.Outcome, rcA.Body, rcA.Digest}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int64
	s.DB().QueryRow(`PRAGMA user_version`).Scan(&v)
	if v != SchemaVersion || SchemaVersion < 4 {
		t.Fatalf("user_version %d after migration, build writes %d", v, SchemaVersion)
	}
	for _, tb := range []string{"events", "trace", "checkpoints", "receipts"} {
		var sqlText string
		if err := s.DB().QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, tb).Scan(&sqlText); err != nil {
			t.Fatal(err)
		}
		if sqlText == "" || strings.Contains(strings.ToUpper(sqlText), "WITHOUT ROWID") {
			t.Errorf("table %s after migration: %s", tb, sqlText)
		}
	}
	// Since version 9 the outbox and the attempts are keyed by their
	// intent's commit order.
	for _, tb := range []string{"outbox", "attempts"} {
		var key string
		if err := s.DB().QueryRow(`SELECT name FROM pragma_table_info(?) WHERE pk = 1`, tb).Scan(&key); err != nil || key != "intent_order" {
			t.Errorf("%s after migration keyed by %q (%v)", tb, key, err)
		}
	}
	if ins, err := s.Intents(ctx, "a"); err != nil || len(ins) != 1 || !reflect.DeepEqual(ins[0], wantIntent) {
		t.Fatalf("intents after migration:\n got %+v (%v)\nwant %+v", ins, err, wantIntent)
	}
	if rcs, err := s.Receipts(ctx, "a"); err != nil || len(rcs) != 1 || !reflect.DeepEqual(rcs[0], rcA) {
		t.Fatalf("receipts after migration: %+v (%v)", rcs, err)
	}
	// Run b's attempt ends and its receipt is the second in commit order.
	rcB := store.Receipt{IntentID: "ib", Outcome: "confirmed_success", Body: []byte(`{"receipt":"b"}`)}
	rcB.Digest = store.BodyDigest(rcB.Body)
	lb := store.Lease{RunID: "b", Owner: "w", Generation: 1}
	if err := s.Commit(ctx, lb, store.Tick{ExpectHead: 3,
		Results:  []store.AttemptResult{{IntentID: "ib", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
		Receipts: []store.Receipt{rcB}}); err != nil {
		t.Fatal(err)
	}
	if ins, _ := s.Intents(ctx, "b"); len(ins) != 1 || ins[0].Outbox != store.OutboxDone {
		t.Fatalf("run b's intent after its receipt: %+v", ins)
	}
	var order int64
	s.DB().QueryRow(`SELECT commit_order FROM receipts WHERE intent_id = 'ib'`).Scan(&order)
	if rcs, _ := s.Receipts(ctx, "b"); len(rcs) != 1 || !reflect.DeepEqual(rcs[0], rcB) || order != 2 {
		t.Fatalf("run b's receipt %+v at commit order %d, want 2", rcs, order)
	}

	got, err := s.Events(ctx, "a", 0)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("events after migration:\n got %+v (%v)\nwant %+v", got, err, want)
	}
	tr, _ := s.Trace(ctx, "b")
	if len(tr) != 3 || string(tr[2].Body) != `{"t":3}` {
		t.Fatalf("trace after migration: %+v", tr)
	}
	cp, err := s.Checkpoint(ctx, "b")
	if err != nil || cp.Seq != 3 || string(cp.Body) != `{"cp":3}` {
		t.Fatalf("checkpoint after migration: %+v %v", cp, err)
	}
	// The chain goes on; checkpoint and trace numbering too.
	l := store.Lease{RunID: "a", Owner: "w", Generation: 1}
	body := []byte(`{"cp":4}`)
	if err := s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("E", `{"run":"a","seq":4}`)},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)},
		Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`{"t":4}`)}}}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Events(ctx, "a", 3)
	if len(got) != 1 || got[0].Seq != 4 || got[0].PrevHash != want[2].ChainHash {
		t.Fatalf("event after migration: %+v", got)
	}
	if cp, _ := s.Checkpoint(ctx, "a"); cp.Seq != 4 {
		t.Fatalf("checkpoint after the new commit at %d", cp.Seq)
	}
	var n int64
	s.DB().QueryRow(`SELECT n FROM checkpoints WHERE run_id = 'a' ORDER BY n DESC LIMIT 1`).Scan(&n)
	if n != 4 {
		t.Fatalf("checkpoint numbered %d, want 4", n)
	}
	if tr, _ := s.Trace(ctx, "a"); len(tr) != 4 {
		t.Fatalf("%d trace records", len(tr))
	}
	for _, q := range []string{`UPDATE events SET kind = 'X'`, `DELETE FROM events`, `UPDATE trace SET kind = 'X'`, `DELETE FROM trace`, `UPDATE checkpoints SET seq = 9`, `UPDATE receipts SET outcome = 'x'`, `DELETE FROM receipts`} {
		if _, err := s.DB().Exec(q); err == nil {
			t.Errorf("%s succeeded after migration", q)
		}
	}
	// A duplicate key is still refused.
	if _, err := s.DB().Exec(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES ('a', 1, 'E', x'00', '', '', '', 1, 1)`); err == nil {
		t.Error("a second event 1 of run a was accepted")
	}
}
