package sqlite_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/openended"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
)

// TestLogPagesPerStep measures what a refund-agent governed step writes:
// after warm-up steps the write-ahead log is truncated, a few more steps
// run, and every frame of the log is read back (its page number, whether
// it ends a commit) and its page named by the b-tree that holds it
// (dbstat). It prints log pages per step and per commit, by table and
// index, and rows per step. The figures are printed, not asserted:
//
//	FLRH_LOG_PAGES=1 go test ./store/sqlite -run LogPagesPerStep -v
//	FLRH_LOG_PAGES=runs go test ./store/sqlite -run LogPagesPerStep -v
//	FLRH_LOG_PAGES=interleaved go test ./store/sqlite -run LogPagesPerStep -v
//
// The first counts five steps of one run in a store of three; the second
// eighty steps in runs of ten, each run created by its first step, in a
// store of ten runs, where a run's rows go into the middle of the
// b-trees keyed by run (its id sorts among the others') as they do in a
// store of many runs.
func TestLogPagesPerStep(t *testing.T) {
	if os.Getenv("FLRH_LOG_PAGES") == "" {
		t.Skip("set FLRH_LOG_PAGES=1 to count the log pages a governed step writes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// No checkpoint may restart the log while the steps are counted.
	sqlite.CheckpointEvery(st, 1<<30)
	wf := openEndedAgent(t)
	sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", sb.Adapter()); err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "pages", MaxTransitions: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	input := func(run, step int) []byte {
		return []byte(fmt.Sprintf(`{"type":"refund.requested/1","payload":{"amount":%d,"payee":"p%d","reason":"damaged item","refund_id":"r-%d-%d"}}`, 10+step, run, run, step))
	}
	actor := runner.Actor{Name: "bench", Role: "agent", Capability: "run.input"}
	step := func(run, j int) {
		t.Helper()
		id := fmt.Sprint("run-", run)
		var err error
		if j == 0 {
			_, err = r.StartAdvance(ctx, id, wf.ID(), wf.Version(), input(run, j), actor)
		} else {
			_, err = r.SubmitAdvance(ctx, id, input(run, j), actor)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// By default three runs of ten steps warm the store up and five steps
	// of a fourth run are counted. With FLRH_LOG_PAGES=runs, ten runs
	// warm it up and the next eight runs of ten steps are counted, each
	// run's first step creating it, as bench/governedstep's steps do (few
	// enough steps that the writer's own checkpoint, at 4,000 log pages,
	// does not restart the log).
	warm, runs, from := 3, 0, 2
	shape := os.Getenv("FLRH_LOG_PAGES")
	if shape == "runs" || shape == "interleaved" {
		warm, runs, from = 10, 8, 0
	}
	for run := 0; run < warm; run++ {
		for j := 0; j < 10; j++ {
			step(run, j)
		}
	}
	if runs == 0 {
		step(warm, 0)
		step(warm, 1)
	}
	rows := func() int64 {
		t.Helper()
		var n int64
		for _, tb := range []string{"runs", "events", "checkpoints", "trace", "intents", "outbox", "attempts", "receipts", "inbox", "approvals"} {
			var c int64
			if err := st.DB().QueryRow(`SELECT COUNT(*) FROM ` + tb).Scan(&c); err != nil {
				t.Fatal(err)
			}
			n += c
		}
		return n
	}
	rows0 := rows()
	var busy, logFrames, copied int64
	if err := st.DB().QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &copied); err != nil {
		t.Fatal(err)
	}
	if busy != 0 || logFrames != 0 {
		t.Fatalf("the log was not truncated: busy %d, %d frames, %d copied", busy, logFrames, copied)
	}
	steps := 5 // few enough that the log is not checkpointed meanwhile
	if runs == 0 {
		for j := from; j < from+steps; j++ {
			step(warm, j)
		}
	} else {
		steps = runs * 10
		if shape == "interleaved" {
			// The eight runs in flight together, their steps taken in
			// turn, as C=8 takes them (one writer, no commit shared).
			for j := 0; j < 10; j++ {
				for run := warm; run < warm+runs; run++ {
					step(run, j)
				}
			}
		} else {
			for run := warm; run < warm+runs; run++ {
				for j := 0; j < 10; j++ {
					step(run, j)
				}
			}
		}
	}
	rowsPer := float64(rows()-rows0) / float64(steps)

	names := map[uint32]string{1: "page 1 (header, schema)"}
	rs, err := st.DB().Query(`SELECT name, pageno FROM dbstat`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var n string
		var p uint32
		if err := rs.Scan(&n, &p); err != nil {
			t.Fatal(err)
		}
		if p != 1 {
			names[p] = n
		}
	}
	rs.Close()
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(wal) < 32 {
		t.Fatalf("a log of %d bytes", len(wal))
	}
	pageSize := int(binary.BigEndian.Uint32(wal[8:]))
	salt := string(wal[16:24])
	perTable := map[string]int{}
	frames, commits := 0, 0
	for off := 32; off+24+pageSize <= len(wal); off += 24 + pageSize {
		h := wal[off : off+24]
		if string(h[8:16]) != salt {
			break // a frame of the log before it was restarted
		}
		frames++
		name, ok := names[binary.BigEndian.Uint32(h)]
		if !ok {
			name = "(freed since)"
		}
		perTable[name]++
		if binary.BigEndian.Uint32(h[4:]) != 0 {
			commits++
		}
	}
	if frames == 0 || commits == 0 {
		t.Fatalf("%d frames in %d commits read from the log", frames, commits)
	}
	var sb2 strings.Builder
	fmt.Fprintf(&sb2, "%d steps, %d commits, page size %d: %.1f log pages per step, %.1f per commit, %.1f rows per step\n",
		steps, commits, pageSize, float64(frames)/float64(steps), float64(frames)/float64(commits), rowsPer)
	var ns []string
	for n := range perTable {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	for _, n := range ns {
		fmt.Fprintf(&sb2, "  %-34s %5.1f pages per step\n", n, float64(perTable[n])/float64(steps))
	}
	t.Log("\n" + sb2.String())
}

// openEndedAgent is openended.RefundAgent, failing the test on error.
func openEndedAgent(t *testing.T) *bundle.Workflow {
	t.Helper()
	wf, err := openended.RefundAgent()
	if err != nil {
		t.Fatal(err)
	}
	return wf
}
