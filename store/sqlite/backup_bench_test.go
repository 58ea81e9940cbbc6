package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkBackup backs up a store of 2,000 ended runs (every kind of
// record each, storetest.EndedWithEverything): "backup" is Store.Backup
// whole (copy, sync, integrity check, rename, directory sync); the others
// are its parts and the alternative it was chosen over, each alone:
// "vacuum-into" the copy alone, "backup-api" SQLite's online backup API
// copying every page in one step, "integrity-check" the check of the
// copy. Each reports the store's size and MB/s of it.
func BenchmarkBackup(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s := endedRuns(b, dir, 2000)
	first := filepath.Join(dir, "first.db")
	bk, err := s.Backup(ctx, first, BackupOptions{})
	if err != nil {
		b.Fatal(err)
	}
	size := bk.Bytes
	n := 0
	next := func() string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("b%d.db", n))
		return p
	}
	report := func(b *testing.B) {
		b.SetBytes(size)
		b.Cleanup(func() { b.ReportMetric(float64(size)/1e6, "MB-store") })
	}
	b.Run("backup", func(b *testing.B) {
		report(b)
		for b.Loop() {
			p := next()
			if _, err := s.Backup(ctx, p, BackupOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.Remove(p)
			b.StartTimer()
		}
	})
	b.Run("vacuum-into", func(b *testing.B) {
		report(b)
		for b.Loop() {
			p := next()
			if _, err := s.db.ExecContext(ctx, `VACUUM INTO ?`, p); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.Remove(p)
			b.StartTimer()
		}
	})
	b.Run("backup-api", func(b *testing.B) {
		report(b)
		conn, err := s.db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		for b.Loop() {
			p := next()
			err := conn.Raw(func(dc any) error {
				bk, err := dc.(interface {
					NewBackup(string) (*sqlite.Backup, error)
				}).NewBackup(p)
				if err != nil {
					return err
				}
				if _, err := bk.Step(-1); err != nil {
					bk.Finish()
					return err
				}
				return bk.Finish()
			})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.Remove(p)
			b.StartTimer()
		}
	})
	// A writer's durable commits, alone and while backups follow one
	// another: what a backup costs the runners that go on.
	for _, during := range []bool{false, true} {
		name := "commit-alone"
		if during {
			name = "commit-during-backups"
		}
		b.Run(name, func(b *testing.B) {
			id := filepath.Base(next())
			if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
				b.Fatal(err)
			}
			l, err := s.AcquireLease(ctx, id, "w", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			backups := 0
			if during {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						p := next()
						if _, err := s.Backup(ctx, p, BackupOptions{}); err != nil {
							panic(err)
						}
						os.Remove(p)
						backups++
					}
				}()
			}
			head := int64(0)
			var longest time.Duration
			for b.Loop() {
				body := fmt.Sprintf(`{"n":%d}`, head+1)
				t0 := time.Now()
				if err := s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("INPUT", body)}}); err != nil {
					b.Fatal(err)
				}
				longest = max(longest, time.Since(t0))
				head++
			}
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(backups), "backups")
			b.ReportMetric(float64(longest.Microseconds())/1000, "ms-longest")
		})
	}
	b.Run("integrity-check", func(b *testing.B) {
		report(b)
		db, err := sql.Open("sqlite", "file:"+first+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for b.Loop() {
			var ok string
			if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
				b.Fatal(ok, err)
			}
		}
	})
}

// endedRuns is a store in dir of n ended runs, every kind of record each
// (storetest.EndedWithEverything), named run-00000, run-00001, ...;
// closed when b ends.
func endedRuns(b *testing.B, dir string, n int) *Store {
	b.Helper()
	c := storetest.NewClock()
	s, err := Open(context.Background(), filepath.Join(dir, "flrh.db"), Options{Clock: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	t := &testing.T{}
	for i := range n {
		storetest.EndedWithEverything(t, s, c, fmt.Sprintf("run-%05d", i))
	}
	if t.Failed() {
		b.Fatal("building the store failed")
	}
	return s
}
