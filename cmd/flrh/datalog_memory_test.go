package main

import (
	"os"
	"strings"
	"testing"
)

func TestByteSizeParsesUnits(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		str  string
	}{
		{"0", 0, "0B"},
		{"1500", 1500, "1500B"},
		{"64B", 64, "64B"},
		{"2KiB", 2 << 10, "2KiB"},
		{"512MiB", 512 << 20, "512MiB"},
		{"4GiB", 4 << 30, "4GiB"},
		{" 3 GiB ", 3 << 30, "3GiB"},
		{"1TiB", 1 << 40, "1TiB"},
		{"2kB", 2000, "2000B"},
		{"3MB", 3e6, "3000000B"},
		{"2GB", 2e9, "1953125KiB"},
		{"1536MiB", 1536 << 20, "1536MiB"},
	}
	for _, tc := range cases {
		var b byteSize
		if err := b.Set(tc.in); err != nil || int64(b) != tc.want || b.String() != tc.str {
			t.Errorf("Set(%q): %d %q %v, want %d %q", tc.in, int64(b), b.String(), err, tc.want, tc.str)
			continue
		}
		// String round-trips through Set.
		var again byteSize
		if err := again.Set(b.String()); err != nil || again != b {
			t.Errorf("Set(%q) after String: %d %v", b.String(), again, err)
		}
	}
	for _, bad := range []string{"", "GiB", "-1", "-1GiB", "1.5GiB", "4 gigabytes", "3XB", "9000000TiB", "99999999999999999999"} {
		b := byteSize(7)
		if err := b.Set(bad); err == nil || b != 7 {
			t.Errorf("Set(%q) = %d, %v; want an error and no change", bad, b, err)
		}
	}
}

const runawayProgram = `.decl n(x: number)
.output n
n(0).
n(x + 1) :- n(x).
`

func TestDatalogMaxMemory(t *testing.T) {
	cmd, _, err := rootCmd.Find([]string{"datalog"})
	if err != nil {
		t.Fatal(err)
	}
	flag := cmd.Flags().Lookup("max-memory")
	// The default is 1 GiB, and flags outlive a run: later tests get it back.
	if flag == nil || flag.DefValue != "1GiB" || flag.Value.Type() != "size" {
		t.Fatalf("--max-memory flag: %+v", flag)
	}
	t.Cleanup(func() { flag.Value.Set(flag.DefValue) })
	prog, facts, out := datalogFixture(t, runawayProgram, "")
	// A runaway program stops at the memory budget: exit 1, the rule's
	// position and the budget in the message, nothing written.
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=false", "--explain=false", "--max-tuples=0", "--max-firings=0", "--max-memory=1MiB")
	if err == nil || exitCode(err) != exitFailure {
		t.Fatalf("got %v (exit %d), want a memory budget failure", err, exitCode(err))
	}
	for _, want := range []string{"MEMORY_BUDGET_EXHAUSTED", "p.dl:4:1", "exceed the memory budget of 1048576", "last rule: n((x + 1)) :- n(x)."} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err.Error(), want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("partial output written: %v", entries)
	}
	// A bounded program under the budget runs, and --stats prints the
	// footprint the budget measures.
	prog, facts, out = datalogFixture(t, pathsProgram, "a\tb\nb\tc\n")
	_, stderr, err := runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=true", "--explain=false", "--max-tuples=1000", "--max-firings=0", "--max-memory=1MiB")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "relation storage: ") || !strings.Contains(stderr, "MiB; what --max-memory bounds)") {
		t.Fatalf("stats:\n%s", stderr)
	}
	// A size that does not parse is a usage error naming the flag.
	_, _, err = runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--max-memory=lots")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--max-memory") || !strings.Contains(err.Error(), "not a size") {
		t.Fatalf("got %v (exit %d), want a usage error", err, exitCode(err))
	}
}
