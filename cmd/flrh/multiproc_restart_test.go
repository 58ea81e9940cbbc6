package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Serve processes on one PostgreSQL keep going while the server itself
// restarts under them, twice, in the middle of a stream of runs: in
// immediate mode, with no shutdown checkpoint and crash recovery on start,
// so every connection breaks mid-statement, commits in flight are lost or
// kept unknown to their senders, and starts are refused until the server
// is back. Afterwards every run has succeeded with one intent and one
// receipt, the destination applied one mutation per refund, every record
// verifies, and both processes are still up and stop cleanly on SIGTERM.
//
// It restarts the server, so it runs only when FLRH_TEST_POSTGRES_RESTART
// is a command that restarts the test PostgreSQL (.ci/run sets it, as for
// TestRunnersSurviveServerRestarts).
func TestServeProcessesSurviveServerRestarts(t *testing.T) {
	restart := os.Getenv("FLRH_TEST_POSTGRES_RESTART")
	if restart == "" {
		t.Skip("FLRH_TEST_POSTGRES_RESTART is unset; set it to a command that restarts the test PostgreSQL to run this test")
	}
	storeURL, st := pgStoreURL(t)
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	// Requests are answered a little after they are applied: a restart
	// often lands while an effect is out and its receipt not yet written.
	installFault(t, sb, `{"delay_ms":5,"delay_after_ms":60}`)
	common := []string{"--store", storeURL, "--runners", "2", "--lease-ttl", "2s", "--destination", sb + "/v1/effects", "--grace", "10s"}
	procs := []*serveProc{startServe(t, bin, nil, common...), startServe(t, bin, nil, common...)}

	// The runs are started one after another through both processes; a
	// start refused while the server is away is made again until it is
	// taken (a start whose answer was lost may have committed: then the
	// run exists already).
	const runs = 120
	var wg sync.WaitGroup
	failed := make(chan error, 1)
	wg.Go(func() {
		for i := range runs {
			p, id := procs[i%len(procs)], fmt.Sprintf("pr-%02d", i)
			deadline := time.Now().Add(60 * time.Second)
			for {
				err := postRefund(p.base, id, 10+i%80)
				if err == nil || strings.Contains(err.Error(), "already exists") {
					break
				}
				if time.Now().After(deadline) {
					failed <- err
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(80 * time.Millisecond) // about ten seconds of starts, across both restarts
		}
	})
	var afterLast int // refunds applied when the last restart was done
	for i := 1; i <= 2; i++ {
		eventually(t, fmt.Sprintf("a quarter of the refunds applied before restart %d", i), 120*time.Second, func() bool {
			return len(mutations(t, sb)) >= i*runs/4
		})
		t.Logf("restart %d begins after %d of %d refunds applied", i, len(mutations(t, sb)), runs)
		if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
			t.Fatalf("restart: %v\n%s", err, out)
		}
		afterLast = len(mutations(t, sb))
		t.Logf("restart %d done after %d of %d refunds applied", i, afterLast, runs)
	}
	if afterLast == runs {
		t.Fatal("every refund was applied before the last restart was done: it proved nothing")
	}
	wg.Wait()
	select {
	case err := <-failed:
		t.Fatalf("a run could not be started: %v", err)
	default:
	}
	// The test's own pool meets the restarted server too: wait until it
	// answers before reading through it.
	eventually(t, "the store answers after the restarts", 30*time.Second, func() bool {
		_, err := st.Live(context.Background())
		return err == nil
	})
	everyRunDone(t, st, 180*time.Second)
	for i := range runs {
		id := fmt.Sprintf("pr-%02d", i)
		rec := readRecord(t, st, id)
		if rec.Run.State != "SUCCEEDED" || rec.Intents != 1 || rec.Receipts != 1 || rec.Run.Quarantine != "" {
			t.Errorf("%s ended %s (%q) with %d intents, %d attempts and %d receipts; want SUCCEEDED with one intent and one receipt",
				id, rec.Run.State, rec.Run.Quarantine, rec.Intents, rec.Attempts, rec.Receipts)
		}
	}
	onePerRefund(t, sb, runs)
	if out, err := flrh(bin, nil, "verify", "--all", "--store", storeURL); err != nil {
		t.Fatalf("flrh verify --all after the restarts: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "store", "check", "--store", storeURL); err != nil {
		t.Fatalf("store check after the restarts: %v\n%s", err, out)
	}
	// The processes met the restarts: what they logged says so.
	logged := 0
	for _, p := range procs {
		select {
		case <-p.exited:
			t.Fatalf("a serve process exited during the restarts: %v\n%s", p.err, p.stderr)
		default:
		}
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
				logged++
			}
		}
	}
	if logged == 0 {
		t.Fatal("neither process logged a failure: the restarts passed them by")
	}
	t.Logf("%d warnings and errors logged by the two processes", logged)
	for _, p := range procs {
		stopServe(t, p)
	}
}
