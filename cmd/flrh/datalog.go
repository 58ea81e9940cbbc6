package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/cmd/flrh/internal/datalogstart"
	// Lowers the collector's target while packages initialise, for this
	// command only; see its documentation.
	_ "flrh.dev/flrh/cmd/flrh/internal/datalogstart/gctarget"
	"flrh.dev/flrh/internal/startpages"
	"flrh.dev/flrh/logic"
)

// datalogFlags are shared by `flrh datalog` and `flrh why`.
type datalogFlags struct {
	factsDir  string
	maxTuples int64
	maxFiring int64
	maxMemory byteSize
	// stratumTime is the wall time of each evaluated stratum, in order.
	stratumTime []time.Duration
	lastStratum time.Time     // when the latest stratum ended
	readTime    time.Duration // reading the input facts into their relations
	warn        io.Writer     // where program warnings go
}

func (f *datalogFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.factsDir, "fact-dir", "F", ".", "directory holding <relation>.facts for each .input relation")
	cmd.Flags().Int64Var(&f.maxTuples, "max-tuples", 100_000_000, "stop with TUPLE_BUDGET_EXHAUSTED beyond this many tuples (0: no limit)")
	cmd.Flags().Int64Var(&f.maxFiring, "max-firings", 0, "stop with RULE_BUDGET_EXHAUSTED beyond this many rule firings (0: no limit)")
	f.maxMemory = defaultMaxMemory
	cmd.Flags().Var(&f.maxMemory, "max-memory", "stop with MEMORY_BUDGET_EXHAUSTED when the relations' storage passes this size, e.g. 512MiB or 8GiB (0: no limit)")
}

// loadAndEvaluate reads and checks the program, reads every .input fact
// file and evaluates. Malformed programs and fact files are usage errors.
func (f *datalogFlags) loadAndEvaluate(progPath string) (*logic.Materialization, time.Duration, error) {
	src, err := os.ReadFile(progPath)
	if err != nil {
		return nil, 0, usagef("%v", err)
	}
	c, err := logic.Load(progPath, src)
	if err != nil {
		return nil, 0, usageError{err}
	}
	for _, w := range c.Warnings() {
		fmt.Fprintln(f.warn, "warning:", w)
	}
	var files []logic.FactFile
	for _, rel := range c.Inputs() {
		path := filepath.Join(f.factsDir, c.IOFile(rel, true))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, usagef("cannot read facts of %s: %v", rel, err)
		}
		files = append(files, logic.FactFile{Rel: rel, Name: path, Data: data})
	}
	// The facts go straight into the relations (no Fact is made of a
	// line); the evaluation is timed from when they are in.
	start := time.Now()
	f.stratumTime, f.lastStratum, f.readTime = f.stratumTime[:0], start, 0
	lim := logic.Limits{MaxTuples: f.maxTuples, MaxFirings: f.maxFiring, MaxBytes: int64(f.maxMemory),
		Loaded: func() {
			now := time.Now()
			f.readTime, start, f.lastStratum = now.Sub(start), now, now
		},
		Progress: func(logic.StratumStats) {
			now := time.Now()
			f.stratumTime, f.lastStratum = append(f.stratumTime, now.Sub(f.lastStratum)), now
		}}
	m, err := logic.EvaluateFiles(c, files, lim)
	if err != nil {
		// A fact file that does not read is the command line's mistake,
		// as a program that does not load is.
		if le, ok := err.(*logic.Error); ok && le.Code == logic.MalformedFact {
			return nil, 0, usageError{err}
		}
		return nil, 0, err
	}
	return m, time.Since(start), nil
}

func init() {
	var flags datalogFlags
	var outDir string
	var stats, explain bool
	cmd := &cobra.Command{
		Use:   "datalog PROGRAM.dl [-F FACTS_DIR] [-D OUT_DIR|-]",
		Short: "Evaluate a Datalog program the way Soufflé does",
		Long: `Evaluate a Datalog program (the Soufflé subset plus explicit negation).

Each .input relation is read from FACTS_DIR/<relation>.facts (tab-separated);
each .output relation is written to OUT_DIR/<relation>.csv (tab-separated,
sorted), or to standard output with -D -. Nothing is written when the program,
a fact file or the evaluation fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags.warn = cmd.ErrOrStderr()
			// A missing output directory is the command line's mistake:
			// say so before evaluating, not after, in words about the
			// directory rather than the temporary file the writer opens.
			if outDir != "-" {
				if fi, err := os.Stat(outDir); err != nil || !fi.IsDir() {
					return usagef("-D %s: no such directory (create it, or give -D - for standard output)", outDir)
				}
			}
			// Start-up faulted in code and tables of the whole product
			// that a Datalog run never touches again; release the pages
			// no loader wrote so they stop counting beside the
			// relations. When the executable's layout is anything but
			// what the plan can prove safe, nothing is released.
			// When the command line named this command, initialisation
			// already released them part-way through and after each
			// collection since; once more here drops what the rest of
			// it touched.
			pages, released, ran, keptWhy := datalogstart.Stop()
			if !ran {
				// Initialisation did not plan (the command runs inside
				// another process, a test's): plan here, shared
				// objects included, as datalogstart does.
				if pages, keptWhy = startpages.Find(); keptWhy == nil {
					pages = pages.WithLibraries()
				}
			}
			if keptWhy == nil {
				var n int
				n, keptWhy = pages.Release()
				released = max(released, n)
			}
			if keptWhy != nil {
				pages = nil
			}
			defer tuneGC(pages)()
			m, took, err := flags.loadAndEvaluate(args[0])
			if err != nil {
				return err
			}
			// Without --explain nothing asks the materialization a question
			// after this, so keep only what rendering needs; the hash sets
			// and indexes become garbage before the output is sorted.
			var w factWriter = m
			if !explain {
				if w, err = m.Results(); err != nil {
					return err
				}
			}
			// Results left the hash sets and indexes unreachable, beside
			// the garbage of their growth. Collect, and hand the freed
			// pages back to the system: the output's sort buffers are
			// large single allocations that scattered free pages cannot
			// hold, and kept resident those pages would count beside them.
			debug.FreeOSMemory()
			c := m.Program()
			out := cmd.OutOrStdout()
			if outDir == "-" {
				bw := bufio.NewWriterSize(out, 64<<10)
				for _, rel := range c.Outputs() {
					fmt.Fprintf(bw, "---------------\n%s\n===============\n", rel)
					if _, err := w.WriteFactsTo(bw, rel, false); err != nil {
						return err
					}
					bw.WriteString("===============\n")
				}
				if err := bw.Flush(); err != nil {
					return err
				}
			} else if err := writeOutputs(w, c, outDir); err != nil {
				return err
			}
			if stats {
				printStats(cmd.ErrOrStderr(), m, flags.readTime, took, flags.stratumTime)
				if keptWhy != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "start-up pages kept: %v\n", keptWhy)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "start-up pages released: %d KiB\n", released>>10)
				}
			}
			if explain {
				return printConflicts(cmd.ErrOrStderr(), m)
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVarP(&outDir, "output-dir", "D", ".", "directory for <relation>.csv, or - for standard output")
	cmd.Flags().BoolVar(&stats, "stats", false, "print per-stratum iterations, firings and tuples to standard error")
	cmd.Flags().BoolVar(&explain, "explain", false, "name every conflicting (BOTH) atom with both sides' supports on standard error")
	rootCmd.AddCommand(cmd)
}

// factWriter renders one side of a relation: a materialization, or the
// results it leaves when only rendering remains.
type factWriter interface {
	WriteFactsTo(w io.Writer, rel string, neg bool) (int64, error)
}

// writeOutputs writes every output relation to a temporary file first and
// renames them into place only when all were written, so a failure leaves
// no partial output.
func writeOutputs(m factWriter, c *logic.Compiled, dir string) error {
	type pending struct{ tmp, final string }
	var done []pending
	cleanup := func() {
		for _, p := range done {
			os.Remove(p.tmp)
		}
	}
	for _, rel := range c.Outputs() {
		final := filepath.Join(dir, c.IOFile(rel, false))
		tmp, err := os.CreateTemp(dir, ".flrh-"+rel+"-*")
		if err != nil {
			cleanup()
			return fmt.Errorf("writing %s: %w", final, err)
		}
		done = append(done, pending{tmp.Name(), final})
		// WriteFactsTo buffers itself: the file sees 64 KiB writes and
		// the rendered relation is never held in memory whole.
		if _, err := m.WriteFactsTo(tmp, rel, false); err != nil {
			tmp.Close()
			cleanup()
			return fmt.Errorf("writing %s: %w", final, err)
		}
		if err := tmp.Close(); err != nil {
			cleanup()
			return fmt.Errorf("writing %s: %w", final, err)
		}
	}
	for _, p := range done {
		if err := os.Rename(p.tmp, p.final); err != nil {
			cleanup()
			return fmt.Errorf("writing %s: %w", p.final, err)
		}
	}
	return nil
}

func printStats(w io.Writer, m *logic.Materialization, read, took time.Duration, times []time.Duration) {
	st := m.Stats()
	fmt.Fprintf(w, "stratum\titerations\tfirings\tnew tuples\ttime\trelations\n")
	for i, s := range st.Strata {
		rec := ""
		if s.Recursive {
			rec = " (recursive)"
		}
		var d time.Duration
		if i < len(times) {
			d = times[i]
		}
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%s\t%s%s\n", s.Index, s.Iterations, s.Firings, s.NewTuples, d.Round(time.Microsecond), strings.Join(s.Relations, ", "), rec)
	}
	fmt.Fprintf(w, "input facts read in %s\n", read.Round(time.Microsecond))
	fmt.Fprintf(w, "total: %d firings, %d tuples, %s\n", st.Firings, st.Tuples, took.Round(time.Microsecond))
	fmt.Fprintf(w, "relation storage: %d bytes (%.1f MiB; what --max-memory bounds)\n", st.Bytes, float64(st.Bytes)/(1<<20))
}

func printConflicts(w io.Writer, m *logic.Materialization) error {
	cs, err := m.Conflicts()
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		fmt.Fprintln(w, "no conflicts")
		return nil
	}
	for _, c := range cs {
		fmt.Fprintf(w, "conflict: %s is BOTH\n", c.Atom)
		for _, s := range c.Positive {
			fmt.Fprintf(w, "  + %s\n", s)
		}
		for _, s := range c.Negative {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
	return nil
}

// tuneGC sets the collector's target for a Datalog run unless GOGC is
// set, and returns what restores it. Relations live in large pointer-free
// chunks that cost the collector almost nothing to mark, so collecting at
// 10 % growth instead of 100 % trims peak memory (garbage of the hash
// sets' growth and of each round is freed sooner). Once the live heap
// passes largeHeap the target goes back up to 25 %: on tens of millions of
// tuples the extra cycles cost about a tenth more CPU, which a workload of
// that size, already near Soufflé's time, cannot spare.
//
// With pages, the start-up pages are released again after every cycle,
// GOGC set or not. Each cycle reads the type descriptors of everything
// start-up left on the heap and the stack maps and frame tables of the
// running code; in an executable this size those reads fault back
// megabytes of tables that the evaluation itself never uses, and without
// a second release they would count at its peak.
func tuneGC(pages *startpages.Pages) (restore func()) {
	w := &gcWatch{pages: pages}
	old := -1
	if _, set := os.LookupEnv("GOGC"); !set {
		old = debug.SetGCPercent(smallHeapGCPercent)
		w.tighten = true
	}
	if w.tighten || w.pages != nil {
		w.arm()
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stopped = true
		if old >= 0 {
			debug.SetGCPercent(old)
		}
	}
}

// gcWatch looks at the heap after each collection (a finalizer on a
// sentinel runs once per cycle, re-armed each time), raises the target
// once the heap is large and drops the start-up pages the cycle touched.
// It adds no goroutine or timer of its own.
type gcWatch struct {
	mu      sync.Mutex
	stopped bool
	tighten bool              // the target is still the small-heap one
	pages   *startpages.Pages // released after each cycle, if any
}

// gcSentinel is what the finalizer hangs on: big enough not to be batched
// with other tiny allocations, whose finalizers may never run.
type gcSentinel struct{ _ [16]byte }

func (w *gcWatch) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		if w.tighten {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc >= largeHeap {
				debug.SetGCPercent(largeHeapGCPercent)
				w.tighten = false
			}
		}
		if w.pages != nil {
			if _, err := w.pages.Release(); err != nil {
				// What failed once is not retried every cycle; the
				// pages stay, as they would without the release.
				w.pages = nil
			}
		}
		if w.tighten || w.pages != nil {
			w.arm()
		}
	})
}

const (
	smallHeapGCPercent = 10
	largeHeapGCPercent = 25
	largeHeap          = 64 << 20
)

// defaultMaxMemory stops a runaway program before a laptop swaps or the
// kernel kills it (the process peaks at up to about 1.9 times the
// footprint), and is four times what the largest benchmark's relations
// take (see docs/decisions/0310-datalog-memory-budget.md).
const defaultMaxMemory = 1 << 30

// byteSize is a --max-memory value: a number of bytes with an optional
// unit, binary (KiB, MiB, GiB, TiB) or decimal (kB, MB, GB, TB).
type byteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest first, so that "MiB" is not read as "B" after a number "1Mi".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

func (b *byteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a size: give a whole number of bytes with an optional unit (B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", s)
	}
	if n > math.MaxInt64/mult {
		return fmt.Errorf("%q is too large", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// String gives the size in the largest binary unit that divides it, so the
// default reads 4GiB in the help and a value round-trips through Set.
func (b byteSize) String() string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.mult == 0 {
			return strconv.FormatInt(int64(b)/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

func (b *byteSize) Type() string { return "size" }
