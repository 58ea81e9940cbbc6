package postgres

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// mergedRounds are the ticks of mergedScenario after each run's first:
// round by round, one tick per run, of every shape a merged group takes.
func mergedRounds(runs int) [][]store.Tick {
	cp := func(s string) *store.Checkpoint {
		b := []byte(s)
		return &store.Checkpoint{FormatVersion: 1, BuildDigest: "sha256:build", Body: b, Digest: store.BodyDigest(b)}
	}
	rounds := make([][]store.Tick, 3)
	for i := 0; i < runs; i++ {
		run := fmt.Sprintf("m%d", i)
		id := "i-" + run
		in := storetest.In(id, "key-"+run, "refund "+run)
		if i == 1 {
			in.ApprovalID = "" // no approval either way
		}
		// Round 1: an intent (begun but on run m1), the run's own input
		// appended consumed, events, a checkpoint, two trace records, an
		// empty inbox expected.
		t1 := store.Tick{ExpectHead: 1, State: "EXECUTE",
			Events:           []store.Event{storetest.Ev("PLAN", fmt.Sprintf(`{"r":%d}`, i)), storetest.Ev("ACT", `{}`)},
			Intents:          []store.Intent{in},
			Submit:           []store.Inbound{storetest.Inb(run, "in-"+run, "INPUT", fmt.Sprintf(`{"x":%d}`, i))},
			Consume:          []string{"in-" + run},
			Checkpoint:       cp(fmt.Sprintf(`{"c":%d}`, i)),
			Trace:            []store.TraceRecord{{Kind: "tick", Body: []byte(`{"a":1}`)}, {Kind: "note", Body: []byte(`{"b":2}`)}},
			ExpectInboxEmpty: true}
		if i != 1 {
			t1.Begin = []string{id}
		}
		// Round 2: the begun attempt's result with its receipt (m1: events
		// and a state only), a trace record, no checkpoint.
		t2 := store.Tick{ExpectHead: 3, State: "OBSERVE",
			Events: []store.Event{storetest.Ev("OBS", fmt.Sprintf(`{"r":%d}`, i))},
			Trace:  []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}
		if i != 1 {
			body := []byte(fmt.Sprintf(`{"receipt":%q}`, id))
			t2.Results = []store.AttemptResult{{IntentID: id, N: 1, Status: store.AttemptSucceeded, Detail: "ok", Outbox: store.OutboxDone, Route: "http"}}
			t2.Receipts = []store.Receipt{{IntentID: id, Outcome: "confirmed_success", Body: body, Digest: store.BodyDigest(body)}}
		}
		// Round 3: a checkpoint; every other run ends.
		t3 := store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("END", `{}`)}, Checkpoint: cp(`{"end":true}`)}
		if i%2 == 0 {
			t3.Outcome = "SUCCEEDED"
		}
		// Each tick gives its run a due time of its own (round 2 on m1
		// none), which every way of committing it records.
		t1.DueAt = time.Date(2031, 1, 1, 0, 0, i, 1, time.UTC)
		if i != 1 {
			t2.DueAt = time.Date(2031, 1, 2, 0, 0, i, 2, time.UTC)
		}
		t3.DueAt = time.Date(2031, 1, 3, 0, 0, i, 3, time.UTC)
		rounds[0] = append(rounds[0], t1)
		rounds[1] = append(rounds[1], t2)
		rounds[2] = append(rounds[2], t3)
	}
	return rounds
}

// mergedScenario commits mergedRounds on s, each round's ticks at once
// (in groups, when s groups them) or one by one.
func mergedScenario(t *testing.T, s *Store, runs int, concurrent bool) {
	t.Helper()
	leases := make([]store.Lease, runs)
	for i := range leases {
		run := fmt.Sprintf("m%d", i)
		must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
		l, err := s.AcquireLease(ctx, run, "w", time.Hour)
		must(t, err)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}}))
		leases[i] = l
	}
	for _, round := range mergedRounds(runs) {
		var wg sync.WaitGroup
		for i, tick := range round {
			if !concurrent {
				must(t, s.Commit(ctx, leases[i], tick))
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); must(t, s.Commit(ctx, leases[i], tick)) }()
		}
		wg.Wait()
		for i, tick := range round {
			r, err := s.Run(ctx, leases[i].RunID)
			must(t, err)
			if !r.DueAt.Equal(tick.DueAt) {
				t.Fatalf("%s due at %v after its tick, want %v", r.ID, r.DueAt, tick.DueAt)
			}
		}
	}
}

// tableRows returns every row of the schema's tables as JSON, sorted,
// without the columns that hold times (named *_at): what a tick wrote,
// whatever the clock read.
func tableRows(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	var out []string
	for _, table := range []string{"runs", "events", "intents", "outbox", "attempts", "receipts", "checkpoints", "trace", "inbox"} {
		rows, err := conn.Query(ctx, `SELECT (SELECT jsonb_object_agg(k, v) FROM jsonb_each(to_jsonb(t)) AS e(k, v) WHERE k NOT LIKE '%\_at' AND k <> 'commit_order')::text AS r
FROM `+pgx.Identifier{schema, table}.Sanitize()+` t ORDER BY r`)
		must(t, err)
		for rows.Next() {
			var r string
			must(t, rows.Scan(&r))
			out = append(out, table+" "+r)
		}
		must(t, rows.Err())
	}
	return out
}

// The same ticks committed in merged groups and one by one leave the same
// rows, and each row of a merged group carries its own tick's time: the
// time its run's header took at that tick (the time of the tick's events).
func TestMergedGroupsLeaveTheRowsTicksAloneLeave(t *testing.T) {
	const runs = 5
	alone := openTest(t, Options{})
	mergedScenario(t, alone, runs, false)

	s := openTest(t, Options{CommitGroups: 1})
	s.testGroupWait = runs - 1
	var mu sync.Mutex
	var merged []string
	s.testMerged = func(n int, ok bool) { mu.Lock(); merged = append(merged, fmt.Sprintf("%d:%v", n, ok)); mu.Unlock() }
	mergedScenario(t, s, runs, true)
	mu.Lock()
	// Each round in one merged group.
	if got := strings.Join(merged, " "); got != "5:true 5:true 5:true" {
		t.Fatalf("merged groups %v, want three of five committed", merged)
	}
	mu.Unlock()

	conn := admin(t)
	want, got := tableRows(t, conn, alone.Schema()), tableRows(t, conn, s.Schema())
	if len(want) != len(got) {
		t.Fatalf("%d rows alone, %d in merged groups", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("row %d:\n alone  %s\n merged %s", i, want[i], got[i])
		}
	}

	// Times: every row of a tick has the time of that tick's events, and
	// the run's header the time of its last tick.
	q := func(table, seq string) string {
		return `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), table}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND ` + seq + ` BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.recorded_at)`
	}
	for _, c := range []struct{ what, sql string }{
		{"intents", q("intents", "x.seq")},
		{"checkpoints", q("checkpoints", "x.seq")},
		{"inbox", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "inbox"}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND 3 BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.recorded_at)`},
		{"receipts", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "receipts"}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND 4 BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.recorded_at)`},
		{"trace", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "trace"}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND CASE x.seq WHEN 1 THEN 3 ELSE 4 END BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.recorded_at)`},
		{"outbox", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "outbox"}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND CASE x.status WHEN 'done' THEN 4 ELSE 3 END BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.updated_at)`},
		{"attempts", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "attempts"}.Sanitize() + ` x JOIN ` + pgx.Identifier{s.Schema(), "intents"}.Sanitize() +
			` i USING (intent_id) WHERE NOT EXISTS (SELECT 1 FROM ` + pgx.Identifier{s.Schema(), "events"}.Sanitize() +
			` e WHERE e.run_id = i.run_id AND 3 BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.started_at) OR NOT EXISTS (SELECT 1 FROM ` + pgx.Identifier{s.Schema(), "events"}.Sanitize() +
			` e WHERE e.run_id = i.run_id AND 4 BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.finished_at)`},
		{"runs", `SELECT count(*) FROM ` + pgx.Identifier{s.Schema(), "runs"}.Sanitize() + ` x WHERE NOT EXISTS (SELECT 1 FROM ` +
			pgx.Identifier{s.Schema(), "events"}.Sanitize() + ` e WHERE e.run_id = x.run_id AND x.head_seq BETWEEN e.seq AND e.last_seq AND e.recorded_at = x.updated_at)`},
	} {
		var bad int64
		must(t, conn.QueryRow(ctx, c.sql).Scan(&bad))
		if bad != 0 {
			t.Errorf("%s: %d rows without their tick's time", c.what, bad)
		}
	}
}
