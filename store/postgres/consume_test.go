package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A one-round-trip tick that consumes inputs submitted earlier is one
// statement, its fence folded in and each consumption a guarded part of
// it (see appends.consume); the inputs are consumed and nothing else in
// the inbox is. An input already consumed — by another writer since the
// store's last commit, or twice in the tick — fails the statement's guard:
// nothing of the attempt is written, and the two-round-trip path reports
// the input as not pending. A tick that also checks its inbox is left
// empty keeps its consumption apart.
func TestConsumptionInTheAppendedStatement(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		schema := freshSchema(t)
		s := openNamed(t, schema, "flrh-consume-"+schema, Options{MaxConns: 1})
		adm := admin(t)
		l := oneEventRun(t, s)
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			must(t, s.Submit(ctx, storetest.Inb("r", id, "INPUT", `{"id":"`+id+`"}`)))
		}
		pending := func() string {
			t.Helper()
			in, err := s.Inbox(ctx, "r", true)
			must(t, err)
			ids := make([]string, len(in))
			for i, e := range in {
				ids[i] = e.ID
			}
			return strings.Join(ids, ",")
		}
		cp := []byte(`{"state":1}`)
		body := []byte(`{"pay":1}`)
		in := store.Intent{ID: "i", EffectType: "pay", IdempotencyKey: "k", ContentDigest: "c", Body: body, Digest: store.BodyDigest(body)}
		sent := sentWrites(t, func() error {
			return s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)},
				Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
				Intents:    []store.Intent{in}, Begin: []string{in.ID}, Consume: []string{"a", "b"},
				Trace: []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}}})
		})
		if len(sent) != 1 || len(sent[0]) != 1 || !strings.HasPrefix(sent[0][0], "WITH f AS ("+fenceAheadWrite+" RETURNING ") ||
			!strings.Contains(sent[0][0], "ci1 AS (UPDATE inbox") {
			t.Fatalf("sent %d commits %q, want one of one statement, the fence and both consumptions in it", len(sent), sent)
		}
		if p := pending(); p != "c,d,e" {
			t.Fatalf("pending after consuming a and b: %s", p)
		}
		if h := headOf(t, adm, schema, "r"); h != 2 {
			t.Fatalf("head %d, want 2", h)
		}

		// Consumed behind the store's back: the guard fails the one
		// statement, and the two-round-trip path refuses the tick.
		q := pgx.Identifier{schema, "inbox"}.Sanitize()
		if _, err := adm.Exec(ctx, `UPDATE `+q+` SET consumed = true WHERE run_id = 'r' AND inbound_id = 'c'`); err != nil {
			t.Fatal(err)
		}
		sent = sentWrites(t, func() error {
			err := s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}, Consume: []string{"d", "c"}})
			mustCode(t, err, store.CodeInvalidTransition)
			return nil
		})
		if len(sent) != 1 || !strings.Contains(sent[0][0], "ci1 AS (UPDATE inbox") {
			t.Fatalf("sent %q, want the one-round-trip attempt with both consumptions", sent)
		}
		if p := pending(); p != "d,e" {
			t.Fatalf("pending after a refused tick: %s", p)
		}
		if h := headOf(t, adm, schema, "r"); h != 2 {
			t.Fatalf("head %d after a refused tick, want 2", h)
		}

		// The same input twice in one tick: refused, nothing written.
		mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}, Consume: []string{"d", "d"}}),
			store.CodeInvalidTransition)
		if p, h := pending(), headOf(t, adm, schema, "r"); p != "d,e" || h != 2 {
			t.Fatalf("after consuming one input twice: pending %s, head %d", p, h)
		}

		// The store's next tick, after a refusal, goes the two-round-trip
		// way; the one after it is one statement again.
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}, Consume: []string{"d"}}))
		sent = sentWrites(t, func() error {
			return s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("D", `{"n":4}`)}, Consume: []string{"e"}})
		})
		if len(sent) != 1 || len(sent[0]) != 1 || !strings.Contains(sent[0][0], "ci0 AS (UPDATE inbox") {
			t.Fatalf("sent %q, want one statement with the consumption", sent)
		}
		if p, h := pending(), headOf(t, adm, schema, "r"); p != "" || h != 4 {
			t.Fatalf("after consuming d and e: pending %q, head %d", p, h)
		}

		// A tick that checks its inbox is left empty sends its
		// consumption as a statement of its own.
		must(t, s.Submit(ctx, storetest.Inb("r", "f", "INPUT", `{}`)))
		sent = sentWrites(t, func() error {
			return s.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)}, Consume: []string{"f"}, ExpectInboxEmpty: true})
		})
		if len(sent) != 1 || len(sent[0]) != 3 || sent[0][1] != consumeSQL {
			t.Fatalf("sent %q, want the fence, the consumption and the appends", sent)
		}
		if p, h := pending(), headOf(t, adm, schema, "r"); p != "" || h != 5 {
			t.Fatalf("after consuming f: pending %q, head %d", p, h)
		}
	})
}
