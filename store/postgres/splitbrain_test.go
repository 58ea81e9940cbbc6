package postgres

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// splitBrainChild is the stale writer: a separate process that holds run
// "r" with a short lease, renewing it and committing in a loop, printing
// one line per attempt. It runs only when re-executed by the test below.
func TestSplitBrainChild(t *testing.T) {
	schema := os.Getenv("FLRH_SPLIT_BRAIN_SCHEMA")
	if schema == "" {
		t.Skip("runs only as the child of TestSplitBrainPausedWriter")
	}
	// Paused mid-tick, its transaction would hold the run's row; the
	// server ends it after a second of silence.
	s, err := Open(ctx, dsn(t), Options{Schema: schema, IdleInTransaction: time.Second})
	must(t, err)
	defer s.Close()
	l, err := s.AcquireLease(ctx, "r", "child", 2*time.Second)
	must(t, err)
	fmt.Printf("lease %d\n", l.Generation)
	head := int64(0)
	fenced := 0
	for i := 0; fenced < 5 && i < 100000; i++ {
		var err error
		if l, err = s.RenewLease(ctx, l, 2*time.Second); err == nil {
			err = s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("CHILD", fmt.Sprintf(`{"i":%d}`, i))}})
		}
		switch store.CodeOf(err) {
		case "":
			head++
			fmt.Printf("ok %d\n", head)
		case store.CodeFenced:
			fenced++
			fmt.Printf("fenced\n")
		default:
			fmt.Printf("error %v\n", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two processes, one run. The first holds the lease and commits in a loop;
// it is paused with SIGSTOP past its lease's expiry (by the database's
// clock — nothing here is injected), the second takes the run over and
// commits, and the first is resumed. The stale writer never commits again:
// every write it attempts after resuming is FENCED, and the log holds its
// events, then the new owner's, nothing interleaved.
func TestSplitBrainPausedWriter(t *testing.T) {
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	cmd := exec.Command(os.Args[0], "-test.run=^TestSplitBrainChild$", "-test.v")
	cmd.Env = append(os.Environ(), "FLRH_SPLIT_BRAIN_SCHEMA="+s.Schema())
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := make(chan string, 1<<16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Let the child commit a few ticks.
	waitFor(t, func() bool { r, _ := s.Run(ctx, "r"); return r.Head >= 5 })
	must(t, cmd.Process.Signal(syscall.SIGSTOP))
	// Past the child's lease, by the database's clock. A COMMIT the child
	// sent just before it stopped has landed by now; a transaction it left
	// open has been ended by the server.
	time.Sleep(2500 * time.Millisecond)
	paused, err := s.Run(ctx, "r")
	must(t, err)
	l, err := s.AcquireLease(ctx, "r", "parent", time.Minute)
	must(t, err)
	if l.Generation != paused.Lease.Generation+1 {
		t.Fatalf("takeover at generation %d, the child held %d", l.Generation, paused.Lease.Generation)
	}
	for i := int64(0); i < 3; i++ {
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: paused.Head + i, Events: []store.Event{storetest.Ev("PARENT", fmt.Sprintf(`{"i":%d}`, i))}}))
	}
	must(t, cmd.Process.Signal(syscall.SIGCONT))
	err = cmd.Wait()
	var log []string
	for line := range lines {
		log = append(log, line)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, strings.Join(log, "\n"))
	}
	// The child's successes all came before the pause; after it, only FENCED.
	oks, fencedSeen := 0, false
	for _, line := range log {
		switch {
		case strings.HasPrefix(line, "ok "):
			if fencedSeen {
				t.Fatalf("the stale writer committed after being fenced:\n%s", strings.Join(log, "\n"))
			}
			oks++
		case line == "fenced":
			fencedSeen = true
		case strings.HasPrefix(line, "error "):
			t.Fatalf("child: %s", line)
		}
	}
	if !fencedSeen {
		t.Fatalf("the stale writer was never fenced:\n%s", strings.Join(log, "\n"))
	}
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != oks+3 {
		t.Fatalf("%d events; the child reported %d commits and the parent made 3", len(evs), oks)
	}
	for i, e := range evs {
		want, gen := "CHILD", paused.Lease.Generation
		if i >= oks {
			want, gen = "PARENT", l.Generation
		}
		if e.Kind != want || e.Generation != gen {
			t.Fatalf("event %d is %s by generation %d, want %s by %d", e.Seq, e.Kind, e.Generation, want, gen)
		}
	}
}
