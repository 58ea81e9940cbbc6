package postgres

import (
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// A trace row holds exactly the records its range numbers, none of them
// NULL: anything else is refused by the database, whoever writes it, and
// a tick's records read back one by one at their positions.
func TestTraceRowPerTick(t *testing.T) {
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	tick := func(head int64, kinds ...string) store.Tick {
		tk := store.Tick{ExpectHead: head}
		for _, k := range kinds {
			tk.Trace = append(tk.Trace, store.TraceRecord{Kind: k, Body: []byte(`{"k":"` + k + `"}`)})
		}
		return tk
	}
	must(t, s.Commit(ctx, l, tick(0, "a", "b", "c")))
	must(t, s.Commit(ctx, l, tick(0, "d")))
	must(t, s.Commit(ctx, l, tick(0, "e", "f")))
	got, err := s.Trace(ctx, "r")
	must(t, err)
	var kinds string
	for _, r := range got {
		if string(r.Body) != `{"k":"`+r.Kind+`"}` {
			t.Fatalf("record %s has body %s", r.Kind, r.Body)
		}
		kinds += r.Kind
	}
	if kinds != "abcdef" {
		t.Fatalf("trace reads %q, want abcdef", kinds)
	}
	var rows, last int64
	must(t, s.pool.QueryRow(ctx, `SELECT count(*), max(last_seq) FROM trace WHERE run_id = 'r'`).Scan(&rows, &last))
	if rows != 3 || last != 6 {
		t.Fatalf("%d rows up to record %d, want 3 up to 6", rows, last)
	}
	for _, bad := range []string{
		`INSERT INTO trace VALUES ('r', 7, 8, ARRAY['g'], ARRAY['\x00'::bytea], 0)`,                 // too few records
		`INSERT INTO trace VALUES ('r', 7, 7, ARRAY['g', 'h'], ARRAY['\x00'::bytea], 0)`,            // kinds and bodies differ
		`INSERT INTO trace VALUES ('r', 7, 8, ARRAY['g', NULL], ARRAY['\x00', '\x01']::bytea[], 0)`, // a NULL kind
		`INSERT INTO trace VALUES ('r', 7, 7, ARRAY['g'], ARRAY[NULL]::bytea[], 0)`,                 // a NULL body
		`INSERT INTO trace VALUES ('r', 7, 6, ARRAY[]::text[], ARRAY[]::bytea[], 0)`,                // an empty range
		`INSERT INTO trace VALUES ('r', 7, 8, ARRAY[['g'], ['h']], ARRAY[['\x00'], ['\x01']]::bytea[], 0)`,
	} {
		if _, err := s.pool.Exec(ctx, bad); err == nil {
			t.Fatalf("%s was stored", bad)
		}
	}
	// The next tick still numbers from record 6.
	must(t, s.Commit(ctx, l, tick(0, "g")))
	if got, err = s.Trace(ctx, "r"); err != nil || len(got) != 7 || got[6].Kind != "g" {
		t.Fatalf("trace after the refused rows: %d records, %v", len(got), err)
	}
}

// Only a canonical hash is stored as its sum, and the sum reads back as
// the same text; anything else keeps its text.
func TestHashSum(t *testing.T) {
	canon := store.BodyDigest([]byte(`{}`))
	if sum := hashSum(canon); len(sum) != 32 {
		t.Fatalf("%s: sum of %d bytes", canon, len(sum))
	}
	for _, h := range []string{"", "sha256:", canon[:len(canon)-1], canon + "0", "SHA256" + canon[6:],
		canon[:10] + "A" + canon[11:], canon[:10] + "g" + canon[11:], "sha512:" + canon[7:], store.GenesisHash[:70] + " "} {
		if sum := hashSum(h); sum != nil {
			t.Fatalf("%q stored as a sum", h)
		}
	}
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{{Kind: "k", Body: []byte(`{}`), Digest: canon}}}))
	var sums, texts int64
	must(t, s.pool.QueryRow(ctx, `SELECT cardinality(array_remove(digest_sums, NULL)) + count(prev_sum) + cardinality(array_remove(chain_sums, NULL)),
	count(digests) + count(prev_hash) + count(chain_hashes) FROM events GROUP BY digest_sums, chain_sums`).Scan(&sums, &texts))
	if sums != 3 || texts != 0 {
		t.Fatalf("a store-written event holds %d sums and %d texts, want 3 and 0", sums, texts)
	}
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Digest != canon || evs[0].PrevHash != store.GenesisHash || evs[0].ChainHash != store.ChainHash(store.GenesisHash, 1, canon) {
		t.Fatalf("event reads back as %+v", evs)
	}
	// Exactly one of each pair, a sum of 32 bytes.
	sum := `"\\x` + canon[7:] + `"`
	row := func(digestSums, digests, prevSum, prevHash, chainSums, chainHashes string) string {
		return `INSERT INTO events (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at)
VALUES ('r', 2, 3, '{k,l}', '{"\\x00","\\x01"}', ` + digestSums + `, ` + digests + `, ` + prevSum + `, ` + prevHash + `, ` + chainSums + `, ` + chainHashes + `, 1, 0)`
	}
	sums2, prev := `'{`+sum+`,`+sum+`}'`, `'\x`+canon[7:]+`'`
	for _, bad := range []string{
		row(`'{NULL,`+sum+`}'`, "NULL", prev, "NULL", sums2, "NULL"),
		row(sums2, `'{x,NULL}'`, prev, "NULL", sums2, "NULL"),
		row(sums2, "NULL", "NULL", "NULL", sums2, "NULL"),
		row(sums2, "NULL", prev, "'x'", sums2, "NULL"),
		row(sums2, "NULL", prev, "NULL", `'{`+sum+`,NULL}'`, `'{NULL,NULL}'`),
		row(sums2, "NULL", `'\x`+canon[9:]+`'`, "NULL", sums2, "NULL"),
		row(`'{`+sum+`,"\\x00"}'`, "NULL", prev, "NULL", sums2, "NULL"),
		row(`'{`+sum+`}'`, "NULL", prev, "NULL", sums2, "NULL"),
		row(sums2, "NULL", prev, "NULL", sums2, `'{x}'`),
	} {
		if _, err := s.pool.Exec(ctx, bad); pgCode(err) != "23514" {
			t.Fatalf("%s: err = %v, want the check's refusal", bad, err)
		}
	}
	// Well-formed rows are stored: texts beside NULL sums, or no texts.
	_, err = s.pool.Exec(ctx, row(`'{NULL,`+sum+`}'`, `'{x,NULL}'`, "NULL", "'p'", sums2, "NULL"))
	must(t, err)
	_, err = s.pool.Exec(ctx, strings.Replace(row(sums2, "NULL", prev, "NULL", sums2, "NULL"), "2, 3,", "4, 4,", 1))
	if pgCode(err) != "23514" {
		t.Fatal("a row of two events numbered as one was stored")
	}
	evs, err = s.Events(ctx, "r", 1)
	must(t, err)
	if len(evs) != 2 || evs[0].Digest != "x" || evs[0].PrevHash != "p" || evs[1].Digest != canon || evs[1].PrevHash != evs[0].ChainHash || evs[1].ChainHash != canon {
		t.Fatalf("the hand-written row reads back as %+v", evs)
	}
}

// An intent begun in its own tick is written in flight with its first
// attempt, and a later tick's result and receipt for it are written
// together: the outbox ends done on the result's route, as the separate
// writes left it. The same pair naming another run's intent is refused
// and writes nothing.
func TestIntentWrittenWithItsAttemptAndReceipt(t *testing.T) {
	s := openTest(t, Options{})
	for _, id := range []string{"r", "other"} {
		must(t, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}))
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	lo, err := s.AcquireLease(ctx, "other", "w", time.Hour)
	must(t, err)
	body := []byte(`{"pay":1}`)
	in := store.Intent{ID: "i1", EffectType: "refund.pay", IdempotencyKey: "k1", ContentDigest: store.BodyDigest(body), Body: body, Digest: store.BodyDigest(body)}
	must(t, s.Commit(ctx, l, store.Tick{Intents: []store.Intent{in}, Begin: []string{"i1"}}))
	outbox := func() (status, route string, attempts int64) {
		t.Helper()
		must(t, s.pool.QueryRow(ctx, `SELECT status, route, attempts FROM outbox WHERE intent_id = 'i1'`).Scan(&status, &route, &attempts))
		return
	}
	if st, _, n := outbox(); st != "in_flight" || n != 1 {
		t.Fatalf("outbox %s at attempt %d after the tick that begins it, want in_flight at 1", st, n)
	}
	ats, err := s.Attempts(ctx, "i1")
	must(t, err)
	if len(ats) != 1 || ats[0].N != 1 || ats[0].Status != store.AttemptStarted {
		t.Fatalf("attempts %+v", ats)
	}

	rb := []byte(`{"applied":1}`)
	rc := store.Receipt{IntentID: "i1", Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}
	result := store.AttemptResult{IntentID: "i1", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone, Route: "direct"}
	// A tick of the other run first, so that the next goes the
	// one-round-trip way, whose statement's guards refuse it.
	must(t, s.Commit(ctx, lo, store.Tick{Trace: []store.TraceRecord{{Kind: "k", Body: []byte(`{}`)}}}))
	mustCode(t, s.Commit(ctx, lo, store.Tick{Results: []store.AttemptResult{result}, Receipts: []store.Receipt{rc}}), store.CodeInvalidTransition)
	if st, _, _ := outbox(); st != "in_flight" {
		t.Fatalf("another run's refused tick moved the outbox to %s", st)
	}
	must(t, s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{result}, Receipts: []store.Receipt{rc}}))
	if st, route, n := outbox(); st != "done" || route != "direct" || n != 1 {
		t.Fatalf("outbox %s on route %q at attempt %d, want done on direct at 1", st, route, n)
	}
	rcs, err := s.Receipts(ctx, "r")
	must(t, err)
	if len(rcs) != 1 || rcs[0].Outcome != "applied" {
		t.Fatalf("receipts %+v", rcs)
	}
	if rcs, err := s.Receipts(ctx, "other"); err != nil || len(rcs) != 0 {
		t.Fatalf("the other run holds receipts %+v (%v)", rcs, err)
	}
}

// A tick's attempt result closed by its receipt, merged into the tick's
// statement on the one-round-trip path, is refused when the attempt it
// finishes is not there (the statement's query counts the attempt's rows
// itself) or its intent is another run's (the receipt's guard finds no
// outbox row of the intent in the tick's run), and leaves the attempt,
// the outbox and the receipts as they were.
func TestMergedResultRefusedUnlessItsAttempt(t *testing.T) {
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	body := []byte(`{"pay":1}`)
	in := store.Intent{ID: "i1", EffectType: "refund.pay", IdempotencyKey: "k1", ContentDigest: store.BodyDigest(body), Body: body, Digest: store.BodyDigest(body)}
	must(t, s.Commit(ctx, l, store.Tick{Intents: []store.Intent{in}, Begin: []string{"i1"}}))
	rb := []byte(`{"applied":1}`)
	rc := store.Receipt{IntentID: "i1", Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}
	// The tick follows the store's own last commit of the run: it goes the
	// one-round-trip way, the result and receipt merged into its statement
	// with its trace.
	tr := []store.TraceRecord{{Kind: "k", Body: []byte(`{}`)}}
	result := store.AttemptResult{IntentID: "i1", N: 2, Status: store.AttemptSucceeded, Outbox: store.OutboxDone, Route: "direct"}
	if err := s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{result}, Receipts: []store.Receipt{rc}, Trace: tr}); err == nil {
		t.Fatal("a result of attempt 2, never begun, committed")
	}
	var status string
	var attempts int64
	must(t, s.pool.QueryRow(ctx, `SELECT status, attempts FROM outbox WHERE intent_id = 'i1'`).Scan(&status, &attempts))
	if status != "in_flight" || attempts != 1 {
		t.Fatalf("outbox %s at attempt %d after the refused tick, want in_flight at 1", status, attempts)
	}
	ats, err := s.Attempts(ctx, "i1")
	must(t, err)
	if len(ats) != 1 || ats[0].Status != store.AttemptStarted {
		t.Fatalf("attempts %+v after the refused tick", ats)
	}
	if rcs, err := s.Receipts(ctx, "r"); err != nil || len(rcs) != 0 {
		t.Fatalf("receipts %+v (%v) after the refused tick", rcs, err)
	}
	// Nor does another run's tick finish the attempt, merged the same way.
	must(t, s.CreateRun(ctx, store.Run{ID: "other", WorkflowID: "wf", State: "S"}))
	lo, err := s.AcquireLease(ctx, "other", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, lo, store.Tick{Trace: tr}))
	result.N = 1
	if err := s.Commit(ctx, lo, store.Tick{Results: []store.AttemptResult{result}, Receipts: []store.Receipt{rc}, Trace: tr}); err == nil {
		t.Fatal("another run's tick finished the attempt")
	}
	if ats, err := s.Attempts(ctx, "i1"); err != nil || len(ats) != 1 || ats[0].Status != store.AttemptStarted {
		t.Fatalf("attempts %+v (%v) after another run's refused tick", ats, err)
	}
	must(t, s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{result}, Receipts: []store.Receipt{rc}, Trace: tr}))
	if rcs, err := s.Receipts(ctx, "r"); err != nil || len(rcs) != 1 {
		t.Fatalf("receipts %+v (%v)", rcs, err)
	}
}
