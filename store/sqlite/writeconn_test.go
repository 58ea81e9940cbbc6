package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// TestWriterLibIsTheDriver holds the writing connection opened through
// SQLite's interface (decision 1726) to the driver's own statements on a
// connection of the database's pool, as the writer ran before. Random
// sequences over two runs, on two stores at the same clock readings, one
// writing through the driver: ticks of every part (events, intents begun
// or not, attempt results, receipts, approvals used, inbox entries
// consumed or submitted, checkpoints, traces, state changes, ends), lagging
// and durable; and ticks refused by the store (a stale head or lease, an
// idempotency key reused with the same or other content, an unknown or
// expired approval, a result for no attempt, a receipt for no intent, an
// entry already in the inbox) or by SQLite (an intent id or a receipt
// reused: constraint failures, a run created twice), a log write failing
// with SQLITE_FULL; submissions, grants, renewals, quarantines, reads and
// changes through another connection between them. Every caller's error,
// its text included, and every row of every table must be the same.
func TestWriterLibIsTheDriver(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, viaDriver bool) *Store {
		s := openLingering(t, filepath.Join(dir, name+".db"))
		s.w.viaDriver = viaDriver
		return s
	}
	lib, drv := open("lib", false), open("driver", true)
	defer lib.Close()
	defer drv.Close()
	var mu sync.Mutex
	fail := map[string]bool{}
	h := func(name string, n int64) int32 {
		mu.Lock()
		defer mu.Unlock()
		if fail[name] {
			fail[name] = false
			return sqlite3.SQLITE_FULL
		}
		return 0
	}
	if !walFlushTest.CompareAndSwap(nil, &h) {
		t.Fatal("another test's flush hook is set")
	}
	defer walFlushTest.Store(nil)

	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		runs := []string{fmt.Sprintf("a%d", n), fmt.Sprintf("b%d", n)}
		type op struct {
			kind        string
			run         int
			events      int
			lag, expect bool
			state       string
			pick        int
		}
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op {
			return op{
				kind: rapid.SampledFrom([]string{"tick", "tick", "intent", "intent", "result", "receipt", "dupkey", "dupid", "approved",
					"consume", "own", "owndup", "stale", "fenced", "end", "submit", "grant", "renew", "quarantine", "read",
					"outside", "full", "create"}).Draw(t, "kind"),
				run:    rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "run"),
				events: rapid.IntRange(0, 3).Draw(t, "events"),
				lag:    rapid.IntRange(0, 2).Draw(t, "lag") > 0,
				expect: rapid.IntRange(0, 3).Draw(t, "expect") == 0,
				state:  rapid.SampledFrom([]string{"", "S", "T"}).Draw(t, "state"),
				pick:   rapid.IntRange(0, 5).Draw(t, "pick"),
			}
		}), 1, 30).Draw(rt, "ops")

		play := func(s *Store, path string) ([]string, map[string][]string) {
			ctx := context.Background()
			leases := leaseRuns(rt, s, runs)
			heads := make([]int64, len(runs))
			pending := make([][]string, len(runs))
			var intents [][2]string // id, key
			var out []string
			submitted := 0
			pickIntent := func(k int) [2]string {
				if len(intents) == 0 {
					return [2]string{fmt.Sprintf("none%d", n), "none"}
				}
				return intents[k%len(intents)]
			}
			for i, o := range ops {
				id, l := runs[o.run], leases[o.run]
				tk := store.Tick{ExpectHead: heads[o.run], MayLag: o.lag, ExpectInboxEmpty: o.expect, State: o.state}
				for e := 0; e < o.events; e++ {
					tk.Events = append(tk.Events, storetest.Ev("E", fmt.Sprintf(`{"op":%d,"e":%d}`, i, e)))
				}
				if o.pick%2 == 0 {
					tk.Trace = []store.TraceRecord{{Kind: "t", Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}, {Kind: "u", Body: []byte{}}}
				}
				if o.pick%3 == 0 {
					tk.Checkpoint = &store.Checkpoint{FormatVersion: 1, Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}
					tk.Checkpoint.Digest = store.BodyDigest(tk.Checkpoint.Body)
				}
				var err error
				var newIntent [2]string
				switch o.kind {
				case "intent", "dupkey", "dupid", "approved", "result":
					tk.MayLag = false // refused as invalid input otherwise
				}
				switch o.kind {
				case "submit":
					submitted++
					in := storetest.Inb(id, fmt.Sprintf("in%d", submitted), "approval", fmt.Sprintf(`{"op":%d}`, i))
					if err = s.Submit(ctx, in); err == nil {
						pending[o.run] = append(pending[o.run], in.ID)
					}
					out = append(out, fmt.Sprintf("%d submit %s: %v", i, id, err))
					continue
				case "grant":
					body := []byte(fmt.Sprintf(`{"op":%d}`, i))
					exp := time.Unix(1700000000, 0).Add(time.Duration(o.pick-2) * time.Hour)
					err = s.GrantApproval(ctx, store.Approval{ID: fmt.Sprintf("ap%d", o.pick), RunID: id, RequestDigest: store.BodyDigest([]byte("req")),
						Nonce: fmt.Sprintf("nonce%d-%d", n, i), Body: body, Digest: store.BodyDigest(body), ExpiresAt: exp})
					out = append(out, fmt.Sprintf("%d grant %s: %v", i, id, err))
					continue
				case "renew":
					var nl store.Lease
					if nl, err = s.RenewLease(ctx, l, time.Duration(i+1)*time.Hour); err == nil {
						leases[o.run] = nl
					}
					out = append(out, fmt.Sprintf("%d renew %s: %v", i, id, err))
					continue
				case "quarantine":
					err = s.Quarantine(ctx, id, "test")
					out = append(out, fmt.Sprintf("%d quarantine %s: %v", i, id, err))
					continue
				case "outside":
					s.settle(ctx)
					_, err = s.DB().ExecContext(ctx, `UPDATE runs SET state = 'X' WHERE run_id = ?`, id)
					out = append(out, fmt.Sprintf("%d outside %s: %v", i, id, err))
					continue
				case "read":
					_, err = s.Run(ctx, id)
					out = append(out, fmt.Sprintf("%d read %s: %v", i, id, err))
					continue
				case "create":
					err = s.CreateRun(ctx, store.Run{ID: runs[o.pick%2], WorkflowID: "wf", State: "S"})
					out = append(out, fmt.Sprintf("%d create %s: %v", i, id, err))
					continue
				case "full":
					mu.Lock()
					fail[path+"-wal"] = true
					mu.Unlock()
				case "intent":
					in := storetest.In(fmt.Sprintf("i%d-%d", n, i), fmt.Sprintf("k%d-%d", n, i), fmt.Sprintf("c%d", i))
					tk.Intents = []store.Intent{in}
					if o.pick%2 == 1 {
						tk.Begin = []string{in.ID}
					}
					newIntent = [2]string{in.ID, in.IdempotencyKey}
				case "dupkey":
					p := pickIntent(o.pick)
					content := fmt.Sprintf("c%d", i)
					if o.pick%2 == 0 {
						content = "other"
					}
					tk.Intents = []store.Intent{storetest.In(fmt.Sprintf("j%d-%d", n, i), p[1], content)}
				case "dupid":
					p := pickIntent(o.pick)
					tk.Intents = []store.Intent{storetest.In(p[0], fmt.Sprintf("k%d-%d", n, i), "c")}
				case "result":
					p := pickIntent(o.pick)
					tk.Results = []store.AttemptResult{{IntentID: p[0], N: 1, Status: store.AttemptStatus("succeeded"), Detail: "d", Outbox: store.OutboxDone}}
				case "receipt":
					p := pickIntent(o.pick)
					body := []byte(fmt.Sprintf(`{"op":%d}`, i))
					tk.Receipts = []store.Receipt{{IntentID: p[0], Outcome: "confirmed_success", Body: body, Digest: store.BodyDigest(body)}}
					tk.MayLag = false
				case "approved":
					in := storetest.In(fmt.Sprintf("i%d-%d", n, i), fmt.Sprintf("k%d-%d", n, i), fmt.Sprintf("c%d", i))
					in.ApprovalID = fmt.Sprintf("ap%d", o.pick)
					tk.Intents = []store.Intent{in}
					tk.Approvals = []store.ApprovalUse{{ApprovalID: in.ApprovalID, IntentID: in.ID}}
					newIntent = [2]string{in.ID, in.IdempotencyKey}
				case "consume", "own", "stale", "fenced", "end":
					shapeTwinTick(o.kind, id, i, &submitted, pending[o.run], &tk, &l)
				case "owndup":
					in := storetest.Inb(id, "in1", "approval", fmt.Sprintf(`{"own":%d}`, i))
					tk.Submit, tk.Consume, tk.MayLag = []store.Inbound{in}, []string{in.ID}, false
				}
				err = s.Commit(ctx, l, tk)
				out = append(out, fmt.Sprintf("%d %s %s: %v", i, o.kind, id, err))
				if err == nil {
					heads[o.run] += int64(len(tk.Events))
					if o.kind == "consume" {
						pending[o.run] = nil
					}
					if newIntent[0] != "" {
						intents = append(intents, newIntent)
					}
				}
			}
			s.settle(ctx)
			mu.Lock()
			delete(fail, path+"-wal")
			mu.Unlock()
			return out, dumpTables(rt, s)
		}
		wantOut, want := play(drv, filepath.Join(dir, "driver.db"))
		gotOut, got := play(lib, filepath.Join(dir, "lib.db"))
		sameOutcomesAndTables(rt, "through SQLite's interface", "through the driver", gotOut, wantOut, got, want)
	})
}

// The writing connection prepares each statement once: over governed
// steps (an input tick submitting and consuming an entry, an intent begun;
// a lagging receipt tick), no statement kept on it was prepared again by
// SQLite (SQLITE_STMTSTATUS_REPREPARE). It fails when the statements'
// bindings are cleared after each run (sqlite3_clear_bindings marks a
// statement whose plan used a parameter expired).
func TestWriterStatementsPreparedOnce(t *testing.T) {
	ctx := context.Background()
	s := openLingering(t, filepath.Join(t.TempDir(), "flrh.db"))
	defer s.Close()
	l := leasedRun(t, s)
	head := int64(0)
	for n := 0; n < 20; n++ {
		id := fmt.Sprintf("i-%d", n)
		in := storetest.Inb("r", fmt.Sprintf("in-%d", n), "input", fmt.Sprintf(`{"n":%d}`, n))
		first := store.Tick{ExpectHead: head, State: "EFFECT", Submit: []store.Inbound{in}, Consume: []string{in.ID},
			Intents: []store.Intent{storetest.In(id, "k-"+id, fmt.Sprint(n))}, Begin: []string{id},
			Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"n":%d}`, n))}, ExpectInboxEmpty: true}
		if err := s.Commit(ctx, l, first); err != nil {
			t.Fatal(err)
		}
		second := store.Tick{ExpectHead: head + 1, State: "INGEST", MayLag: true,
			Results:  []store.AttemptResult{{IntentID: id, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts: []store.Receipt{{IntentID: id, Outcome: "confirmed_success", Body: []byte(`{"ok":true}`), Digest: store.BodyDigest([]byte(`{"ok":true}`))}},
			Events:   []store.Event{storetest.Ev("E", fmt.Sprintf(`{"m":%d}`, n))}}
		if err := s.Commit(ctx, l, second); err != nil {
			t.Fatal(err)
		}
		head += 2
	}
	s.settle(ctx)
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.lc == nil {
		t.Fatal("no writing connection")
	}
	for q, st := range s.w.lc.stmts {
		if n := sqlite3.Xsqlite3_stmt_status(s.w.lc.tls, st.p, sqlite3.SQLITE_STMTSTATUS_REPREPARE, 0); n != 0 {
			t.Errorf("prepared again %d times: %s", n, q)
		}
	}
}
