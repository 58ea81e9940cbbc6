package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// TestEventRowsMatchTheChainDefinition holds the events a commit writes
// (chain hashes from the sum before them, digests and hashes cut from the
// writer's reused buffer, kinds boxed once) to the rows the definition
// gives: over ticks of random sizes, across the rows of one INSERT and
// beyond them, with more kinds than the writer keeps boxed, every stored
// column is the oracle's (the chain through store.ChainHash over texts,
// each hash as packHash stores it), and the run's head hash the last.
func TestEventRowsMatchTheChainDefinition(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kinds := []string{"control", "accepted", "a", "b", "c", "d", "e", "f", "g", "h", "i", "control2"}
	runN := 0
	rapid.Check(t, func(t *rapid.T) {
		runN++
		id := fmt.Sprint("r", runN)
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
			t.Fatal(err)
		}
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			Kind                string
			Body                []byte
			Digest, Prev, Chain any
			Seq, Gen            int64
		}
		var want []row
		prev, head := store.GenesisHash, int64(0)
		for k, ticks := 0, rapid.IntRange(1, 4).Draw(t, "ticks"); k < ticks; k++ {
			n := rapid.SampledFrom([]int{0, 1, 2, 13, 32, 33, eventsPerInsert - 1, eventsPerInsert, eventsPerInsert + 1, 2*eventsPerInsert + 7}).Draw(t, "events")
			evs := make([]store.Event, n)
			for i := range evs {
				body := []byte(fmt.Sprintf(`{"k":%d,"i":%d,"x":%q}`, k, i, rapid.StringN(0, 8, -1).Draw(t, "x")))
				evs[i] = store.Event{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Body: body, Digest: store.BodyDigest(body)}
				head++
				chain := store.ChainHash(prev, head, evs[i].Digest)
				want = append(want, row{evs[i].Kind, body, packHash(evs[i].Digest), packHash(prev), packHash(chain), head, l.Generation})
				prev = chain
			}
			if err := s.Commit(ctx, l, store.Tick{ExpectHead: head - int64(n), Events: evs}); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := s.DB().QueryContext(ctx, `SELECT kind, body, digest, prev_hash, chain_hash, seq, generation FROM events WHERE run_id = ? ORDER BY seq`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var got []row
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.Kind, &r.Body, &r.Digest, &r.Prev, &r.Chain, &r.Seq, &r.Gen); err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d events stored, want %d", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("event %d stored as %+v, want %+v", i+1, got[i], want[i])
			}
		}
		var headHash string
		if err := s.DB().QueryRowContext(ctx, `SELECT head_hash FROM runs WHERE run_id = ?`, id).Scan(&headHash); err != nil {
			t.Fatal(err)
		}
		if headHash != prev {
			t.Fatalf("head hash %s, want %s", headHash, prev)
		}
	})
}
