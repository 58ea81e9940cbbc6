package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func runDatalog(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errb)
	rootCmd.SetArgs(args)
	err = rootCmd.Execute()
	rootCmd.SetArgs(nil)
	rootCmd.SetOut(nil)
	rootCmd.SetErr(nil)
	return out.String(), errb.String(), err
}

const pathsProgram = `.decl edge(x: symbol, y: symbol)
.input edge
.decl path(x: symbol, y: symbol)
.output path
.decl blocked(x: symbol)
.output blocked
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
-blocked(x) :- path("a", x).
blocked("c").
`

func datalogFixture(t *testing.T, program, edges string) (prog, facts, out string) {
	dir := t.TempDir()
	prog = filepath.Join(dir, "p.dl")
	facts = filepath.Join(dir, "facts")
	out = filepath.Join(dir, "out")
	for _, d := range []string{facts, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(prog, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(facts, "edge.facts"), []byte(edges), 0o644); err != nil {
		t.Fatal(err)
	}
	return prog, facts, out
}

func TestDatalogWritesSouffleFiles(t *testing.T) {
	prog, facts, out := datalogFixture(t, pathsProgram, "a\tb\nb\tc\nc\td\n")
	_, stderr, err := runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=true", "--explain=true", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "path.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a\tb\na\tc\na\td\nb\tc\nb\td\nc\td\n" {
		t.Fatalf("path.csv:\n%s", got)
	}
	if !strings.Contains(stderr, `conflict: blocked("c") is BOTH`) || !strings.Contains(stderr, "(recursive)") {
		t.Fatalf("stats/explain output:\n%s", stderr)
	}
}

func TestDatalogStdoutAndFailures(t *testing.T) {
	prog, facts, out := datalogFixture(t, pathsProgram, "a\tb\n")
	stdout, _, err := runDatalog(t, "datalog", prog, "-F", facts, "-D", "-", "--stats=false", "--explain=false", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "---------------\npath\n===============\na\tb\n===============\n") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	// A budget failure is exit 1 and writes nothing.
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=false", "--explain=false", "--max-tuples=1", "--max-firings=0")
	if err == nil || exitCode(err) != exitFailure || !strings.Contains(err.Error(), "TUPLE_BUDGET_EXHAUSTED") {
		t.Fatalf("got %v (exit %d), want a tuple budget failure", err, exitCode(err))
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("partial output written: %v", entries)
	}
	// A malformed fact file is a usage error with its position.
	prog, facts, out = datalogFixture(t, pathsProgram, "a\tb\nc\n")
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=false", "--explain=false", "--max-tuples=1000", "--max-firings=0")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "edge.facts:2:1") {
		t.Fatalf("got %v, want a usage error at edge.facts:2:1", err)
	}
	// So is an output directory that does not exist; nothing is created.
	prog, facts, out = datalogFixture(t, pathsProgram, "a\tb\n")
	missing := filepath.Join(out, "missing")
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", missing, "--stats=false", "--explain=false", "--max-tuples=1000", "--max-firings=0")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "-D "+missing+": no such directory") {
		t.Fatalf("got %v, want a usage error naming the missing -D directory", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the missing output directory was created")
	}
	// So is a malformed program.
	prog, facts, out = datalogFixture(t, pathsProgram+"path(x, y) :- edge(x).\n", "a\tb\n")
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=false", "--explain=false", "--max-tuples=1000", "--max-firings=0")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "p.dl:11:15") {
		t.Fatalf("got %v, want a usage error at p.dl:11:15", err)
	}
}

func TestWhy(t *testing.T) {
	prog, facts, _ := datalogFixture(t, pathsProgram, "a\tb\nb\tc\n")
	stdout, _, err := runDatalog(t, "why", prog, "-F", facts, `blocked("c")`, "--json=false", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, `blocked("c") is BOTH`) || !strings.Contains(stdout, `-blocked("c")  [rule -blocked(x) :- path("a", x).`) {
		t.Fatalf("why output:\n%s", stdout)
	}
	stdout, _, err = runDatalog(t, "why", prog, "-F", facts, `path("a", "c")`, "--json=true", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		State    string
		Positive struct{ Premises []json.RawMessage }
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.State != "TRUE_ONLY" || len(v.Positive.Premises) != 2 {
		t.Fatalf("json output %v:\n%s", err, stdout)
	}
	_, _, err = runDatalog(t, "why", prog, "-F", facts, `path("a")`, "--json=false", "--max-tuples=1000", "--max-firings=0")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "ARITY_MISMATCH") {
		t.Fatalf("got %v, want an arity usage error", err)
	}
	// Comparisons in rules are printed as written, not as HTML escapes.
	prog2, facts2, _ := datalogFixture(t, pathsProgram+".decl big(x: number)\n.output big\nbig(n) :- n = 3, n >= 2.\n", "a\tb\n")
	stdout, _, err = runDatalog(t, "why", prog2, "-F", facts2, "big(3)", "--json=true", "--max-tuples=1000", "--max-firings=0")
	if err != nil || !strings.Contains(stdout, "n >= 2") {
		t.Fatalf("why --json of a rule with a comparison: %v\n%s", err, stdout)
	}
	// A negated atom without -- reads as flags; the error says where it goes.
	_, _, err = runDatalog(t, "why", prog, "-F", facts, `-blocked("a")`)
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "a negated atom goes after --") {
		t.Fatalf("got %v, want a usage error pointing to --", err)
	}
	stdout, _, err = runDatalog(t, "why", prog, "-F", facts, "--json=false", "--max-tuples=1000", "--max-firings=0", "--", `-blocked("b")`)
	if err != nil || !strings.HasPrefix(stdout, `blocked("b") is FALSE_ONLY`) {
		t.Fatalf("after --: %v\n%s", err, stdout)
	}
}

// The default and the position-independent builds both release start-up
// pages before evaluating (a position-independent executable's loader
// writes its relocations, but only into ranges the release leaves alone),
// and both write byte-for-byte the closure computed here independently
// (and the one positive blocked fact).
func TestDatalogReleasesStartPagesInBothBuildModes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the release is Linux only")
	}
	const n = 300
	var edges, want strings.Builder
	for i := 0; i < n; i++ {
		if i+1 < n {
			fmt.Fprintf(&edges, "n%03d\tn%03d\n", i, i+1)
		}
		for j := i + 1; j < n; j++ {
			fmt.Fprintf(&want, "n%03d\tn%03d\n", i, j)
		}
	}
	prog, facts, _ := datalogFixture(t, pathsProgram, edges.String())
	pie := filepath.Join(t.TempDir(), "flrh-pie")
	if out, err := exec.Command("go", "build", "-buildmode=pie", "-o", pie, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=pie: %v\n%s", err, out)
	}
	released := regexp.MustCompile(`start-up pages released: ([1-9][0-9]*) KiB`)
	for name, bin := range map[string]string{"default": buildFlrh(t), "pie": pie} {
		out := t.TempDir()
		cmd := exec.Command(bin, "datalog", prog, "-F", facts, "-D", out, "--stats")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s build: %v\n%s", name, err, stderr.String())
		}
		if !released.MatchString(stderr.String()) {
			t.Errorf("%s build released nothing:\n%s", name, stderr.String())
		}
		got, err := os.ReadFile(filepath.Join(out, "path.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Errorf("%s build: path.csv differs from the closure (%d bytes, want %d)", name, len(got), want.Len())
		}
		blocked, err := os.ReadFile(filepath.Join(out, "blocked.csv"))
		if err != nil || string(blocked) != "c\n" {
			t.Errorf("%s build: blocked.csv %q, %v", name, blocked, err)
		}
	}
}

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A Datalog run collects at 10 % growth while the heap is small, goes to
// 25 % once the heap is large, and leaves the target as it found it.
func TestTuneGCTightensOnlyWhileTheHeapIsSmall(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the run keeps it")
	}
	before := gcPercent()
	restore := tuneGC(nil)
	if got := gcPercent(); got != smallHeapGCPercent {
		restore()
		t.Fatalf("target %d %%, want %d %%", got, smallHeapGCPercent)
	}
	big := make([]byte, largeHeap+(8<<20))
	for i := range big {
		big[i] = byte(i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != largeHeapGCPercent && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	got := gcPercent()
	runtime.KeepAlive(big)
	restore()
	if got != largeHeapGCPercent {
		t.Fatalf("with %d MB live the target is %d %%, want %d %%", len(big)>>20, got, largeHeapGCPercent)
	}
	if after := gcPercent(); after != before {
		t.Fatalf("restored target %d %%, want %d %%", after, before)
	}
}
