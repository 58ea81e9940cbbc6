package postgres

import (
	"context"
	"strings"
	"sync"

	"flrh.dev/flrh/store"
)

// Merged group commits.
//
// A group's ticks, each sent as it would be alone, take two statements
// each (the fence and the appended statement): each statement an executor
// start-up, and each events row a firing of its row trigger.
// When every tick of a group has only those two (see mergedTick), the
// group first goes as two statements in all: one fence for every tick's
// run (mergedFenceSQL) and one statement with one multi-row write per
// table (mergedAppends), its rows from arrays, each row carrying its own
// tick's number in the group and so its own tick's time. Any refusal of
// either — a fence, a moved head, a key taken, a run locked by another
// transaction — rolls the whole transaction back, nothing of it written,
// and the group is committed again as before (commitTogether), tick by
// tick, which names the tick refused and reports exactly what is wrong.
// So a merged group decides nothing a group committed tick by tick would
// not: it is the same transaction's writes, fewer statements.

// tickAts is the transaction-local setting in which the merged fence
// leaves each tick's time, as a bigint[] in the group's order.
const tickAts = "flrh.tick_ats"

// mergedFenceSQL locks the runs of a group's ticks (not waiting: see
// fenceGroupSQL), reads the clock after the locks, once per tick ($10
// when injected: each tick's own reading), leaves the readings in tickAts
// and moves each run's header on only if its lease, head and hash are
// what its tick expects, as fenceAheadSQL does for one tick; the guard
// fails unless every run moved. $11 turns synchronous_commit off, $12 is
// the number of ticks, $13 their due times (store.Tick.DueAt).
//
// As fenceAheadSQL, it names its runs by their key alone, in the lock and
// in the UPDATE (run_id = ANY($1)), and checks the lease, state and head on
// the locked rows, the UPDATE only the lease's expiry: a generic plan made
// on a young database then has no other path than the primary key, where a
// lock by "IN (SELECT run_id FROM x)" and an UPDATE whose conditions imply
// runs_live's predicate were planned as a scan of every run and a walk of
// every live run, at every group.
//
// It also turns sequential scans, hash and merge joins off for the rest
// of the transaction: the merged statement after it is planned once per
// connection (a generic plan, see Open) and then kept, and planned on
// the small tables of a young database its joins of the arrays' rows to
// the tables scan the tables whole, a cost that grows with them (3.65
// million backend instructions a step at C=8 between 240 and 560 steps,
// against 2.74 million planned as index lookups).
var mergedFenceSQL = `WITH x AS MATERIALIZED (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $13::bigint[])
	WITH ORDINALITY AS x(run_id, owner, gen, head, hash, new_head, new_hash, state, outcome, due, k)),
r AS MATERIALIZED (SELECT l.* FROM unnest($1::text[]) AS k(run_id), LATERAL (SELECT run_id, lease_owner, lease_generation, quarantine, outcome, head_seq, head_hash
	FROM runs WHERE runs.run_id = k.run_id FOR NO KEY UPDATE NOWAIT) AS l),
n AS MATERIALIZED (SELECT x.*, COALESCE(($10::bigint[])[x.k], ` + nowNanos + `) AS now FROM x, r WHERE r.run_id = x.run_id
	AND r.lease_owner = x.owner AND r.lease_generation = x.gen AND r.quarantine = '' AND r.outcome = '' AND r.head_seq = x.head AND r.head_hash = x.hash),
c AS MATERIALIZED (SELECT set_config('` + tickAts + `', (SELECT array_agg(now ORDER BY k) FROM n)::text, true),
	set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
	CASE WHEN $11 THEN ` + lazyExpr + ` END),
w AS (UPDATE runs SET head_seq = n.new_head, head_hash = n.new_hash, state = CASE WHEN n.state = '' THEN runs.state ELSE n.state END, outcome = n.outcome, updated_at = n.now, due_at = n.due
	FROM n, c WHERE runs.run_id = ANY($1::text[]) AND runs.run_id = n.run_id AND runs.lease_expires_at > n.now RETURNING 1)
SELECT flrh_expect_one(CASE WHEN (SELECT count(*) FROM w) = $12 THEN 1 ELSE 0 END, 'fence')`

// mergedTick reports whether tick, on the one-round-trip path, is sent as
// its fence and at most one appended statement (queueTick merges its
// intents or its closed results into that statement, or it has none): the
// ticks a merged group takes.
func mergedTick(tick store.Tick) bool {
	if len(tick.Submit) > 1 || len(store.FromInbox(tick)) > 0 {
		return false
	}
	ids := map[string]bool{}
	for _, in := range tick.Intents {
		if ids[in.ID] {
			return false
		}
		ids[in.ID] = true
	}
	begun := map[string]bool{}
	for _, id := range tick.Begin {
		if !ids[id] || begun[id] {
			return false
		}
		begun[id] = true
	}
	switch {
	case len(tick.Intents) > 0:
		return len(tick.Results) == 0 && len(tick.Receipts) == 0
	case len(tick.Results) > 0 || len(tick.Receipts) > 0:
		closed := closedWithResult(tick, nil)
		return len(closed) == len(tick.Results) && len(closed) == len(tick.Receipts)
	}
	return true
}

// mergedParts says which multi-row writes a merged statement has: its
// text follows from them alone.
type mergedParts uint8

const (
	partIntents mergedParts = 1 << iota
	partClosed
	partSubmit
	partEvents
	partCheckpoints
	partTrace
	partInboxEmpty
)

// mergedRows are a group's rows, table by table, as the columns of their
// multi-row writes; t is each row's tick (1-based, its time's index in
// tickAts).
type mergedRows struct {
	parts mergedParts

	inID, inRun, inEffect, inKey, inContent, inDigest []string
	inApproval                                        []*string
	inSeq, inGen                                      []int64
	inBody                                            [][]byte
	inBegun                                           []bool
	inT                                               []int32

	rcRun, rcID, rcStatus, rcDetail, rcRoute, rcOutcome, rcDigest []string
	rcN, rcGen                                                    []int64
	rcBody                                                        [][]byte
	rcT                                                           []int32

	sbRun, sbID, sbKind, sbRole, sbActor, sbCap, sbDigest []string
	sbBody                                                [][]byte
	sbT                                                   []int32

	evRun                       []string
	evFirst, evLast, evGen      []int64
	evLo, evHi                  []int32
	evPS                        [][]byte
	evP                         []*string
	evDT, evCT                  []bool
	evT                         []int32
	evKind                      []string
	evBody, evDS, evCS          [][]byte
	evD, evC                    []*string
	cpRun, cpBuild, cpDigest    []string
	cpN, cpSeq, cpFormat, cpGen []int64
	cpBody                      [][]byte
	cpT                         []int32
	trRun                       []string
	trFirst, trLast             []int64
	trLo, trHi                  []int32
	trKinds                     []string
	trBodies                    [][]byte
	trT                         []int32
	emptyRuns                   []string
}

// add adds tick (the group's t-th) after h, its events' chain hashes
// chains, and leaves next at the run as the tick leaves it.
func (m *mergedRows) add(s *Store, t int32, lease store.Lease, tick store.Tick, next *runHead, chains chain) error {
	runID := lease.RunID
	head := next.head + int64(len(tick.Events))
	begun := map[string]bool{}
	for _, id := range tick.Begin {
		begun[id] = true
	}
	for _, in := range tick.Intents {
		m.parts |= partIntents
		var approval *string
		if in.ApprovalID != "" {
			a := in.ApprovalID
			approval = &a
		}
		m.inID, m.inRun, m.inEffect, m.inKey, m.inContent, m.inDigest = append(m.inID, in.ID), append(m.inRun, runID),
			append(m.inEffect, in.EffectType), append(m.inKey, in.IdempotencyKey), append(m.inContent, in.ContentDigest), append(m.inDigest, in.Digest)
		m.inApproval, m.inSeq, m.inGen = append(m.inApproval, approval), append(m.inSeq, head), append(m.inGen, lease.Generation)
		m.inBody, m.inBegun, m.inT = append(m.inBody, in.Body), append(m.inBegun, begun[in.ID]), append(m.inT, t)
	}
	closed := closedWithResult(tick, nil)
	for _, r := range tick.Results {
		rc, _ := closed.get(r.IntentID)
		m.parts |= partClosed
		m.rcRun, m.rcID, m.rcStatus, m.rcDetail, m.rcRoute, m.rcOutcome, m.rcDigest = append(m.rcRun, runID), append(m.rcID, r.IntentID),
			append(m.rcStatus, string(r.Status)), append(m.rcDetail, r.Detail), append(m.rcRoute, r.Route), append(m.rcOutcome, rc.Outcome), append(m.rcDigest, rc.Digest)
		m.rcN, m.rcGen, m.rcBody, m.rcT = append(m.rcN, r.N), append(m.rcGen, lease.Generation), append(m.rcBody, rc.Body), append(m.rcT, t)
	}
	for _, in := range tick.Submit {
		m.parts |= partSubmit
		m.sbRun, m.sbID, m.sbKind, m.sbRole, m.sbActor, m.sbCap, m.sbDigest = append(m.sbRun, runID), append(m.sbID, in.ID),
			append(m.sbKind, in.Kind), append(m.sbRole, in.ActorRole), append(m.sbActor, in.Actor), append(m.sbCap, in.Capability), append(m.sbDigest, in.Digest)
		m.sbBody, m.sbT = append(m.sbBody, in.Body), append(m.sbT, t)
	}
	cpBody, traceBodies, err := s.sealTick("commit", runID, tick, next.checkpoints, next.trace)
	if err != nil {
		return err
	}
	if n := len(tick.Events); n > 0 {
		// One row for the tick's events, their columns slices lo:hi of
		// the group's arrays (see the schema's "events per tick").
		m.parts |= partEvents
		lo := int32(len(m.evKind)) + 1
		var dt, ct bool
		for i, e := range tick.Events {
			m.evKind, m.evBody = append(m.evKind, e.Kind), append(m.evBody, e.Body)
			for _, c := range []struct {
				sums  *[][]byte
				texts *[]*string
				any   *bool
				h     string
			}{{&m.evDS, &m.evD, &dt, e.Digest}, {&m.evCS, &m.evC, &ct, chains.text(i)}} {
				sum := hashSum(c.h)
				var text *string
				if sum == nil {
					h := c.h
					text, *c.any = &h, true
				}
				*c.sums, *c.texts = append(*c.sums, sum), append(*c.texts, text)
			}
		}
		prevSum := hashSum(next.hash)
		var prev *string
		if prevSum == nil {
			h := next.hash
			prev = &h
		}
		m.evRun, m.evFirst, m.evLast, m.evGen = append(m.evRun, runID), append(m.evFirst, next.head+1), append(m.evLast, head), append(m.evGen, lease.Generation)
		m.evLo, m.evHi, m.evPS, m.evP = append(m.evLo, lo), append(m.evHi, lo+int32(n)-1), append(m.evPS, prevSum), append(m.evP, prev)
		m.evDT, m.evCT, m.evT = append(m.evDT, dt), append(m.evCT, ct), append(m.evT, t)
		next.hash = chains.last
	}
	next.head = head
	if cp := tick.Checkpoint; cp != nil {
		m.parts |= partCheckpoints
		next.checkpoints++
		m.cpRun, m.cpBuild, m.cpDigest = append(m.cpRun, runID), append(m.cpBuild, cp.BuildDigest), append(m.cpDigest, cp.Digest)
		m.cpN, m.cpSeq, m.cpFormat, m.cpGen = append(m.cpN, next.checkpoints), append(m.cpSeq, head), append(m.cpFormat, cp.FormatVersion), append(m.cpGen, lease.Generation)
		m.cpBody, m.cpT = append(m.cpBody, cpBody), append(m.cpT, t)
	}
	if n := len(tick.Trace); n > 0 {
		m.parts |= partTrace
		lo := int32(len(m.trKinds)) + 1
		for i, tr := range tick.Trace {
			m.trKinds, m.trBodies = append(m.trKinds, tr.Kind), append(m.trBodies, traceBodies[i])
		}
		m.trRun, m.trFirst, m.trLast = append(m.trRun, runID), append(m.trFirst, next.trace+1), append(m.trLast, next.trace+int64(n))
		m.trLo, m.trHi, m.trT = append(m.trLo, lo), append(m.trHi, lo+int32(n)-1), append(m.trT, t)
		next.trace += int64(n)
	}
	if tick.ExpectInboxEmpty {
		m.parts |= partInboxEmpty
		m.emptyRuns = append(m.emptyRuns, runID)
	}
	return nil
}

// args are the merged statement's parameters, in the order of its text's
// placeholders (see mergedSQL).
func (m *mergedRows) args() []any {
	var a []any
	if m.parts&partIntents != 0 {
		a = append(a, m.inID, m.inRun, m.inSeq, m.inEffect, m.inKey, m.inContent, m.inApproval, m.inBody, m.inDigest, m.inGen, m.inT, m.inBegun)
	}
	if m.parts&partClosed != 0 {
		a = append(a, m.rcRun, m.rcID, m.rcN, m.rcStatus, m.rcDetail, m.rcRoute, m.rcOutcome, m.rcBody, m.rcDigest, m.rcGen, m.rcT, int64(len(m.rcID)))
	}
	if m.parts&partSubmit != 0 {
		a = append(a, m.sbRun, m.sbID, m.sbKind, m.sbRole, m.sbActor, m.sbCap, m.sbBody, m.sbDigest, m.sbT)
	}
	if m.parts&partEvents != 0 {
		a = append(a, m.evRun, m.evFirst, m.evLast, m.evLo, m.evHi, m.evPS, m.evP, m.evDT, m.evCT, m.evGen, m.evT,
			m.evKind, m.evBody, m.evDS, m.evD, m.evCS, m.evC)
	}
	if m.parts&partCheckpoints != 0 {
		a = append(a, m.cpRun, m.cpN, m.cpSeq, m.cpFormat, m.cpBuild, m.cpBody, m.cpDigest, m.cpGen, m.cpT)
	}
	if m.parts&partTrace != 0 {
		a = append(a, m.trRun, m.trFirst, m.trLast, m.trLo, m.trHi, m.trKinds, m.trBodies, m.trT)
	}
	if m.parts&partInboxEmpty != 0 {
		a = append(a, m.emptyRuns)
	}
	return a
}

// mergedTexts caches mergedSQL's texts by parts.
var mergedTexts struct {
	mu sync.Mutex
	m  map[mergedParts]string
}

// mergedSQL is the merged statement for parts: one multi-row write per
// table, each row's time its tick's from tickAts, the guards of the
// closed results and of the empty inboxes as its query.
func mergedSQL(parts mergedParts) string {
	mergedTexts.mu.Lock()
	defer mergedTexts.mu.Unlock()
	if sql, ok := mergedTexts.m[parts]; ok {
		return sql
	}
	n := 0
	ps := func(casts ...string) string {
		out := make([]string, len(casts))
		for i, c := range casts {
			n++
			out[i] = "$" + itoa(n) + "::" + c
		}
		return strings.Join(out, ", ")
	}
	ctes := []string{`tm AS MATERIALIZED (SELECT current_setting('` + tickAts + `')::bigint[] AS a)`}
	var guards []string
	if parts&partIntents != 0 {
		cols := ps("text[]", "text[]", "bigint[]", "text[]", "text[]", "text[]", "text[]", "bytea[]", "text[]", "bigint[]", "int[]")
		id := "$" + itoa(n-10)
		begun := ps("bool[]")
		ctes = append(ctes, `mi AS (INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
	SELECT x.id, x.run, x.seq, x.effect, x.key, x.content, x.approval, x.body, x.digest, x.gen, tm.a[x.t]
	FROM unnest(`+cols+`) WITH ORDINALITY AS x(id, run, seq, effect, key, content, approval, body, digest, gen, t, k), tm ORDER BY x.k
	RETURNING intent_id, run_id, generation, recorded_at)`,
			`mb AS MATERIALIZED (SELECT * FROM unnest(`+id+`::text[], `+begun+`) AS b(id, begun))`,
			`mo AS (INSERT INTO outbox (intent_id, run_id, status, attempts, updated_at)
	SELECT mi.intent_id, mi.run_id, CASE WHEN mb.begun THEN 'in_flight' ELSE 'pending' END, CASE WHEN mb.begun THEN 1 ELSE 0 END, mi.recorded_at
	FROM mi JOIN mb ON mb.id = mi.intent_id)`,
			`mt AS (INSERT INTO attempts (intent_id, n, status, generation, started_at)
	SELECT mi.intent_id, 1, 'started', mi.generation, mi.recorded_at FROM mi JOIN mb ON mb.id = mi.intent_id WHERE mb.begun)`)
	}
	if parts&partClosed != 0 {
		cols := ps("text[]", "text[]", "bigint[]", "text[]", "text[]", "text[]", "text[]", "bytea[]", "text[]", "bigint[]", "int[]")
		count := ps("bigint")
		ctes = append(ctes, `mx AS MATERIALIZED (SELECT * FROM unnest(`+cols+`) WITH ORDINALITY AS x(run, id, n, status, detail, route, outcome, body, digest, gen, t, k))`,
			`ra AS (UPDATE attempts SET status = mx.status, detail = mx.detail, finished_at = tm.a[mx.t] FROM mx, tm
	WHERE attempts.intent_id = mx.id AND attempts.n = mx.n AND EXISTS (SELECT 1 FROM intents i WHERE i.intent_id = mx.id AND i.run_id = mx.run) RETURNING 1)`,
			`ro AS (UPDATE outbox SET status = 'done', route = mx.route, updated_at = tm.a[mx.t] FROM mx, tm
	WHERE outbox.intent_id = mx.id AND outbox.run_id = mx.run RETURNING mx.k)`,
			`rr AS (INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
	SELECT mx.id, mx.run, mx.outcome, mx.body, mx.digest, mx.gen, tm.a[mx.t] FROM mx, tm WHERE mx.k IN (SELECT k FROM ro) ORDER BY mx.k)`)
		guards = append(guards, `flrh_expect_one(CASE WHEN (SELECT count(*) FROM ra) = `+count+` THEN 1 ELSE 0 END, 'attempt result')`,
			`flrh_expect_one(CASE WHEN (SELECT count(*) FROM ro) = $`+itoa(n)+` THEN 1 ELSE 0 END, 'receipt')`)
	}
	if parts&partSubmit != 0 {
		cols := ps("text[]", "text[]", "text[]", "text[]", "text[]", "text[]", "bytea[]", "text[]", "int[]")
		ctes = append(ctes, `ms AS (`+submitInsert+`x.run, (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE run_id = x.run), x.id, x.kind, x.role, x.actor, x.cap, x.body, x.digest, true, tm.a[x.t]
	FROM unnest(`+cols+`) WITH ORDINALITY AS x(run, id, kind, role, actor, cap, body, digest, t, k), tm ORDER BY x.k)`)
	}
	if parts&partEvents != 0 {
		cols := ps("text[]", "bigint[]", "bigint[]", "int[]", "int[]", "bytea[]", "text[]", "bool[]", "bool[]", "bigint[]", "int[]")
		kinds, bodies, ds, d, cs, c := ps("text[]"), ps("bytea[]"), ps("bytea[]"), ps("text[]"), ps("bytea[]"), ps("text[]")
		ctes = append(ctes, `me AS (INSERT INTO events (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at)
	SELECT x.run, x.first, x.last, (`+kinds+`)[x.lo:x.hi], (`+bodies+`)[x.lo:x.hi], (`+ds+`)[x.lo:x.hi], CASE WHEN x.dt THEN (`+d+`)[x.lo:x.hi] END,
		x.ps, x.p, (`+cs+`)[x.lo:x.hi], CASE WHEN x.ct THEN (`+c+`)[x.lo:x.hi] END, x.gen, tm.a[x.t]
	FROM unnest(`+cols+`) WITH ORDINALITY AS x(run, first, last, lo, hi, ps, p, dt, ct, gen, t, k), tm ORDER BY x.k)`)
	}
	if parts&partCheckpoints != 0 {
		cols := ps("text[]", "bigint[]", "bigint[]", "bigint[]", "text[]", "bytea[]", "text[]", "bigint[]", "int[]")
		ctes = append(ctes, `mc AS (INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
	SELECT x.run, x.n, x.seq, x.format, x.build, x.body, x.digest, x.gen, tm.a[x.t]
	FROM unnest(`+cols+`) WITH ORDINALITY AS x(run, n, seq, format, build, body, digest, gen, t, k), tm ORDER BY x.k)`)
	}
	if parts&partTrace != 0 {
		cols := ps("text[]", "bigint[]", "bigint[]", "int[]", "int[]")
		kinds, bodies, ts := ps("text[]"), ps("bytea[]"), ps("int[]")
		ctes = append(ctes, `mr AS (INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at)
	SELECT x.run, x.first, x.last, (`+kinds+`)[x.lo:x.hi], (`+bodies+`)[x.lo:x.hi], tm.a[x.t]
	FROM unnest(`+cols+`, `+ts+`) WITH ORDINALITY AS x(run, first, last, lo, hi, t, k), tm ORDER BY x.k)`)
	}
	if parts&partInboxEmpty != 0 {
		runs := ps("text[]")
		guards = append(guards, `flrh_expect_one(CASE WHEN EXISTS (SELECT 1 FROM inbox WHERE run_id = ANY(`+runs+`) AND NOT consumed) THEN 0 ELSE 1 END, 'empty inbox')`)
	}
	if len(guards) == 0 {
		guards = []string{"1"}
	}
	sql := "WITH " + strings.Join(ctes, ",\n") + "\nSELECT " + strings.Join(guards, ", ")
	if mergedTexts.m == nil {
		mergedTexts.m = map[mergedParts]string{}
	}
	mergedTexts.m[parts] = sql
	return sql
}

// commitMerged commits ticks (more than one, each a mergedTick, of
// distinct runs) as one merged group: true when that decided every tick
// (committed, or each unknown after a COMMIT whose answer was lost).
// Otherwise nothing of it was written and the caller commits the group
// tick by tick.
func (s *Store) commitMerged(ticks []*aheadReq) bool {
	ctx := context.WithoutCancel(ticks[0].ctx)
	lazy := true
	n := len(ticks)
	runs, owners, hashes, newHashes, states, outcomes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	gens, heads, newHeads, dues := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	injected := make([]*int64, n)
	for i, r := range ticks {
		lazy = lazy && r.tick.MayLag
		runs[i], owners[i], gens[i], heads[i], hashes[i] = r.lease.RunID, r.lease.Owner, r.lease.Generation, r.h.head, r.h.hash
		newHeads[i], states[i], outcomes[i], dues[i] = r.h.head+int64(len(r.tick.Events)), r.tick.State, r.tick.Outcome, nanos(r.tick.DueAt)
		if v, ok := s.injected().(int64); ok {
			injected[i] = &v
		}
	}
	nexts := make([]runHead, n)
	commitSent, err := s.once(ctx, func(t *wtx) error {
		t.lazy, t.lazySent, t.testSetting = lazy, lazy, testSetting
		t.implicit = implicitTick
		var m mergedRows
		for i, r := range ticks {
			nexts[i] = r.h
			chains := chainOf(r.h.hash, r.h.head, r.tick.Events)
			newHashes[i] = r.h.hash
			if chains.len() > 0 {
				newHashes[i] = chains.last
			}
			if err := m.add(s, int32(i+1), r.lease, r.tick, &nexts[i], chains); err != nil {
				return err
			}
		}
		t.Queue(mergedFenceSQL, runs, owners, gens, heads, hashes, newHeads, newHashes, states, outcomes, injected, lazy, int64(n), dues)
		t.Queue(mergedSQL(m.parts), m.args()...)
		return t.commit(ctx)
	})
	if s.testMerged != nil {
		s.testMerged(n, err == nil)
	}
	switch {
	case err == nil:
		for i, r := range ticks {
			r.next, r.done, r.err = nexts[i], true, nil
		}
		return true
	case commitSent && !rolledBack(err):
		for _, r := range ticks {
			r.next, r.done, r.err = r.h, true, err
		}
		return true
	}
	return false
}

// mergeableGroup reports whether ticks may go as one merged group: more than
// one, of distinct runs, each a mergedTick.
func mergeableGroup(ticks []*aheadReq) bool {
	if len(ticks) < 2 {
		return false
	}
	seen := make(map[string]bool, len(ticks))
	for _, r := range ticks {
		if seen[r.lease.RunID] || !mergedTick(r.tick) {
			return false
		}
		seen[r.lease.RunID] = true
	}
	return true
}
