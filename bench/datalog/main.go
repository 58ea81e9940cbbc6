package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"flrh.dev/flrh/logic"
)

func main() {
	heavy := flag.Bool("heavy", false, "include the 5,000-node random graph (about 24.7M tuples, several GB)")
	out := flag.String("out", "", "directory for generated workloads (default: a temporary directory)")
	flag.Parse()
	dir := *out
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "flrh-bench-"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
	}
	souffle, _ := exec.LookPath("souffle")
	fmt.Printf("%-16s %12s %10s %10s %12s %12s %10s %10s %12s %10s\n", "workload", "tuples", "flrh s", "heap MB", "insert ms", "delete ms", "ins gain", "del gain", "vs souffle", "vs mangle")
	for _, w := range Workloads(*heavy) {
		r, err := run(w)
		if err != nil {
			fail(err)
		}
		ratioS, ratioM := "-", "-"
		if w.SouffleSeconds > 0 {
			ratioS = fmt.Sprintf("%.2fx", w.SouffleSeconds/r.eval.Seconds())
		}
		if w.MangleSeconds > 0 {
			ratioM = fmt.Sprintf("%.1fx", w.MangleSeconds/r.eval.Seconds())
		}
		fmt.Printf("%-16s %12d %10.3f %10d %12.3f %12.3f %9.0fx %9.0fx %12s %10s\n", w.Name, r.tuples, r.eval.Seconds(), r.heapMB,
			ms(r.insert), ms(r.delete), r.eval.Seconds()/r.insert.Seconds(), r.eval.Seconds()/r.delete.Seconds(), ratioS, ratioM)
		fmt.Printf("%-16s first update (builds update-only indexes): insert %.3f ms, delete %.3f ms\n", "", ms(r.firstInsert), ms(r.firstDelete))
		// Kept workloads (-out) are written for running the command-line
		// tools on them by hand, with or without Soufflé here.
		if souffle == "" && *out != "" {
			if _, err := w.Write(dir); err != nil {
				fail(err)
			}
		}
		if souffle != "" {
			d, err := w.Write(dir)
			if err != nil {
				fail(err)
			}
			start := time.Now()
			cmd := exec.Command(souffle, "-j1", "-F", filepath.Join(d, "facts"), "-D", d, filepath.Join(d, "prog.dl"))
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				fail(err)
			}
			took := time.Since(start)
			fmt.Printf("%-16s souffle here: %.3f s (flrh/souffle time ratio %.2f)\n", "", took.Seconds(), r.eval.Seconds()/took.Seconds())
		}
	}
	fmt.Println("(ratios above 1x mean flrh is faster than the reference timing; timings on a shared machine are preliminary)")
}

type result struct {
	tuples         int
	eval           time.Duration
	heapMB         uint64
	insert, delete time.Duration
	// the first update also builds indexes only updates use
	firstInsert, firstDelete time.Duration
}

func run(w Workload) (result, error) {
	c, err := logic.Load(w.Name+".dl", []byte(w.Program))
	if err != nil {
		return result{}, err
	}
	facts := make([]logic.Fact, len(w.Edges))
	for i, e := range w.Edges {
		facts[i] = logic.Fact{Rel: "edge", Args: []logic.Value{logic.Num(e[0]), logic.Num(e[1])}}
	}
	// From scratch: best of three runs (the machine may be shared).
	var m *logic.Materialization
	var r result
	for i := 0; i < 3; i++ {
		m = nil
		runtime.GC()
		start := time.Now()
		if m, err = logic.Evaluate(c, facts, logic.Limits{}); err != nil {
			return result{}, err
		}
		if took := time.Since(start); i == 0 || took < r.eval {
			r.eval = took
		}
	}
	r.tuples = m.Count(w.Output, false)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heapMB = ms.HeapAlloc >> 20
	// One new edge from the last node to a fresh node, then its removal.
	// The first pair also builds the indexes only updates need; it is
	// reported separately, then the best of five steady-state pairs.
	last := w.Edges[len(w.Edges)-1][1]
	e := logic.Fact{Rel: "edge", Args: []logic.Value{logic.Num(last), logic.Num(1 << 40)}}
	if strings.HasPrefix(w.Name, "sg") {
		e = logic.Fact{Rel: "edge", Args: []logic.Value{logic.Num(0), logic.Num(1 << 40)}}
	}
	for i := 0; i < 6; i++ {
		start := time.Now()
		if m, err = m.Apply([]logic.Change{{Fact: e, Diff: 1}}); err != nil {
			return result{}, err
		}
		ins := time.Since(start)
		start = time.Now()
		if m, err = m.Apply([]logic.Change{{Fact: e, Diff: -1}}); err != nil {
			return result{}, err
		}
		del := time.Since(start)
		if i == 0 {
			r.firstInsert, r.firstDelete = ins, del
			continue
		}
		if i == 1 || ins < r.insert {
			r.insert = ins
		}
		if i == 1 || del < r.delete {
			r.delete = del
		}
	}
	if n := m.Count(w.Output, false); n != r.tuples {
		return result{}, fmt.Errorf("%s: %d tuples after insert+delete, want %d", w.Name, n, r.tuples)
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
