package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// leasedRun creates run "r" in s and leases it to writer "w" for an hour.
func leasedRun(t testing.TB, s *Store) store.Lease {
	t.Helper()
	if err := s.CreateRun(context.Background(), store.Run{ID: "r", WorkflowID: "wf", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(context.Background(), "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openAt(t testing.TB, path string, clock func() time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// queued is how many writes wait for the next batch.
func (s *Store) queued() int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return len(s.group.queue)
}

type tagKey struct{}

func tagged(tag string) context.Context {
	return context.WithValue(context.Background(), tagKey{}, tag)
}

func tagOf(ctx context.Context) string { t, _ := ctx.Value(tagKey{}).(string); return t }

// forceBatch holds the first batch (a write from hold) until want more
// writes are queued behind it, so that those form the next batch together;
// it returns the batches seen, by their callers' tags.
func forceBatch(t *testing.T, s *Store, hold func(ctx context.Context) error, want int, writes ...func(ctx context.Context) error) ([][]string, []error) {
	t.Helper()
	var mu sync.Mutex
	var batches [][]string
	entered := make(chan struct{})
	first := true
	s.setTestBatch(func(reqs []context.Context) {
		mu.Lock()
		var tags []string
		for _, r := range reqs {
			tags = append(tags, tagOf(r))
		}
		batches = append(batches, tags)
		wasFirst := first
		first = false
		mu.Unlock()
		if wasFirst {
			close(entered)
			deadline := time.Now().Add(10 * time.Second)
			for s.queued() < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
	})
	defer func() { s.setTestBatch(nil) }()
	holdErr := make(chan error, 1)
	go func() { holdErr <- hold(tagged("hold")) }()
	<-entered
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w(tagged(fmt.Sprint(i))) }()
	}
	wg.Wait()
	if err := <-holdErr; err != nil {
		t.Fatalf("holding write: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return batches, errs
}

func commitOne(s *Store, l store.Lease, head int64, body string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("E", body)},
			Intents: []store.Intent{storetest.In("i-"+l.RunID+"-"+body, "k-"+l.RunID+"-"+body, body)}})
	}
}

// A batch where one commit is fenced: that one is refused with its own
// error and leaves nothing; the others land. Two commits from the same
// head on one run: the first in batch order lands, the second sees its
// write and is refused with HEAD_MISMATCH, as one after the other.
func TestBatchRefusesOneLandsOthers(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	leases := map[string]store.Lease{}
	for _, id := range []string{"h", "a", "b", "c"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		leases[id] = l
	}
	stale := leases["b"]
	stale.Generation-- // an earlier holder's lease
	batches, errs := forceBatch(t, s, commitOne(s, leases["h"], 0, `{"h":1}`), 4,
		commitOne(s, leases["a"], 0, `{"a":1}`),
		commitOne(s, stale, 0, `{"b":1}`),
		commitOne(s, leases["c"], 0, `{"c":1}`),
		commitOne(s, leases["c"], 0, `{"c":2}`))
	if len(batches) != 2 || len(batches[1]) != 4 {
		t.Fatalf("batches = %v, want the hold alone and then all four together", batches)
	}
	if errs[0] != nil {
		t.Fatalf("commit on a: %v", errs[0])
	}
	if store.CodeOf(errs[1]) != store.CodeFenced {
		t.Fatalf("stale commit on b: %v, want FENCED", errs[1])
	}
	// Of the two commits on c, the one that ran first lands.
	firstC, secondC := 2, 3
	if strings.Index(strings.Join(batches[1], ","), "3") < strings.Index(strings.Join(batches[1], ","), "2") {
		firstC, secondC = 3, 2
	}
	if errs[firstC] != nil || store.CodeOf(errs[secondC]) != store.CodeHeadMismatch {
		t.Fatalf("commits on c from one head: first %v, second %v; want nil and HEAD_MISMATCH", errs[firstC], errs[secondC])
	}
	for id, want := range map[string]int64{"h": 1, "a": 1, "b": 0, "c": 1} {
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := s.Events(ctx, id, 0)
		ins, _ := s.Intents(ctx, id)
		if r.Head != want || int64(len(evs)) != want || int64(len(ins)) != want {
			t.Errorf("run %s: head %d, %d events, %d intents; want %d of each", id, r.Head, len(evs), len(ins), want)
		}
	}
	evs, _ := s.Events(ctx, "c", 0)
	if wantBody := map[int]string{2: `{"c":1}`, 3: `{"c":2}`}[firstC]; len(evs) == 1 && string(evs[0].Body) != wantBody {
		t.Errorf("run c holds %s, want the first commit's %s", evs[0].Body, wantBody)
	}
}

var errInjected = errors.New("injected COMMIT failure")

// A batch whose COMMIT fails: every caller gets the error, the fenced one
// included, and nothing of any of them is in the database; the store goes
// on committing afterwards.
func TestBatchCommitFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	leases := map[string]store.Lease{}
	for _, id := range []string{"h", "a", "b", "c"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
		l, _ := s.AcquireLease(ctx, id, "w", time.Hour)
		leases[id] = l
	}
	stale := leases["b"]
	stale.Generation--
	before := dump(t, s.DB())
	var commits atomic.Int64
	s.testCommit = func() error {
		if commits.Add(1) == 2 { // the hold commits; the batch behind it fails
			return errInjected
		}
		return nil
	}
	batches, errs := forceBatch(t, s, commitOne(s, leases["h"], 0, `{"h":1}`), 3,
		commitOne(s, leases["a"], 0, `{"a":1}`),
		commitOne(s, stale, 0, `{"b":1}`),
		func(ctx context.Context) error {
			_, err := s.RenewLease(ctx, leases["c"], 2*time.Hour)
			return err
		})
	s.testCommit = nil
	if len(batches) != 2 || len(batches[1]) != 3 {
		t.Fatalf("batches = %v", batches)
	}
	for i, err := range errs {
		if store.CodeOf(err) != store.CodeUnavailable || !errors.Is(err, errInjected) {
			t.Errorf("write %d: %v, want the COMMIT's failure", i, err)
		}
	}
	// Only the hold's commit is new.
	if err := commitOne(s, leases["h"], 1, `{"h":2}`)(ctx); err != nil {
		t.Fatal(err)
	}
	after := dump(t, s.DB())
	for _, id := range []string{"a", "b", "c"} {
		if rowsOf(before, id) != rowsOf(after, id) {
			t.Errorf("run %s changed though its batch failed:\nbefore %s\nafter  %s", id, rowsOf(before, id), rowsOf(after, id))
		}
	}
	if err := commitOne(s, leases["a"], 0, `{"a":1}`)(ctx); err != nil {
		t.Fatalf("commit after the failed batch: %v", err)
	}
}

// rowsOf is the lines of a dump that mention run id (quoted as dump writes it).
func rowsOf(d, id string) string {
	var out []string
	for _, l := range strings.Split(d, "\n") {
		if strings.Contains(l, fmt.Sprintf("%q", id)) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// dump writes every row of every table, in key order.
func dump(t testing.TB, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		for _, vals := range queryRows(t.Fatal, db, `SELECT * FROM "`+tb+`" ORDER BY 1, 2`) {
			fmt.Fprintf(&b, "%s:", tb)
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, " %q", fmt.Sprint(v))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// gcOp is one write of the property test, replayable on another store.
type gcOp struct {
	kind  string // commit, renew, release, acquire, submit, quarantine
	run   string
	owner string // the lease's owner: w (generation 1) or x (generation 2)
	head  int64
	nev   int
	key   string // an intent's idempotency key, "" for none
	cp    bool
	trace bool
	state string
	inID  string
	use   string // an inbound entry a commit consumes, "" for none
}

func (o gcOp) lease() store.Lease {
	gen := int64(1)
	if o.owner == "x" {
		gen = 2
	}
	return store.Lease{RunID: o.run, Owner: o.owner, Generation: gen}
}

// apply runs op i against s and says what came of it.
func (o gcOp) apply(ctx context.Context, s *Store, i int) string {
	var err error
	var got string
	switch o.kind {
	case "commit":
		tick := store.Tick{ExpectHead: o.head, State: o.state}
		for e := 0; e < o.nev; e++ {
			tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"op":%d,"e":%d}`, i, e)))
		}
		if o.key != "" {
			tick.Intents = []store.Intent{storetest.In(fmt.Sprintf("i%d", i), o.key, o.key+"/"+o.run)}
		}
		if o.cp {
			b := []byte(fmt.Sprintf(`{"cp":%d}`, i))
			tick.Checkpoint = &store.Checkpoint{FormatVersion: 1, Body: b, Digest: store.BodyDigest(b)}
		}
		if o.use != "" {
			tick.Consume = []string{o.use}
		}
		if o.trace {
			tick.Trace = []store.TraceRecord{{Kind: "t", Body: []byte(fmt.Sprintf(`{"t":%d}`, i))}}
		}
		err = s.Commit(ctx, o.lease(), tick)
	case "renew":
		_, err = s.RenewLease(ctx, o.lease(), time.Hour)
	case "release":
		err = s.ReleaseLease(ctx, o.lease())
	case "acquire":
		var l store.Lease
		l, err = s.AcquireLease(ctx, o.run, o.owner, time.Hour)
		got = fmt.Sprintf(" gen=%d", l.Generation)
	case "submit":
		err = s.Submit(ctx, storetest.Inb(o.run, o.inID, "input", fmt.Sprintf(`{"in":%q}`, o.inID)))
	case "quarantine":
		err = s.Quarantine(ctx, o.run, "op "+fmt.Sprint(i))
	}
	return string(store.CodeOf(err)) + got
}

func gcOpGen() *rapid.Generator[gcOp] {
	return rapid.Custom(func(t *rapid.T) gcOp {
		o := gcOp{
			kind:  rapid.SampledFrom([]string{"commit", "commit", "commit", "commit", "renew", "release", "acquire", "submit", "quarantine"}).Draw(t, "kind"),
			run:   rapid.SampledFrom([]string{"r1", "r2", "r3"}).Draw(t, "run"),
			owner: rapid.SampledFrom([]string{"w", "w", "x"}).Draw(t, "owner"),
			head:  rapid.Int64Range(0, 1).Draw(t, "head"),
			nev:   rapid.IntRange(0, 2).Draw(t, "events"),
			cp:    rapid.Bool().Draw(t, "checkpoint"),
			trace: rapid.Bool().Draw(t, "trace"),
			state: rapid.SampledFrom([]string{"", "S2"}).Draw(t, "state"),
			inID:  rapid.SampledFrom([]string{"in1", "in2"}).Draw(t, "inbound"),
		}
		if rapid.Bool().Draw(t, "consume") {
			o.use = rapid.SampledFrom([]string{"in1", "in2"}).Draw(t, "use")
		}
		if rapid.Bool().Draw(t, "intent") {
			o.key = rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "key")
		}
		return o
	})
}

// setupGC creates the property test's runs, each leased by w (generation 1).
func setupGC(t testing.TB, s *Store) {
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireLease(ctx, id, "w", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// N concurrent writes, batched as they come, leave the database exactly
// as the same writes applied one by one, in the order the batches ran
// them, and each gets the same answer.
func TestBatchEqualsSerial(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return at }
	var grouped atomic.Int64
	dir := t.TempDir()
	iter := 0
	rapid.Check(t, func(rt *rapid.T) {
		ops := rapid.SliceOfN(gcOpGen(), 2, 12).Draw(rt, "ops")
		iter++
		conc := openAt(t, filepath.Join(dir, fmt.Sprintf("c%d.db", iter)), clock)
		defer conc.Close()
		setupGC(t, conc)
		var mu sync.Mutex
		var order []int
		conc.setTestBatch(func(reqs []context.Context) {
			mu.Lock()
			defer mu.Unlock()
			if len(reqs) > 1 {
				grouped.Add(1)
			}
			for _, r := range reqs {
				order = append(order, r.Value(tagKey{}).(int))
			}
		})
		got := make([]string, len(ops))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, o := range ops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i] = o.apply(context.WithValue(context.Background(), tagKey{}, i), conc, i)
			}()
		}
		close(start)
		wg.Wait()
		if len(order) != len(ops) {
			rt.Fatalf("batches ran %d writes, want %d", len(order), len(ops))
		}

		serial := openAt(t, filepath.Join(dir, fmt.Sprintf("s%d.db", iter)), clock)
		defer serial.Close()
		setupGC(t, serial)
		for _, i := range order {
			if want := ops[i].apply(context.Background(), serial, i); got[i] != want {
				rt.Fatalf("op %d (%+v): batched %q, one by one %q (order %v)", i, ops[i], got[i], want, order)
			}
		}
		if a, b := dump(t, conc.DB()), dump(t, serial.DB()); a != b {
			rt.Fatalf("batched and one-by-one databases differ (order %v):\nbatched:\n%s\none by one:\n%s", order, a, b)
		}
	})
	if grouped.Load() == 0 {
		t.Fatal("no batch ever held more than one write; the property was not exercised")
	}
	t.Logf("%d batches of more than one write", grouped.Load())
}

// A panic in a caller's work (an approval check's, say) is raised in that
// caller, and the batch it ran in commits the others.
func TestBatchPanicStaysWithItsCaller(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	for _, id := range []string{"h", "a", "b"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
	}
	lh, _ := s.AcquireLease(ctx, "h", "w", time.Hour)
	la, _ := s.AcquireLease(ctx, "a", "w", time.Hour)
	lb, _ := s.AcquireLease(ctx, "b", "w", time.Hour)
	body := []byte(`{"approval_id":"ap","nonce":"n"}`)
	if err := s.GrantApproval(ctx, store.Approval{ID: "ap", RunID: "b", RequestDigest: store.BodyDigest([]byte("req")), Nonce: "n",
		Body: body, Digest: store.BodyDigest(body), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var recovered any
	_, errs := forceBatch(t, s, commitOne(s, lh, 0, `{"h":1}`), 2,
		commitOne(s, la, 0, `{"a":1}`),
		func(ctx context.Context) (err error) {
			defer func() { recovered = recover() }()
			in := storetest.In("ib", "kb", "b")
			in.ApprovalID = "ap"
			return s.Commit(ctx, lb, store.Tick{Events: []store.Event{storetest.Ev("E", `{"b":1}`)}, Intents: []store.Intent{in},
				Approvals: []store.ApprovalUse{{ApprovalID: "ap", IntentID: "ib", Check: func(store.Approval, time.Time) error { panic("check blew up") }}}})
		})
	if recovered != "check blew up" {
		t.Fatalf("the panicking caller recovered %v", recovered)
	}
	if errs[0] != nil {
		t.Fatalf("the other caller: %v", errs[0])
	}
	if r, _ := s.Run(ctx, "a"); r.Head != 1 {
		t.Fatalf("run a head %d, want 1", r.Head)
	}
	if r, _ := s.Run(ctx, "b"); r.Head != 0 {
		t.Fatalf("run b head %d, want 0", r.Head)
	}
	if a, _ := s.Approval(ctx, "ap"); a.Status != store.ApprovalGranted {
		t.Fatalf("approval %s after the panic, want granted", a.Status)
	}
}

// A caller whose context ends while it waits in the queue is skipped when
// its turn comes: it gets its context's error, nothing of it is written,
// and the others of its batch land.
func TestBatchSkipsCancelledCaller(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	leases := map[string]store.Lease{}
	for _, id := range []string{"h", "a", "b"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
		l, _ := s.AcquireLease(ctx, id, "w", time.Hour)
		leases[id] = l
	}
	cctx, cancel := context.WithCancel(tagged("cancelled"))
	entered := make(chan struct{})
	var once sync.Once
	var batches [][]string
	var mu sync.Mutex
	s.setTestBatch(func(reqs []context.Context) {
		mu.Lock()
		var tags []string
		for _, r := range reqs {
			tags = append(tags, tagOf(r))
		}
		batches = append(batches, tags)
		mu.Unlock()
		first := false
		once.Do(func() { first = true; close(entered) })
		if first {
			for s.queued() < 2 {
				time.Sleep(time.Millisecond)
			}
			cancel() // while both wait for the next batch
		}
	})
	holdErr := make(chan error, 1)
	go func() { holdErr <- commitOne(s, leases["h"], 0, `{"h":1}`)(tagged("hold")) }()
	<-entered
	errs := make(chan error, 2)
	go func() { errs <- commitOne(s, leases["a"], 0, `{"a":1}`)(cctx) }()
	go func() { errs <- commitOne(s, leases["b"], 0, `{"b":1}`)(tagged("b")) }()
	e1, e2 := <-errs, <-errs
	if err := <-holdErr; err != nil {
		t.Fatal(err)
	}
	s.setTestBatch(nil)
	if len(batches) != 2 || len(batches[1]) != 2 {
		t.Fatalf("batches = %v", batches)
	}
	var cancelled, landed error = e1, e2
	if !errors.Is(e1, context.Canceled) {
		cancelled, landed = e2, e1
	}
	if !errors.Is(cancelled, context.Canceled) || landed != nil {
		t.Fatalf("cancelled caller: %v; the other: %v", cancelled, landed)
	}
	if r, _ := s.Run(ctx, "a"); r.Head != 0 {
		t.Fatalf("the cancelled commit wrote: head %d", r.Head)
	}
	if r, _ := s.Run(ctx, "b"); r.Head != 1 {
		t.Fatalf("the other commit did not land: head %d", r.Head)
	}
}

// uncancelled keeps ctx's values and drops its cancellation and deadline:
// a context that can never be cancelled is kept as it is, any other is
// not cancelled when it is.
func TestUncancelledKeepsValuesNotCancellation(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	if got := uncancelled(base); got != base {
		t.Fatalf("a context that is never cancelled was wrapped: %v", got)
	}
	dl, cancelDl := context.WithDeadline(base, time.Now().Add(-time.Second))
	defer cancelDl()
	cc, cancel := context.WithCancel(base)
	cancel()
	for _, ctx := range []context.Context{cc, dl} {
		u := uncancelled(ctx)
		if u.Err() != nil || u.Done() != nil {
			t.Fatalf("uncancelled(%v): Err %v, Done %v; want neither", ctx, u.Err(), u.Done())
		}
		if _, ok := u.Deadline(); ok {
			t.Fatalf("uncancelled(%v) has a deadline", ctx)
		}
		if u.Value(key{}) != "v" {
			t.Fatalf("uncancelled(%v) lost its value", ctx)
		}
	}
}

// setTestBatch sets (or, with nil, clears) the store's batch hook.
func (s *Store) setTestBatch(f func(reqs []context.Context)) {
	if f == nil {
		s.testBatch.Store(nil)
		return
	}
	s.testBatch.Store(&f)
}
