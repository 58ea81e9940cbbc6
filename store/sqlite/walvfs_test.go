package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// onFlush sets walFlushTest for the log of the database at path, for the
// test's duration; f sees the bytes of each flush and answers its error.
func onFlush(t *testing.T, path string, f func(n int64) int32) {
	t.Helper()
	h := func(name string, n int64) int32 {
		if name != path+"-wal" {
			return 0
		}
		return f(n)
	}
	if !walFlushTest.CompareAndSwap(nil, &h) {
		t.Fatal("another test's flush hook is set")
	}
	t.Cleanup(func() { walFlushTest.Store(nil) })
}

// bigTick is a tick of three events of about 1 KB and a 7 KiB checkpoint,
// some five log pages, from head; its events' bodies name i.
func bigTick(head int64, i int, lag bool) store.Tick {
	cp := []byte(`{"state":"` + strings.Repeat(fmt.Sprint(i%10), 7<<10) + `"}`)
	tick := store.Tick{ExpectHead: head, State: "S", MayLag: lag,
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
	for e := 0; e < 3; e++ {
		tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"i":%d,"e":%d,"pad":%q}`, i, e, strings.Repeat("p", 900))))
	}
	return tick
}

// TestLogFramesWrittenTogether holds the store's connections to the
// store's VFS and the VFS to its purpose: a durable tick's COMMIT (some
// five log pages, ten writes through the unix VFS) reaches the log in at
// most two writes (the unix VFS writes at most 128 KB at once), all its
// frames in them. It fails when the store opens its connections through
// the unix VFS (no flush) or when the VFS writes frames as they come.
func TestLogFramesWrittenTogether(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := leasedRun(t, s)
	var mu sync.Mutex
	var flushes, bytes int64
	onFlush(t, path, func(n int64) int32 {
		mu.Lock()
		flushes++
		bytes += n
		mu.Unlock()
		return 0
	})
	const ticks = 40
	for i := 0; i < ticks; i++ {
		if err := s.Commit(ctx, l, bigTick(int64(3*i), i, false)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	const frame = 24 + 4096
	if flushes == 0 || flushes > 2*ticks || bytes < 4*frame*ticks {
		t.Fatalf("%d ticks: %d flushes of %d bytes in all (%d a tick), want 1 to %d flushes and at least %d bytes a tick",
			ticks, flushes, bytes, bytes/ticks, 2*ticks, 4*frame)
	}
}

// libQuery runs query on a connection opened as verify's held reading
// connections are, and reads its row's three cells (two integers and a
// blob).
func libQuery(c *libConn, query string) (int64, int64, []byte, error) {
	st, err := c.prepare(query)
	if err != nil {
		return 0, 0, nil, err
	}
	defer sqlite3.Xsqlite3_reset(c.tls, st.p)
	if rc := sqlite3.Xsqlite3_step(c.tls, st.p); rc != sqlite3.SQLITE_ROW {
		return 0, 0, nil, fmt.Errorf("step: %d: %s", rc, libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)))
	}
	return st.int64(0), st.int64(1), bytes.Clone(st.blobBytes(2)), nil // SQLite's, until the reset
}

// TestLogCommitsSeenAtOnce has other connections read the database after
// every committed tick, durable and lagging: a held reading connection
// opened as verify's are (the store's VFS), a connection of SQLite's unix
// VFS (mixing the two) and the checkpointer, run every few pages. Each
// sees the tick at once: the run's head, its events' count and its last
// event's body; every checkpoint succeeds, and the database reopened
// holds every tick. It fails when the VFS keeps a commit's frames
// buffered past the commit's own write.
func TestLogCommitsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, count := openCheckpointed(t, path, 8)
	l := leasedRun(t, s)

	held, err := openLibConn(s.rrecs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer held.close()
	if !strings.Contains(s.rrecs.dsn, "vfs="+walVFSName) {
		t.Fatalf("the held connections' DSN %q does not name the store's VFS", s.rrecs.dsn)
	}
	unix, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()

	const query = `SELECT r.head_seq, (SELECT count(*) FROM events e WHERE e.run_id = r.run_id),
		(SELECT body FROM events e WHERE e.run_id = r.run_id ORDER BY seq DESC LIMIT 1)
		FROM runs r WHERE r.run_id = 'r'`
	head := int64(0)
	for i := 0; i < 200; i++ {
		tick := bigTick(head, i, i%3 != 0)
		if err := s.Commit(ctx, l, tick); err != nil {
			t.Fatal(err)
		}
		head += int64(len(tick.Events))
		if tick.MayLag {
			s.settle(ctx) // committed now, as before any read of the store
		}
		want := tick.Events[len(tick.Events)-1].Body
		h, n, body, err := libQuery(held, query)
		if err != nil || h != head || n != head || string(body) != string(want) {
			t.Fatalf("tick %d: the held connection read head %d, %d events, last %.40q (%v); want %d, %d, %.40q", i, h, n, body, err, head, head, want)
		}
		if err := unix.QueryRowContext(ctx, query).Scan(&h, &n, &body); err != nil || h != head || n != head || string(body) != string(want) {
			t.Fatalf("tick %d: the unix VFS's connection read head %d, %d events, last %.40q (%v); want %d, %d, %.40q", i, h, n, body, err, head, head, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if checkpoints, _ := count.counts(); checkpoints < 10 {
		t.Fatalf("%d checkpoints", checkpoints)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || int64(len(evs)) != head {
		t.Fatalf("%d events after reopening (%v), want %d", len(evs), err, head)
	}
}

// TestLogWriteFailureFailsTheCommit injects a failed write of the log's
// frames: the tick's commit fails with a typed error (and the lagging
// tick before it, which its COMMIT covered, is lost as decision 1174
// allows), nothing of either is in the database, the run's state is the
// one before, and the store goes on: the next ticks commit, and the
// database reopened is whole. It fails when a flush's error does not
// reach SQLite as the failure of the write that flushed.
func TestLogWriteFailureFailsTheCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := leasedRun(t, s)
	head := commitTicks(t, s, l, 0, 10)
	var fail sync.Mutex
	failing := false
	onFlush(t, path, func(int64) int32 {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			return sqlite3.SQLITE_IOERR_WRITE
		}
		return 0
	})
	for _, lagFirst := range []bool{false, true} {
		before, err := s.Run(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if lagFirst {
			if err := s.Commit(ctx, l, bigTick(head, 100, true)); err != nil {
				t.Fatal(err)
			}
		}
		fail.Lock()
		failing = true
		fail.Unlock()
		at := head
		if lagFirst {
			at += 3
		}
		err = s.Commit(ctx, l, bigTick(at, 101, false))
		fail.Lock()
		failing = false
		fail.Unlock()
		var se *store.Error
		if err == nil || !errors.As(err, &se) || se.Code != store.CodeUnavailable {
			t.Fatalf("lagging first %v: the commit whose log write failed answered %v, want %s", lagFirst, err, store.CodeUnavailable)
		}
		after, err := s.Run(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if after.Head != before.Head || after.HeadHash != before.HeadHash {
			t.Fatalf("lagging first %v: head %d %s after the failed commit, want %d %s", lagFirst, after.Head, after.HeadHash, before.Head, before.HeadHash)
		}
		evs, err := s.Events(ctx, "r", 0)
		if err != nil || int64(len(evs)) != head {
			t.Fatalf("lagging first %v: %d events after the failed commit (%v), want %d", lagFirst, len(evs), err, head)
		}
		if lagFirst {
			// The lost lagging tick's run is told once that its state is
			// the database's.
			if err := s.Commit(ctx, l, bigTick(head, 102, false)); store.CodeOf(err) != store.CodeHeadMismatch {
				t.Fatalf("the tick after a lost lagging tick answered %v, want %s", err, store.CodeHeadMismatch)
			}
		}
		head = commitTicks(t, s, l, head, 4)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var check string
	if err := s.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q (%v)", check, err)
	}
	r, err := s.Run(ctx, "r")
	if err != nil || r.Head != head {
		t.Fatalf("head %d after reopening (%v), want %d", r.Head, err, head)
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || int64(len(evs)) != head {
		t.Fatalf("%d events after reopening (%v), want %d", len(evs), err, head)
	}
}
