package postgres

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// The SQLite store is the reference: random sequences of operations —
// runs created, leases taken, renewed, released and lost to the clock,
// ticks with events, intents, approvals, attempts, results, receipts and
// inbox consumption, submissions, grants, revocations, quarantines — go to
// both stores, which must answer every one with the same code and the same
// values, and hold the same record at the end.
func TestDifferentialAgainstSQLite(t *testing.T) {
	clock := storetest.NewClock()
	pgs := openTest(t, Options{Clock: clock.Now})
	ref, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ref.db"), sqlite.Options{Clock: clock.Now})
	must(t, err)
	defer ref.Close()
	var iter atomic.Int64
	outcomes := map[store.Code]int{} // what the commits came to, across all checks
	rapid.Check(t, func(rt *rapid.T) {
		p := fmt.Sprintf("i%d-", iter.Add(1)) // one store for all checks; ids never collide
		runs := []string{p + "r0", p + "r1"}
		owners := []string{"A", "B"}
		leases := map[string]store.Lease{}
		n := 0
		next := func() string { n++; return fmt.Sprintf("%s%d", p, n) }
		same := func(what string, a, b any) {
			if !reflect.DeepEqual(a, b) {
				rt.Fatalf("%s: sqlite %#v, postgres %#v", what, a, b)
			}
		}
		codes := func(what string, e1, e2 error) {
			if store.CodeOf(e1) != store.CodeOf(e2) {
				rt.Fatalf("%s: sqlite %v, postgres %v", what, e1, e2)
			}
		}
		for _, id := range runs {
			r := store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "S"}
			codes("create", ref.CreateRun(ctx, r), pgs.CreateRun(ctx, r))
			l1, e1 := ref.AcquireLease(ctx, id, "A", 10*time.Second)
			l2, e2 := pgs.AcquireLease(ctx, id, "A", 10*time.Second)
			codes("acquire", e1, e2)
			same("lease", l1, l2)
			leases[id+"A"] = l1
		}
		var intents, approvals, inbound []string
		rt.Repeat(map[string]func(*rapid.T){
			"acquire": func(rt *rapid.T) {
				run, owner := rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom(owners).Draw(rt, "owner")
				l1, e1 := ref.AcquireLease(ctx, run, owner, 10*time.Second)
				l2, e2 := pgs.AcquireLease(ctx, run, owner, 10*time.Second)
				codes("acquire", e1, e2)
				same("lease", l1, l2)
				if e1 == nil {
					leases[run+owner] = l1
				}
			},
			"renew": func(rt *rapid.T) {
				run, owner := rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom(owners).Draw(rt, "owner")
				l := leases[run+owner]
				l1, e1 := ref.RenewLease(ctx, l, 10*time.Second)
				l2, e2 := pgs.RenewLease(ctx, l, 10*time.Second)
				codes("renew", e1, e2)
				same("renewed", l1, l2)
			},
			"release": func(rt *rapid.T) {
				run, owner := rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom(owners).Draw(rt, "owner")
				l := leases[run+owner]
				codes("release", ref.ReleaseLease(ctx, l), pgs.ReleaseLease(ctx, l))
			},
			"time passes": func(rt *rapid.T) {
				clock.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "seconds")) * time.Second)
			},
			"grant": func(rt *rapid.T) {
				id := next()
				body := []byte(fmt.Sprintf(`{"a":%q}`, id))
				a := store.Approval{ID: id, RunID: rapid.SampledFrom(runs).Draw(rt, "run"), RequestDigest: "sha256:req", Nonce: "n" + id,
					Body: body, Digest: store.BodyDigest(body), ExpiresAt: clock.Now().Add(time.Duration(rapid.IntRange(1, 30).Draw(rt, "ttl")) * time.Second)}
				codes("grant", ref.GrantApproval(ctx, a), pgs.GrantApproval(ctx, a))
				approvals = append(approvals, id)
			},
			"revoke": func(rt *rapid.T) {
				if len(approvals) == 0 {
					rt.Skip("no approvals")
				}
				id := rapid.SampledFrom(approvals).Draw(rt, "approval")
				codes("revoke", ref.RevokeApproval(ctx, id), pgs.RevokeApproval(ctx, id))
			},
			"submit": func(rt *rapid.T) {
				id := rapid.SampledFrom([]string{"m1", "m2", "m3"}).Draw(rt, "inbound")
				in := storetest.Inb(rapid.SampledFrom(runs).Draw(rt, "run"), id, "INPUT", fmt.Sprintf(`{"v":%d}`, rapid.IntRange(0, 1).Draw(rt, "v")))
				codes("submit", ref.Submit(ctx, in), pgs.Submit(ctx, in))
				inbound = append(inbound, id)
			},
			"quarantine": func(rt *rapid.T) {
				if rapid.IntRange(0, 19).Draw(rt, "rarely") != 0 {
					rt.Skip("quarantine is rare")
				}
				run := rapid.SampledFrom(runs).Draw(rt, "run")
				codes("quarantine", ref.Quarantine(ctx, run, "test"), pgs.Quarantine(ctx, run, "test"))
			},
			"begin": func(rt *rapid.T) {
				if len(intents) == 0 {
					rt.Skip("no intents")
				}
				run, owner := rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom(owners).Draw(rt, "owner")
				id := rapid.SampledFrom(intents).Draw(rt, "intent")
				a1, e1 := ref.BeginAttempt(ctx, leases[run+owner], id)
				a2, e2 := pgs.BeginAttempt(ctx, leases[run+owner], id)
				codes("begin", e1, e2)
				same("attempt", a1, a2)
			},
			"commit": func(rt *rapid.T) {
				run, owner := rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom([]string{"A", "A", "A", "B"}).Draw(rt, "owner")
				head := int64(0)
				if r, err := ref.Run(ctx, run); err == nil {
					head = r.Head
				}
				tick := store.Tick{ExpectHead: head + int64(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(rt, "head skew"))}
				for i := rapid.IntRange(0, 4).Draw(rt, "events"); i > 0; i-- {
					tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"n":%d}`, n)))
				}
				if rapid.Bool().Draw(rt, "intent") {
					id := next()
					key := rapid.SampledFrom([]string{p + "k1", p + "k1", p + "k1", p + "k-" + id}).Draw(rt, "key")
					in := storetest.In(id, key, rapid.SampledFrom([]string{"pay 5", "pay 6"}).Draw(rt, "content"))
					if len(approvals) > 0 && rapid.Bool().Draw(rt, "approved") {
						ap := rapid.SampledFrom(approvals).Draw(rt, "approval")
						in.ApprovalID = ap
						tick.Approvals = []store.ApprovalUse{{ApprovalID: ap, IntentID: id}}
					}
					tick.Intents = []store.Intent{in}
					if rapid.Bool().Draw(rt, "begin now") {
						tick.Begin = []string{id}
					}
					intents = append(intents, id)
				}
				if len(intents) > 0 && rapid.Bool().Draw(rt, "result") {
					tick.Results = []store.AttemptResult{{IntentID: rapid.SampledFrom(intents).Draw(rt, "of"), N: int64(rapid.IntRange(1, 2).Draw(rt, "n")),
						Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry}}
				}
				if len(intents) > 0 && rapid.Bool().Draw(rt, "receipt") {
					rc := []byte(`{"ok":true}`)
					tick.Receipts = []store.Receipt{{IntentID: rapid.SampledFrom(intents).Draw(rt, "closes"), Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}}
				}
				if len(inbound) > 0 && rapid.Bool().Draw(rt, "consume") {
					tick.Consume = []string{rapid.SampledFrom(inbound).Draw(rt, "msg")}
				}
				if rapid.IntRange(0, 19).Draw(rt, "ends") == 0 {
					tick.State, tick.Outcome = "DONE", "success"
				}
				if rapid.Bool().Draw(rt, "due") {
					tick.DueAt = time.Unix(0, rapid.Int64Range(1, 1<<62).Draw(rt, "due at")).UTC()
				}
				l := leases[run+owner]
				e1 := ref.Commit(ctx, l, tick)
				codes("commit", e1, pgs.Commit(ctx, l, tick))
				outcomes[store.CodeOf(e1)]++
			},
		})
		for _, run := range runs {
			r1, e1 := ref.Run(ctx, run)
			r2, e2 := pgs.Run(ctx, run)
			codes("run", e1, e2)
			same("run", r1, r2)
			for name, read := range map[string]func(store.Store) (any, error){
				"events":   func(s store.Store) (any, error) { return s.Events(ctx, run, 0) },
				"intents":  func(s store.Store) (any, error) { return s.Intents(ctx, run) },
				"receipts": func(s store.Store) (any, error) { return s.Receipts(ctx, run) },
				"inbox":    func(s store.Store) (any, error) { return s.Inbox(ctx, run, false) },
				"trace":    func(s store.Store) (any, error) { return s.Trace(ctx, run) },
			} {
				v1, e1 := read(ref)
				v2, e2 := read(pgs)
				codes(name, e1, e2)
				same(name, v1, v2)
			}
			c1, e1 := ref.Checkpoint(ctx, run)
			c2, e2 := pgs.Checkpoint(ctx, run)
			codes("checkpoint", e1, e2)
			same("checkpoint", c1, c2)
			// A tick's events are one row in PostgreSQL, one each in
			// SQLite: read from after every position, inside a row or at
			// its end, they are the same.
			for after := int64(0); after <= r1.Head+1; after++ {
				v1, e1 := ref.Events(ctx, run, after)
				v2, e2 := pgs.Events(ctx, run, after)
				codes("events after", e1, e2)
				same(fmt.Sprintf("events after %d", after), v1, v2)
			}
		}
		// The records verify and replay read, several runs at a time.
		for _, all := range []bool{false, true} {
			recs1, errs1 := ref.ReadRunRecords(ctx, runs, all)
			recs2, errs2 := pgs.ReadRunRecords(ctx, runs, all)
			for i := range runs {
				codes("records", errs1[i], errs2[i])
				same("records", recs1[i], recs2[i])
			}
		}
		for _, id := range intents {
			a1, e1 := ref.Attempts(ctx, id)
			a2, e2 := pgs.Attempts(ctx, id)
			codes("attempts", e1, e2)
			same("attempts", a1, a2)
		}
		for _, id := range approvals {
			a1, e1 := ref.Approval(ctx, id)
			a2, e2 := pgs.Approval(ctx, id)
			codes("approval", e1, e2)
			same("approval", a1, a2)
		}
	})
	// The generator must reach both sides of the interesting branches.
	t.Logf("commit outcomes over %d checks: %v", iter.Load(), outcomes)
	for _, c := range []store.Code{"", store.CodeFenced, store.CodeHeadMismatch, store.CodeInvalidTransition} {
		if outcomes[c] == 0 {
			t.Errorf("no commit ended with %q", c)
		}
	}
}
