package sqlite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/packed"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/storetest"
)

// The whole conformance suite passes unchanged with every checkpoint and
// trace body encrypted.
func TestConformanceSealed(t *testing.T) {
	k, err := sealed.New(bytes.Repeat([]byte{7}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), Options{Clock: clock, Sealer: k})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

type rawSQLite struct{ s *Store }

func (r rawSQLite) Body(t *testing.T, table, runID string, pos int64) []byte {
	t.Helper()
	if table == "trace" {
		recs, first := r.traceRow(t, runID, pos)
		return recs[pos-first].body
	}
	var b []byte
	if err := r.s.db.QueryRow(`SELECT body FROM `+table+` WHERE run_id = ? AND `+posColumn(table)+` = ?`, runID, pos).Scan(&b); err != nil {
		t.Fatalf("raw read %s %s %d: %v", table, runID, pos, err)
	}
	return b
}

func (r rawSQLite) SetBody(t *testing.T, table, runID string, pos int64, body []byte) {
	t.Helper()
	// The append-only triggers are what an attacker with the file would
	// drop first.
	for _, trig := range []string{"checkpoints_no_update", "trace_no_update"} {
		if _, err := r.s.db.Exec(`DROP TRIGGER IF EXISTS ` + trig); err != nil {
			t.Fatal(err)
		}
	}
	if table == "trace" {
		// The record is rewritten inside its tick's row (trace.go).
		recs, first := r.traceRow(t, runID, pos)
		recs[pos-first].body = body
		var frame []byte
		for _, rec := range recs {
			frame = appendTraceRecord(frame, rec.kind, rec.body)
		}
		if _, err := r.s.db.Exec(`UPDATE trace SET records = ? WHERE run_id = ? AND seq = ?`, frame, runID, first); err != nil {
			t.Fatalf("raw write trace %s %d: %v", runID, pos, err)
		}
		return
	}
	if _, err := r.s.db.Exec(`UPDATE `+table+` SET body = ? WHERE run_id = ? AND `+posColumn(table)+` = ?`, body, runID, pos); err != nil {
		t.Fatalf("raw write %s %s %d: %v", table, runID, pos, err)
	}
}

// traceRow returns the records of the trace row holding record pos, and
// the number of its first record.
func (r rawSQLite) traceRow(t *testing.T, runID string, pos int64) ([]traceRecord, int64) {
	t.Helper()
	var first, last int64
	var frame []byte
	if err := r.s.db.QueryRow(`SELECT seq, last_seq, records FROM trace WHERE run_id = ? AND seq <= ? AND last_seq >= ?`, runID, pos, pos).Scan(&first, &last, &frame); err != nil {
		t.Fatalf("raw read trace %s %d: %v", runID, pos, err)
	}
	recs, err := splitTrace(frame, last-first+1)
	if err != nil {
		t.Fatalf("raw read trace %s %d: %v", runID, pos, err)
	}
	return recs, first
}

func posColumn(table string) string {
	if table == "checkpoints" {
		return "n"
	}
	return "seq"
}

func TestSealed(t *testing.T) {
	storetest.RunSealed(t, func(t *testing.T, sealer store.Sealer) (store.Store, storetest.Raw) {
		// One database per subtest, reopened with other keys.
		path := filepath.Join(sealedDir(t), "flrh.db")
		s, err := Open(context.Background(), path, Options{Sealer: sealer})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, rawSQLite{s}
	})
}

// sealedDir is one temporary directory per (sub)test, shared by every
// reopening within it. The entry lives as long as the directory: a later
// run of the same test (go test -count=N) gets a directory of its own
// rather than the name of one already removed.
func sealedDir(t *testing.T) string {
	t.Helper()
	sealedDirsMu.Lock()
	defer sealedDirsMu.Unlock()
	if d, ok := sealedDirs[t.Name()]; ok {
		return d
	}
	d := t.TempDir()
	sealedDirs[t.Name()] = d
	name := t.Name()
	t.Cleanup(func() {
		sealedDirsMu.Lock()
		delete(sealedDirs, name)
		sealedDirsMu.Unlock()
	})
	return d
}

var (
	sealedDirsMu sync.Mutex
	sealedDirs   = map[string]string{}
)

// Every byte of the database file and its WAL is free of the plaintext of
// sealed checkpoints and trace records.
func TestSealedFileHasNoPlaintext(t *testing.T) {
	const marker = "file-scan-marker-83be1f"
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Open(context.Background(), filepath.Join(dir, "flrh.db"), Options{Sealer: k})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"state":"` + marker + `"}`)
	if err := s.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("E", `{}`)},
		Checkpoint: &store.Checkpoint{Seq: 1, FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)},
		Trace:      []store.TraceRecord{{Kind: "k", Body: []byte(`{"t":"` + marker + `"}`)}}}); err != nil {
		t.Fatal(err)
	}
	scan := func() {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(marker)) {
				t.Fatalf("%s holds the plaintext of a sealed record", e.Name())
			}
		}
	}
	scan() // the WAL, before any checkpoint of it
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	scan() // the main file, after the WAL is folded in
}

// With a sealer, a checkpoint is packed and then sealed: what the sealer
// opens is packed, what the store reads is the body given, and the
// sealer's refusal of a body moved to another position still holds.
func TestSealedCheckpointPackedFirst(t *testing.T) {
	ctx := context.Background()
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{Sealer: k})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := leasedRun(t, s)
	var bodies [][]byte
	for n := range 2 {
		var b bytes.Buffer
		b.WriteString(`{"n":` + strconv.Itoa(n) + `,"sums":[`)
		for i := range 40 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"sha256:` + store.BodyDigest([]byte{byte(n), byte(i)})[len("sha256:"):] + `"`)
		}
		b.WriteString(`]}`)
		body := b.Bytes()
		bodies = append(bodies, body)
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: int64(n), Events: []store.Event{storetest.Ev("E", `{}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)}}); err != nil {
			t.Fatal(err)
		}
	}
	raw := rawSQLite{s}
	for n := int64(1); n <= 2; n++ {
		stored := raw.Body(t, "checkpoints", l.RunID, n)
		if !store.IsSealed(stored) {
			t.Fatalf("checkpoint %d stored in clear", n)
		}
		plain, err := k.Open(store.SealRef{RunID: l.RunID, Kind: store.SealCheckpoint, Seq: n}, stored)
		if err != nil || !packed.Is(plain) {
			t.Fatalf("checkpoint %d: opened %v, packed %v", n, err, packed.Is(plain))
		}
	}
	cp, err := s.Checkpoint(ctx, l.RunID)
	if err != nil || !bytes.Equal(cp.Body, bodies[1]) {
		t.Fatalf("read back: %v", err)
	}
	rec, err := s.ReadRunRecord(ctx, l.RunID, true)
	if err != nil || !bytes.Equal(rec.Checkpoint.Body, bodies[1]) {
		t.Fatalf("the run's record: %v", err)
	}
	// The first checkpoint's sealed bytes put where the second's were:
	// refused as corrupt, as before packing.
	raw.SetBody(t, "checkpoints", l.RunID, 2, raw.Body(t, "checkpoints", l.RunID, 1))
	if _, err := s.Checkpoint(ctx, l.RunID); store.CodeOf(err) != store.CodeCorrupt {
		t.Fatalf("a checkpoint moved: %v", err)
	}
}

// Runs move between stores sealed with different keys, and between a
// sealed store and one in clear, either way: each store opens what it
// holds with its own key (the import seals anew).
func TestImportRunsSealed(t *testing.T) {
	sealedWith := func(b byte) storetest.Opener {
		k, err := sealed.New(bytes.Repeat([]byte{b}, sealed.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		return func(t *testing.T, clock func() time.Time) store.Store {
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), Options{Clock: clock, Sealer: k})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Run("SealedToSealed", func(t *testing.T) { storetest.ImportRuns(t, sealedWith(7), sealedWith(9)) })
	t.Run("SealedToClear", func(t *testing.T) { storetest.ImportRuns(t, sealedWith(7), open) })
	t.Run("ClearToSealed", func(t *testing.T) { storetest.ImportRuns(t, open, sealedWith(9)) })
}
