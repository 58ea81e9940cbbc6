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
// WITHOUT ROWID tables) migrates to rowid tables: every row reads back the
// same, the chain goes on from where it was, and the evidence is still
// append-only.
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
	for _, tb := range []string{"events", "trace", "checkpoints"} {
		var sqlText string
		if err := s.DB().QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, tb).Scan(&sqlText); err != nil {
			t.Fatal(err)
		}
		if sqlText == "" || strings.Contains(strings.ToUpper(sqlText), "WITHOUT ROWID") {
			t.Errorf("table %s after migration: %s", tb, sqlText)
		}
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
	for _, q := range []string{`UPDATE events SET kind = 'X'`, `DELETE FROM events`, `UPDATE trace SET kind = 'X'`, `DELETE FROM trace`, `UPDATE checkpoints SET seq = 9`} {
		if _, err := s.DB().Exec(q); err == nil {
			t.Errorf("%s succeeded after migration", q)
		}
	}
	// A duplicate key is still refused.
	if _, err := s.DB().Exec(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES ('a', 1, 'E', x'00', '', '', '', 1, 1)`); err == nil {
		t.Error("a second event 1 of run a was accepted")
	}
}
