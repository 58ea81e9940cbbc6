package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/storetest"
)

// tableRows reads every row of every table of db, in each table's key
// order, as text: two databases with the same rows give the same map.
func tableRows(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range queryRows(t.Fatal, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`) {
		table := name[0].(string)
		for _, row := range queryRows(t.Fatal, db, `SELECT * FROM "`+table+`" ORDER BY 1, 2`) {
			out[table] = append(out[table], fmt.Sprintf("%#v", row))
		}
	}
	return out
}

// storeWithEveryKindOfRun holds an ended run with a record of every kind,
// a pruned run, a run resting with its inbox pending, and a run mid-effect
// under a live lease.
func storeWithEveryKindOfRun(t *testing.T, path string, c *storetest.Clock, sealer store.Sealer) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{Clock: c.Now, Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	storetest.EndedWithEverything(t, s, c, "ended")
	storetest.EndedWithEverything(t, s, c, "pruned")
	a, err := archive.Read(ctx, s, "pruned")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx, a.Pruning(store.BodyDigest(doc))); err != nil {
		t.Fatal(err)
	}
	first := storetest.Inb("resting", "resting-start", "INPUT", `{"amount":7}`)
	if err := s.CreateRun(ctx, store.Run{ID: "resting", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}, first); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "busy", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "busy", "runner-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	in := storetest.In("busy-i", "busy-k", "pay 3")
	if err := s.Commit(ctx, l, store.Tick{State: "EXECUTE", Events: []store.Event{storetest.Ev("INPUT", `{"amount":3}`)},
		Intents: []store.Intent{in}, Begin: []string{in.ID}, Trace: []store.TraceRecord{{Kind: "decision", Body: []byte(`{"d":3}`)}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// A backup is the store's every row, byte for byte, in a file that opens as
// a store reading the same records; the store, sealed or not, is unchanged.
func TestBackupCopiesEveryRow(t *testing.T) {
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealer store.Sealer
	}{{"plain", nil}, {"sealed", k}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			c := storetest.NewClock()
			s := storeWithEveryKindOfRun(t, filepath.Join(dir, "flrh.db"), c, tc.sealer)
			defer s.Close()
			before := tableRows(t, s.DB())
			dest := filepath.Join(dir, "backup.db")
			b, err := s.Backup(ctx, dest, BackupOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(dest)
			if err != nil {
				t.Fatal(err)
			}
			if b.Path != dest || b.Bytes != fi.Size() || b.SchemaVersion != SchemaVersion || b.Runs != 4 {
				t.Fatalf("backup = %+v, file %d bytes", b, fi.Size())
			}
			if _, err := os.Stat(dest + PartialSuffix); !os.IsNotExist(err) {
				t.Fatalf("the partial name is left: %v", err)
			}
			if got := tableRows(t, s.DB()); !reflect.DeepEqual(got, before) {
				t.Fatal("the backup changed the store")
			}
			cp, err := Open(ctx, dest, Options{ReadOnly: true, Clock: c.Now, Sealer: tc.sealer})
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Close()
			if got := tableRows(t, cp.DB()); !reflect.DeepEqual(got, before) {
				for table := range before {
					if !reflect.DeepEqual(got[table], before[table]) {
						t.Errorf("table %s differs:\n got %q\nwant %q", table, got[table], before[table])
					}
				}
				t.FailNow()
			}
			for _, run := range []string{"ended", "resting", "busy"} {
				want := archiveOf(t, s, run)
				if got := archiveOf(t, cp, run); !bytes.Equal(got, want) {
					t.Errorf("run %s reads otherwise from the backup", run)
				}
			}
			pr, err := cp.Run(ctx, "pruned")
			if err != nil {
				t.Fatal(err)
			}
			p, err := store.PruningOf(ctx, cp, pr)
			if err != nil || p == nil {
				t.Fatalf("the backup's pruning of run pruned: %v, %v", p, err)
			}
			want, _ := s.OpenOutbox(ctx)
			got, err := cp.OpenOutbox(ctx)
			if err != nil || !reflect.DeepEqual(got, want) || len(got) != 1 {
				t.Fatalf("open outbox: %v, %v; want %v", got, err, want)
			}
		})
	}
}

// backupOpen backs s up to dest and opens the copy read-only, closed when
// the test ends.
func backupOpen(t *testing.T, s *Store, dest string, opts Options) *Store {
	t.Helper()
	if _, err := s.Backup(context.Background(), dest, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	opts.ReadOnly = true
	cp, err := Open(context.Background(), dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}

func archiveOf(t *testing.T, s store.Store, run string) []byte {
	t.Helper()
	a, err := archive.Read(context.Background(), s, run)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// A backup taken while writers commit is one state of the database: every
// run's events end where its header says, its checkpoint follows its last
// event, and every tick whose commit returned before the backup began is
// in it.
func TestBackupWhileWritersCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, filepath.Join(dir, "flrh.db"), nil)
	defer s.Close()
	const runs = 4
	var committed [runs]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
			t.Fatal(err)
		}
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for head := int64(0); ; head++ {
				select {
				case <-stop:
					return
				default:
				}
				body := []byte(fmt.Sprintf(`{"n":%d}`, head+1))
				cp := []byte(fmt.Sprintf(`{"after":%d}`, head+1))
				tick := store.Tick{ExpectHead: head, State: "EXECUTE", Events: []store.Event{storetest.Ev("INPUT", string(body))},
					Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
					Trace:      []store.TraceRecord{{Kind: "note", Body: body}}}
				if head%5 == 4 {
					tick.MayLag = true
				}
				if err := s.Commit(ctx, l, tick); err != nil {
					errs <- err
					return
				}
				committed[i].Store(head + 1)
			}
		}()
	}
	for n := range 5 {
		time.Sleep(20 * time.Millisecond)
		var floor [runs]int64
		for i := range floor {
			floor[i] = committed[i].Load()
		}
		cp := backupOpen(t, s, filepath.Join(dir, fmt.Sprintf("backup-%d.db", n)), Options{})
		for i := range runs {
			id := fmt.Sprintf("r%d", i)
			r, err := cp.Run(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := cp.Events(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			ck, err := cp.Checkpoint(ctx, id)
			if r.Head > 0 && err != nil {
				t.Fatal(err)
			}
			trace, err := cp.Trace(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case r.Head < floor[i]:
				t.Fatalf("backup %d: run %s at head %d, but %d ticks had returned before it began", n, id, r.Head, floor[i])
			case int64(len(evs)) != r.Head || int64(len(trace)) != r.Head:
				t.Fatalf("backup %d: run %s header at %d with %d events, %d trace records", n, id, r.Head, len(evs), len(trace))
			case r.Head > 0 && (evs[len(evs)-1].ChainHash != r.HeadHash || ck.Seq != r.Head):
				t.Fatalf("backup %d: run %s header at %d (%s), last event %s, checkpoint after %d", n, id, r.Head, r.HeadHash, evs[len(evs)-1].ChainHash, ck.Seq)
			}
			for j, ev := range evs {
				if want := store.ChainHash(ev.PrevHash, ev.Seq, ev.Digest); ev.ChainHash != want || (j > 0 && ev.PrevHash != evs[j-1].ChainHash) {
					t.Fatalf("backup %d: run %s event %d breaks the chain", n, id, ev.Seq)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// Backup never writes over a file, never over the store's own, and leaves
// nothing behind when it refuses; an unfinished backup's partial file is
// replaced.
func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "flrh.db")
	c := storetest.NewClock()
	s, err := Open(ctx, path, Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.EndedWithEverything(t, s, c, "a")
	taken := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(taken, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dest string
		code store.Code
		says string
	}{
		{"", store.CodeInvalidInput, "no file"},
		{taken, store.CodeExists, "never overwrites"},
		{path, store.CodeExists, "never overwrites"},
		{path + "-wal", store.CodeExists, "never overwrites"},
		{path + "-journal", store.CodeInvalidInput, "the store's own file"},
		{strings.TrimSuffix(path, ".db") + ".db" + "-journal", store.CodeInvalidInput, "the store's own file"},
		{filepath.Join(dir, "missing", "b.db"), store.CodeInvalidInput, "no such directory"},
	} {
		_, err := s.Backup(ctx, tc.dest, BackupOptions{})
		if store.CodeOf(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("Backup(%q) = %v; want %s saying %q", tc.dest, err, tc.code, tc.says)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "mine" {
		t.Fatalf("the file in the way now holds %q", b)
	}
	if _, err := os.Stat(path + "-journal"); !os.IsNotExist(err) {
		t.Fatalf("a refused backup left %s-journal: %v", path, err)
	}
	// A store named like an unfinished backup is not removed as one.
	s2path := filepath.Join(dir, "x.db"+PartialSuffix)
	s2, err := Open(ctx, s2path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Backup(ctx, filepath.Join(dir, "x.db"), BackupOptions{}); store.CodeOf(err) != store.CodeInvalidInput {
		t.Fatalf("backing up to the name whose partial file is the store: %v", err)
	}
	s2.Close()
	if _, err := Open(ctx, s2path, Options{ReadOnly: true}); err != nil {
		t.Fatalf("the store named like a partial file: %v", err)
	}
	// A partial file left by a backup that never finished is replaced.
	dest := filepath.Join(dir, "b.db")
	if err := os.WriteFile(dest+PartialSuffix, []byte("half a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(ctx, dest, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest + PartialSuffix); !os.IsNotExist(err) {
		t.Fatalf("the partial file is left: %v", err)
	}
	// A file that appears under the backup's name while it is written is
	// not replaced.
	dest2 := filepath.Join(dir, "c.db")
	_, err = s.Backup(ctx, dest2, BackupOptions{BeforeRename: func() {
		if err := os.WriteFile(dest2, []byte("raced"), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	if store.CodeOf(err) != store.CodeExists {
		t.Fatalf("a file appearing under the name: %v", err)
	}
	if b, _ := os.ReadFile(dest2); string(b) != "raced" {
		t.Fatalf("the raced file now holds %d bytes", len(b))
	}
	if _, err := os.Stat(dest2 + PartialSuffix); !os.IsNotExist(err) {
		t.Fatalf("the partial file is left after the race: %v", err)
	}
}

// A store opened read-only, as the verifier opens one, backs up too.
func TestBackupOfAReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "flrh.db")
	c := storetest.NewClock()
	s, err := Open(ctx, path, Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	storetest.EndedWithEverything(t, s, c, "a")
	want := tableRows(t, s.DB())
	s.Close()
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	cp := backupOpen(t, ro, filepath.Join(dir, "b.db"), Options{})
	if !reflect.DeepEqual(tableRows(t, cp.DB()), want) {
		t.Fatal("the backup of a read-only store differs from it")
	}
}

// A lagging tick whose transaction is still open when the backup begins
// (its caller has returned) is in the backup.
func TestBackupHoldsALaggingTick(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, filepath.Join(dir, "flrh.db"), nil)
	defer s.Close()
	s.lingerFor = time.Hour
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, l, store.Tick{State: "WAIT_INPUT", Events: []store.Event{storetest.Ev("INPUT", `{"n":1}`)}, MayLag: true}); err != nil {
		t.Fatal(err)
	}
	if !s.lingering() {
		t.Fatal("the lagging tick's transaction is not open; the test tests nothing")
	}
	cp := backupOpen(t, s, filepath.Join(dir, "b.db"), Options{})
	if r, err := cp.Run(ctx, "r"); err != nil || r.Head != 1 || r.State != "WAIT_INPUT" {
		t.Fatalf("the backup's run: %+v, %v", r, err)
	}
}

// Integrity finds nothing wrong with a store, and finds a damaged page.
func TestIntegrity(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "flrh.db")
	c := storetest.NewClock()
	s, err := Open(ctx, path, Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"a", "b", "c"} {
		storetest.EndedWithEverything(t, s, c, run)
	}
	if problems, err := s.Integrity(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("a sound store: %v, %v", problems, err)
	}
	s.Close()
	damagePage(t, path)
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	problems, err := ro.Integrity(ctx)
	if len(problems) == 0 && store.CodeOf(err) != store.CodeCorrupt {
		t.Fatalf("a damaged page: %v, %v", problems, err)
	}
	t.Logf("found: %q, %v", problems, err)
}
