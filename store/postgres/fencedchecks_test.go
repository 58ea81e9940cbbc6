package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// pgChecked is the SQLSTATE of the stand-in trigger functions below.
const pgChecked = "FLX01"

// checksRefuseAll replaces the check functions of the triggers migrations
// 18 and 19 give a condition (the events', the trace rows' and the keys')
// in the store's schema with ones that refuse every row, so that a write
// succeeds only where the triggers do not fire.
func checksRefuseAll(t *testing.T, s *Store) {
	t.Helper()
	for _, fn := range []string{"flrh_events_checked", "flrh_trace_checked", "flrh_keys_checked"} {
		_, err := s.pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+pgx.Identifier{s.Schema(), fn}.Sanitize()+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'checked on %', TG_TABLE_NAME USING ERRCODE = '`+pgChecked+`';
END
$$`)
		must(t, err)
	}
}

// A one-round-trip tick's events and trace row, written after its fence
// in the same transaction, are not checked again by the tables' triggers;
// rows written any other way are: by hand (with the fence's setting unset
// or empty), or by the two-round-trip tick the store sends after a
// refusal.
func TestFencedTickSkipsRowChecks(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		s := openTest(t, Options{})
		l := oneEventRun(t, s)
		checksRefuseAll(t, s)

		// A governed step's two ticks: the decision with its own input,
		// an intent begun, events, a checkpoint and two trace records in
		// one row; then the attempt's result with its receipt.
		in := storetest.Inb("r", "in1", "INPUT", `{"refund":1}`)
		body := []byte(`{"pay":1}`)
		intent := store.Intent{ID: "i1", EffectType: "refund.pay", IdempotencyKey: "k1",
			ContentDigest: store.BodyDigest(body), Body: body, Digest: store.BodyDigest(body)}
		cp := []byte(`{"cp":1}`)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, State: "EXECUTE",
			Events:     []store.Event{storetest.Ev("B", `{"n":2}`), storetest.Ev("C", `{"n":3}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Intents:    []store.Intent{intent}, Begin: []string{intent.ID},
			Submit: []store.Inbound{in}, Consume: []string{in.ID}, ExpectInboxEmpty: true,
			Trace: []store.TraceRecord{{Kind: "k", Body: []byte(`{"t":1}`)}, {Kind: "l", Body: []byte(`{"t":2}`)}}}))
		rb := []byte(`{"applied":1}`)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, State: "AWAIT", Events: []store.Event{storetest.Ev("D", `{"n":4}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Results:    []store.AttemptResult{{IntentID: intent.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts:   []store.Receipt{{IntentID: intent.ID, Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}},
			Trace:      []store.TraceRecord{{Kind: "k", Body: []byte(`{"t":3}`)}}}))
		evs, err := s.Events(ctx, "r", 0)
		must(t, err)
		if len(evs) != 4 {
			t.Fatalf("events: %+v", evs)
		}
		var rows string
		must(t, s.pool.QueryRow(ctx, `SELECT concat_ws(' ', (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM intents),
	(SELECT count(*) FROM outbox), (SELECT count(*) FROM attempts), (SELECT count(*) FROM receipts), (SELECT count(*) FROM inbox))`).Scan(&rows))
		if rows != "2 1 1 1 1 1" {
			t.Fatalf("checkpoints, intents, outbox, attempts, receipts, inbox: %s", rows)
		}
		// What the triggers would have checked holds for every row the
		// store wrote.
		var bad int
		must(t, s.pool.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM events e WHERE (e.prev_sum IS NULL) = (e.prev_hash IS NULL)
		OR cardinality(e.kinds) <> e.last_seq - e.seq + 1 OR cardinality(e.digest_sums) <> e.last_seq - e.seq + 1
		OR EXISTS (SELECT FROM generate_series(1, cardinality(e.kinds)) i WHERE (e.digest_sums[i] IS NULL) = (e.digests[i] IS NULL)
			OR (e.chain_sums[i] IS NULL) = (e.chain_hashes[i] IS NULL))
		OR NOT EXISTS (SELECT FROM runs r WHERE r.run_id = e.run_id))
	+ (SELECT count(*) FROM trace x WHERE cardinality(x.kinds) <> x.last_seq - x.seq + 1 OR cardinality(x.bodies) <> x.last_seq - x.seq + 1
		OR NOT EXISTS (SELECT FROM runs r WHERE r.run_id = x.run_id))
	+ (SELECT count(*) FROM checkpoints c WHERE NOT EXISTS (SELECT FROM runs r WHERE r.run_id = c.run_id))
	+ (SELECT count(*) FROM intents i WHERE NOT EXISTS (SELECT FROM runs r WHERE r.run_id = i.run_id))
	+ (SELECT count(*) FROM inbox x WHERE NOT EXISTS (SELECT FROM runs r WHERE r.run_id = x.run_id))
	+ (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT FROM intents i WHERE i.intent_id = o.intent_id AND i.run_id = o.run_id))
	+ (SELECT count(*) FROM receipts o WHERE NOT EXISTS (SELECT FROM intents i WHERE i.intent_id = o.intent_id AND i.run_id = o.run_id))
	+ (SELECT count(*) FROM attempts a WHERE NOT EXISTS (SELECT FROM intents i WHERE i.intent_id = a.intent_id))
	+ (SELECT CASE WHEN count(*) = 2 AND max(last_seq - seq) = 1 THEN 0 ELSE 1 END FROM trace)`).Scan(&bad))
		if bad != 0 {
			t.Fatalf("%d rows fail the checks the triggers skipped", bad)
		}

		for _, q := range []string{
			eventInsert("events", []string{"r"}, 100),
			`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ('r', 100, 100, '{k}', '{"\\x00"}', 0)`,
			`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at) VALUES ('r', 99, 1, 1, 'b', '\x00', 'd', 1, 0)`,
			`INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ('i1', 99, 'started', 1, 0)`,
		} {
			for _, set := range []string{"", "SELECT set_config('" + tickAt + "', '', true); "} {
				_, err := s.pool.Exec(ctx, "BEGIN; "+set+q+"; ROLLBACK")
				if pgCode(err) != pgChecked {
					t.Fatalf("%s%s: err = %v, want the check's %s", set, q, err, pgChecked)
				}
				s.pool.Exec(ctx, "ROLLBACK")
			}
		}

		// Refused, the store forgets the run's head: the next tick is the
		// two-round-trip one, without the fence's setting.
		mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("X", `{}`)}}), store.CodeHeadMismatch)
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)}}); err == nil {
			t.Fatalf("a two-round-trip tick's events were not checked")
		}
	})
}
