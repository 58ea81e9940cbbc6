package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// commitTicks commits n ticks of run r, each with three events of about
// 1 KB and a 7 KiB checkpoint (some five log pages a tick), from head.
func commitTicks(t *testing.T, s *Store, l store.Lease, head int64, n int) int64 {
	t.Helper()
	cp := []byte(`{"state":"` + strings.Repeat("s", 7<<10) + `"}`)
	for i := 0; i < n; i++ {
		tick := store.Tick{ExpectHead: head, State: "S", MayLag: i%2 == 1,
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
		for e := 0; e < 3; e++ {
			tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"i":%d,"e":%d,"pad":%q}`, i, e, strings.Repeat("p", 900))))
		}
		if err := s.Commit(context.Background(), l, tick); err != nil {
			t.Fatal(err)
		}
		head += 3
	}
	return head
}

// TestLogCheckpointedOffTheWriter holds the log's checkpoints to the
// checkpointer's connection: the writing connection's automatic
// checkpoint is the backstop, and the checkpointer copies the log's pages
// once the writer's COMMITs have written walCheckpointFrames of them. It
// fails when the writer does not count its pages or does not wake the
// checkpointer (no checkpoint then copies anything), or when the writer
// checkpoints at SQLite's default mark.
func TestLogCheckpointedOffTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, count := openCheckpointed(t, path, 0)
	var err error
	l := leasedRun(t, s)
	head := commitTicks(t, s, l, 0, 10)
	var auto int64
	if err := s.withWriter(ctx, func(tx *wtx) {
		err = s.queryRow(ctx, tx, `PRAGMA wal_autocheckpoint`).Scan(&auto)
	}); err != nil {
		t.Fatal(err)
	}
	if err != nil || auto != walBackstopFrames {
		t.Fatalf("the writer's wal_autocheckpoint: %d (%v), want %d", auto, err, walBackstopFrames)
	}
	// Some 2,500 log pages: at least two wakes, far from the backstop.
	commitTicks(t, s, l, head, 500)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if runs, copied := count.counts(); runs == 0 || copied == 0 {
		t.Fatalf("%d checkpoints copied %d frames", runs, copied)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Fatalf("log left after Close: %v", err)
	}
}

// TestLogCheckpointedUnderWrites runs a checkpoint after every few pages
// while ticks commit, lagging and durable, and reopens the database: every
// tick is there, the chain whole.
func TestLogCheckpointedUnderWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, count := openCheckpointed(t, path, 8)
	l := leasedRun(t, s)
	head := commitTicks(t, s, l, 0, 300)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if runs, _ := count.counts(); runs < 10 {
		t.Fatalf("%d checkpoints", runs)
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if r.Head != head {
		t.Fatalf("head %d after reopening, want %d", r.Head, head)
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(evs)) != head {
		t.Fatalf("%d events, want %d", len(evs), head)
	}
}

// checkpointCount counts a store's checkpoints and the log pages they
// copied.
type checkpointCount struct {
	mu           sync.Mutex
	runs, copied int64
}

func (c *checkpointCount) counts() (runs, copied int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs, c.copied
}

// openCheckpointed opens the store at path with its checkpointer asked
// every `every` log pages (0: the store's own mark) and its checkpoints
// counted; a checkpoint that fails fails the test.
func openCheckpointed(t *testing.T, path string, every int) (*Store, *checkpointCount) {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if every > 0 {
		s.ckpt.every = every
	}
	c := &checkpointCount{}
	s.ckpt.test = func(busy, log, n int64, err error) {
		if err != nil {
			t.Errorf("checkpoint: %v", err)
		}
		c.mu.Lock()
		c.runs++
		c.copied += n
		c.mu.Unlock()
	}
	return s, c
}
