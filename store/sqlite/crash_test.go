package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// TestMain lets this test binary double as the writer process that the
// crash test kills.
func TestMain(m *testing.M) {
	if path := os.Getenv("FLRH_CRASH_WRITER_DB"); path != "" {
		crashWriter(path)
		return
	}
	os.Exit(m.Run())
}

// crashWriter commits ticks forever (until killed): each tick appends an
// event, commits an intent and a checkpoint that names the event count.
// FLRH_CRASH_WRITER_RUNS names the runs (comma-separated, default "r"),
// each written by its own goroutine, so that several runs' ticks share
// batches.
func crashWriter(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	runs := strings.Split(os.Getenv("FLRH_CRASH_WRITER_RUNS"), ",")
	lag := os.Getenv("FLRH_CRASH_WRITER_LAG") != ""
	if runs[0] == "" {
		runs = []string{"r"}
	}
	leases := make([]store.Lease, len(runs))
	for i, id := range runs {
		if leases[i], err = s.AcquireLease(ctx, id, "writer", time.Hour); err != nil { // a restarted runner keeps its name
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	// Say once that commits were grouped, so the test knows a kill could
	// land in the middle of a batch.
	var grouped sync.Once
	s.setTestBatch(func(reqs []context.Context) {
		if len(reqs) > 1 {
			grouped.Do(func() { fmt.Println("grouped") })
		}
	})
	fmt.Println("ready")
	// Say once that a tick committed in this process, so the test kills
	// it only after it has made progress, however slow the machine.
	var committed sync.Once
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := s.Run(ctx, l.RunID)
			if err != nil {
				os.Exit(4)
			}
			for {
				if !lag {
					if run, err = s.Run(ctx, l.RunID); err != nil {
						os.Exit(4)
					}
				}
				n := run.Head + 1
				cp := []byte(fmt.Sprintf(`{"events":%d}`, n))
				if lag && n%2 == 0 {
					// A lagging tick (an event and a checkpoint) after
					// each durable one, left open for the next to commit.
					if err := s.Commit(ctx, l, store.Tick{ExpectHead: run.Head, MayLag: true,
						Events:     []store.Event{storetest.Ev("E", fmt.Sprintf(`{"n":%d}`, n))},
						Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(5)
					}
					run.Head = n
					continue
				}
				// Every tick also submits and consumes its own input, as
				// the runner's SubmitAdvance does.
				in := storetest.Inb(l.RunID, fmt.Sprintf("in-%d", n), "input", fmt.Sprintf(`{"n":%d}`, n))
				tick := store.Tick{ExpectHead: run.Head, Submit: []store.Inbound{in}, Consume: []string{in.ID},
					Events:     []store.Event{storetest.Ev("E", fmt.Sprintf(`{"n":%d}`, n))},
					Intents:    []store.Intent{storetest.In(fmt.Sprintf("%s-i%d", l.RunID, n), fmt.Sprintf("%s-k%d", l.RunID, n), fmt.Sprint(n))},
					Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
				if err := s.Commit(ctx, l, tick); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(5)
				}
				committed.Do(func() { fmt.Println("committed") })
				run.Head = n
			}
		}()
	}
	wg.Wait()
}

// TestCrashKeepsTicksWhole kills a writer process with SIGKILL in the middle
// of committing, several times, and checks after every restart that each
// tick is either wholly present or wholly absent: the event chain is
// intact, every event has its intent, its checkpoint and the inbound event
// the tick submitted and consumed, and nothing else.
func TestCrashKeepsTicksWhole(t *testing.T) { crashRounds(t, []string{"r"}, false) }

// TestCrashKeepsLaggingTicksWhole is the same with a lagging tick after
// each durable one, left open for the next tick's COMMIT: a kill loses the
// open one, never a durable one, and leaves every tick whole.
func TestCrashKeepsLaggingTicksWhole(t *testing.T) {
	crashRounds(t, []string{"r0", "r1", "r2", "r3"}, true)
}

// TestCrashKeepsBatchesWhole is the same with eight runs written at once,
// whose ticks commit in shared batches: a kill in the middle of a batch
// leaves each of its ticks wholly present or wholly absent.
func TestCrashKeepsBatchesWhole(t *testing.T) {
	crashRounds(t, []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}, false)
}

func crashRounds(t *testing.T, runs []string, lag bool) {
	if testing.Short() {
		t.Skip("crash test runs real processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range runs {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	var last int64
	groupedRounds := 0
	for round := 0; round < 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FLRH_CRASH_WRITER_DB="+path, "FLRH_CRASH_WRITER_RUNS="+strings.Join(runs, ","))
		if lag {
			cmd.Env = append(cmd.Env, "FLRH_CRASH_WRITER_LAG=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The writer's lines: "ready", then "committed" after its first
		// durable tick and "grouped" once commits shared a batch. The kill
		// lands a while after the first commit, not at a fixed time after
		// start, so a slow machine (the race detector, a loaded host)
		// still sees every round make progress.
		lines := make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var said []string
		wait := time.After(60 * time.Second)
	waitCommit:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					cmd.Wait()
					t.Fatalf("round %d: the writer exited before committing (said %q)", round, said)
				}
				said = append(said, l)
				if l == "committed" {
					break waitCommit
				}
			case <-wait:
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: the writer committed nothing in 60 s (said %q)", round, said)
			}
		}
		time.Sleep(time.Duration(80+round*70) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for l := range lines {
			said = append(said, l)
		}
		cmd.Wait()
		if slices.Contains(said, "grouped") {
			groupedRounds++
		}

		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		var total int64
		for _, id := range runs {
			run, err := s.Run(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			evs, _ := s.Events(ctx, id, 0)
			ins, _ := s.Intents(ctx, id)
			cp, _ := s.Checkpoint(ctx, id)
			inbox, _ := s.Inbox(ctx, id, false)
			durable := run.Head // ticks with an intent and an input
			if lag {
				durable = (run.Head + 1) / 2
			}
			if int64(len(evs)) != run.Head || int64(len(ins)) != durable || (run.Head > 0 && cp.Seq != run.Head) || int64(len(inbox)) != durable {
				t.Fatalf("round %d run %s: torn tick: head=%d events=%d intents=%d checkpoint=%d inbox=%d", round, id, run.Head, len(evs), len(ins), cp.Seq, len(inbox))
			}
			for i, in := range inbox {
				want := fmt.Sprintf("in-%d", i+1)
				if lag {
					want = fmt.Sprintf("in-%d", 2*i+1)
				}
				if !in.Consumed || in.Seq != int64(i+1) || in.ID != want {
					t.Fatalf("round %d run %s: inbox entry %d is %+v", round, id, i+1, in)
				}
			}
			prev := store.GenesisHash
			for _, e := range evs {
				if e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
					t.Fatalf("round %d run %s: chain broken at %d", round, id, e.Seq)
				}
				prev = e.ChainHash
			}
			total += run.Head
		}
		if total <= last {
			t.Fatalf("round %d: no progress (%d ticks)", round, total)
		}
		last = total
		s.Close()
	}
	if len(runs) > 1 && groupedRounds == 0 {
		t.Fatal("no round grouped commits into a batch; no kill could land inside one")
	}
	t.Logf("survived 4 SIGKILLs; %d ticks committed over %d runs; %d rounds grouped commits", last, len(runs), groupedRounds)
}
