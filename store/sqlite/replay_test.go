package sqlite

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// TestJoinedWriteWithoutSavepointMatchesSavepoint holds a write that joins
// a lagging batch's open transaction without a savepoint (a refusal rolls
// the transaction back and runs the lagging ticks again) to the same write
// in its own savepoint. Random sequences of lagging ticks, durable ticks
// and ticks refused before or after they have written (a stale head, an
// unknown attempt, a reused idempotency key, a receipt for an unknown
// intent) run on two stores at the same clock readings; every caller's
// outcome and, at the end, every row of every table must be the same.
func TestJoinedWriteWithoutSavepointMatchesSavepoint(t *testing.T) {
	dir := t.TempDir()
	open := func(savepoints bool) *Store {
		s := openLingering(t, filepath.Join(dir, fmt.Sprintf("%v.db", savepoints)))
		s.testSavepoints = savepoints
		return s
	}
	withSP, without := open(true), open(false)
	defer withSP.Close()
	defer without.Close()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		runID := fmt.Sprintf("r%d", n) // a run of its own in both stores
		type op struct {
			kind   string
			events int
			lag    bool
		}
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op {
			return op{
				kind:   rapid.SampledFrom([]string{"plain", "plain", "intent", "result", "stale", "unknown-attempt", "reused-key", "unknown-receipt"}).Draw(t, "kind"),
				events: rapid.IntRange(0, 3).Draw(t, "events"),
				lag:    rapid.Bool().Draw(t, "lag"),
			}
		}), 1, 24).Draw(rt, "ops")

		run := func(s *Store) ([]string, map[string][]string) {
			ctx := context.Background()
			if err := s.CreateRun(ctx, store.Run{ID: runID, WorkflowID: "wf", State: "S"}); err != nil {
				rt.Fatal(err)
			}
			l, err := s.AcquireLease(ctx, runID, "w", time.Hour)
			if err != nil {
				rt.Fatal(err)
			}
			var head int64
			var open []string // intents begun, not yet closed
			intents := 0
			var outcomes []string
			for i, o := range ops {
				tk := store.Tick{ExpectHead: head, MayLag: o.lag}
				for e := 0; e < o.events; e++ {
					tk.Events = append(tk.Events, storetest.Ev("E", fmt.Sprintf(`{"op":%d,"e":%d}`, i, e)))
				}
				tk.Trace = []store.TraceRecord{{Kind: "t", Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}}
				tk.Checkpoint = &store.Checkpoint{FormatVersion: 1, Body: []byte(fmt.Sprintf(`{"op":%d}`, i))}
				tk.Checkpoint.Digest = store.BodyDigest(tk.Checkpoint.Body)
				switch o.kind {
				case "intent":
					intents++
					id := fmt.Sprintf("%s-i%d", runID, intents)
					tk.Intents = []store.Intent{storetest.In(id, "k-"+id, id)}
					tk.Begin = []string{id}
					tk.MayLag = false
				case "result":
					if len(open) > 0 {
						id := open[0]
						tk.Results = []store.AttemptResult{{IntentID: id, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}
						tk.Receipts = []store.Receipt{{IntentID: id, Outcome: "confirmed_success", Body: []byte(`{"ok":true}`), Digest: store.BodyDigest([]byte(`{"ok":true}`))}}
					}
				case "stale":
					tk.ExpectHead = head + 1
				case "unknown-attempt":
					tk.Results = []store.AttemptResult{{IntentID: "nope", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}
				case "reused-key":
					tk.Intents = []store.Intent{storetest.In(fmt.Sprintf("%s-x%d", runID, i), "k-"+runID+"-i1", "other")}
					tk.MayLag = false
				case "unknown-receipt":
					tk.Receipts = []store.Receipt{{IntentID: "nope", Outcome: "confirmed_success", Body: []byte(`{"ok":true}`), Digest: store.BodyDigest([]byte(`{"ok":true}`))}}
				}
				err := s.Commit(ctx, l, tk)
				// The caller may reuse what it passed once Commit returns.
				for _, ev := range tk.Events {
					clear(ev.Body)
				}
				clear(tk.Checkpoint.Body)
				clear(tk.Trace[0].Body)
				outcomes = append(outcomes, fmt.Sprintf("%d %s: %s", i, o.kind, store.CodeOf(err)))
				if err == nil {
					head += int64(len(tk.Events))
					switch o.kind {
					case "intent":
						open = append(open, tk.Intents[0].ID)
					case "result":
						if len(tk.Results) > 0 {
							open = open[1:]
						}
					}
				}
			}
			return outcomes, dumpTables(rt, s)
		}
		wantOut, want := run(withSP)
		gotOut, got := run(without)
		sameOutcomesAndTables(rt, "without a savepoint", "with one", gotOut, wantOut, got, want)
	})
}

// openLingering opens a store at path whose clock reads a millisecond
// later at each reading (so that two stores given the same calls record
// the same times) and whose lagging batches stay open until the next
// write, a read or Close commits them.
func openLingering(t *testing.T, path string) *Store {
	t.Helper()
	var tick int64
	s, err := Open(context.Background(), path,
		Options{Clock: func() time.Time { tick++; return time.Unix(1700000000, tick*int64(time.Millisecond)) }})
	if err != nil {
		t.Fatal(err)
	}
	s.lingerFor = time.Hour
	return s
}

// lingeringRun opens a store on a new file whose lagging ticks stay open
// an hour, closed when t ends, and leases its run "r".
func lingeringRun(t *testing.T) (*Store, store.Lease) {
	t.Helper()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	t.Cleanup(func() { s.Close() })
	s.lingerFor = time.Hour
	return s, leasedRun(t, s)
}

// sameOutcomesAndTables fails rt unless two stores given the same calls
// answered them alike (got, want) and left every table's rows alike.
func sameOutcomesAndTables(rt *rapid.T, gotIs, wantIs string, gotOut, wantOut []string, got, want map[string][]string) {
	rt.Helper()
	if !slices.Equal(gotOut, wantOut) {
		rt.Fatalf("outcomes %s:\n%s\n%s:\n%s", gotIs, strings.Join(gotOut, "\n"), wantIs, strings.Join(wantOut, "\n"))
	}
	for _, tb := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[tb], want[tb]) {
			rt.Fatalf("table %s %s:\n%s\n%s:\n%s", tb, gotIs, strings.Join(got[tb], "\n"), wantIs, strings.Join(want[tb], "\n"))
		}
	}
}

// dumpTables reads every row of every table of s, each table's rows
// sorted.
func dumpTables(t interface{ Fatal(...any) }, s *Store) map[string][]string {
	out := map[string][]string{}
	for _, tb := range []string{"runs", "events", "checkpoints", "trace", "intents", "outbox", "attempts", "receipts", "inbox", "approvals"} {
		for _, vals := range queryRows(t.Fatal, s.DB(), `SELECT * FROM `+tb) {
			out[tb] = append(out[tb], fmt.Sprintf("%#v", vals))
		}
		sort.Strings(out[tb])
	}
	return out
}

// A lagging tick, then a durable tick that writes and is refused, joining
// its transaction without a savepoint: the lagging tick is committed as it
// was, and the refused tick left nothing.
func TestJoinedWriteRefusedKeepsLaggingTicks(t *testing.T) {
	ctx := context.Background()
	s, l := lingeringRun(t)
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatal(err)
	}
	if !s.lingering() || !s.canReplay() {
		t.Fatalf("after a lagging tick: open %v, can run it again %v; want both", s.lingering(), s.canReplay())
	}
	bad := lagTick(1, `{"n":2}`, false)
	bad.Results = []store.AttemptResult{{IntentID: "nope", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}
	if err := s.Commit(ctx, l, bad); store.CodeOf(err) != store.CodeInvalidTransition {
		t.Fatalf("refused tick: %v, want %s", err, store.CodeInvalidTransition)
	}
	if s.lingering() {
		t.Fatal("the lagging tick's transaction is still open after a refused write joined it")
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || string(evs[0].Body) != `{"n":1}` {
		t.Fatalf("events after the refusal: %+v, want the lagging tick's one", evs)
	}
	if err := s.Commit(ctx, l, lagTick(1, `{"n":3}`, false)); err != nil {
		t.Fatalf("the next tick from the lagging tick's head: %v", err)
	}
}

// Every slice and body of a cloned tick is its own, field by field
// (checked by reflection, so a member added to store.Tick later is
// covered), and two clones share no bytes.
func TestCloneTickSharesNothing(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	tk := store.Tick{
		Events:     []store.Event{{Kind: "E", Body: b(`{}`), Digest: "d"}},
		Checkpoint: &store.Checkpoint{Body: b(`{"c":1}`)},
		Intents:    []store.Intent{{ID: "i", Body: b(`{"i":1}`)}},
		Approvals:  []store.ApprovalUse{{ApprovalID: "a"}},
		Results:    []store.AttemptResult{{IntentID: "i"}},
		Receipts:   []store.Receipt{{IntentID: "i", Body: b(`{"r":1}`)}},
		Consume:    []string{"c"},
		Begin:      []string{"i"},
		Submit: []store.Inbound{{ID: "s", Body: b(`{"s":1}`), Grant: &store.Approval{ID: "g", Body: b(`{"g":1}`)},
			Seen: &store.PendingSeen{IDs: []string{"e"}, Kinds: []string{"approve"}}}},
		Trace:   []store.TraceRecord{{Kind: "t", Body: b(`{"t":1}`)}},
		Notices: []store.Notice{{Kind: store.NoticeEnded, Body: b(`{"n":1}`), Sent: []string{"chat"}, Waits: []store.RouteWait{{Route: "pager", After: time.Second}}}},
	}
	var w writer
	c, c2 := w.cloneTick(tk), w.cloneTick(tk)
	if !reflect.DeepEqual(c, tk) || !reflect.DeepEqual(c2, tk) {
		t.Fatalf("clones %+v, %+v differ from %+v", c, c2, tk)
	}
	var walk func(path string, a, b reflect.Value)
	walk = func(path string, a, b reflect.Value) {
		switch a.Kind() {
		case reflect.Slice:
			if a.Len() == 0 {
				t.Fatalf("%s is empty in the test's tick: fill it", path)
			}
			if a.Pointer() == b.Pointer() {
				t.Errorf("%s shares its array", path)
			}
			for i := 0; i < a.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
			}
		case reflect.Pointer:
			if a.IsNil() {
				t.Fatalf("%s is nil in the test's tick: fill it", path)
			}
			if a.Pointer() == b.Pointer() {
				t.Errorf("%s is shared", path)
			}
			walk(path, a.Elem(), b.Elem())
		case reflect.Struct:
			for i := 0; i < a.NumField(); i++ {
				if a.Type().Field(i).IsExported() {
					walk(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
				}
			}
		}
	}
	walk("Tick", reflect.ValueOf(tk), reflect.ValueOf(c))
	walk("Tick", reflect.ValueOf(c), reflect.ValueOf(c2))
	c.Events[0].Body = append(c.Events[0].Body, 'x') // capped: must not run into the next copy
	if !reflect.DeepEqual(c2, tk) {
		t.Fatalf("appending to one clone's body changed another: %+v", c2)
	}
}
