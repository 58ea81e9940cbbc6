package sqlite

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// Reads go through a pool of their own that refuses writes, sees every
// commit at once, and keeps its connections across bursts of concurrent
// reads instead of closing and reopening them.
func TestReadersPool(t *testing.T) {
	ctx := context.Background()
	s := open(t, time.Now).(*Store)
	defer s.Close()
	if s.rdb == s.db {
		t.Fatal("reads share the writer's pool")
	}
	if _, err := s.rdb.ExecContext(ctx, `UPDATE runs SET state = 'X'`); err == nil {
		t.Fatal("a write through the readers' pool succeeded")
	}
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		// readers reads at once, each holding its connection until all
		// have one.
		var opened, done sync.WaitGroup
		opened.Add(readers)
		errs := make(chan error, readers)
		for range readers {
			done.Add(1)
			go func() {
				defer done.Done()
				rows, err := s.read(ctx, `SELECT head_seq FROM runs WHERE run_id = ?`, "r")
				opened.Done()
				if err != nil {
					errs <- err
					return
				}
				defer rows.Close()
				opened.Wait()
				var head int64
				if !rows.Next() {
					errs <- rows.Err()
					return
				}
				if err := rows.Scan(&head); err != nil || head != int64(round) {
					errs <- fmt.Errorf("read head %d (%v) after %d commits", head, err, round)
				}
			}()
		}
		done.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		run, _ := s.Run(ctx, "r")
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: run.Head, State: "S", Events: []store.Event{storetest.Ev("A", `{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	st := s.rdb.Stats()
	if st.MaxIdleClosed != 0 || st.OpenConnections > readers {
		t.Fatalf("readers' pool closed %d idle connections, has %d open", st.MaxIdleClosed, st.OpenConnections)
	}
}
