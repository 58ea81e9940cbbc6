package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
)

var (
	pruneDutyHeldMetric   = regexp.MustCompile(`(?m)^flrh_prune_duty_held (\d+)$`)
	pruneElsewhereMetric  = regexp.MustCompile(`(?m)^flrh_prune_runs_total\{result="elsewhere"\} (\d+)$`)
	pruneLeftMetric       = regexp.MustCompile(`(?m)^flrh_prune_runs_total\{result="left"\} (\d+)$`)
	prunePassesElsewhere  = regexp.MustCompile(`(?m)^flrh_prune_passes_total\{outcome="elsewhere"\} (\d+)$`)
	prunePassesFailed     = regexp.MustCompile(`(?m)^flrh_prune_passes_total\{outcome="failed"\} (\d+)$`)
	pruneArchivesInDirFmt = "*" + archiveSuffix
)

// Three servers sharing one PostgreSQL, each told to prune on a schedule
// into an archive directory of its own (as on three machines): one at a
// time holds the store's pruning duty and prunes, the others skip their
// passes, and every run is pruned once, by one server, into its
// directory. A holder stopped gracefully gives the duty up and another
// server takes it at its next pass; a holder killed (SIGKILL) keeps it
// until its lease lapses, then another takes it.
func TestServersShareThePruningDuty(t *testing.T) {
	spec, st := pgStoreURL(t)
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	ctx := context.Background()
	const servers = 3
	procs := make([]*serveProc, servers)
	dirs := make([]string, servers)
	for i := range procs {
		dirs[i] = t.TempDir()
		procs[i] = startServe(t, bin, nil, "--store", spec, "--destination", sb+"/v1/effects",
			"--prune-ended-after", "1s", "--prune-archive", dirs[i], "--prune-every", "1s")
	}
	alive := map[int]bool{0: true, 1: true, 2: true}
	pruned := make([]float64, servers) // each server's pruned runs, as last read
	archives := func(i int) int {
		files, err := filepath.Glob(filepath.Join(dirs[i], pruneArchivesInDirFmt))
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}
	// holder returns the one live server that says it holds the duty; -1
	// while none or several do (a holder that lost the duty says so at its
	// next pass, a second later).
	holder := func() int {
		h := -1
		for i := range procs {
			if !alive[i] || metricOf(t, procs[i].base, pruneDutyHeldMetric) != 1 {
				continue
			}
			if h >= 0 {
				return -1
			}
			h = i
		}
		return h
	}
	started := 0
	round := func(what string, runs int) int {
		t.Helper()
		for range runs {
			id := fmt.Sprintf("duty-%d", started)
			// Started through any live server; advanced by whichever claims it.
			for i := range procs {
				if alive[(started+i)%servers] {
					startRefund(t, procs[(started+i)%servers].base, id, 20)
					break
				}
			}
			started++
		}
		eventually(t, what+": every run pruned", 90*time.Second, func() bool {
			total := 0.0
			for i := range procs {
				if alive[i] {
					pruned[i] = metricOf(t, procs[i].base, pruneMetric)
				}
				total += pruned[i]
			}
			return total >= float64(started)
		})
		h := -1
		var d store.Duty
		eventually(t, what+": one server holds the pruning duty, as the store says", 10*time.Second, func() bool {
			var err error
			if h = holder(); h < 0 {
				return false
			}
			if d, err = st.Duty(ctx, pruneDuty); err != nil {
				t.Fatal(err)
			}
			return d.Holder == procs[h].owner()
		})
		total, files := 0.0, 0
		for i := range procs {
			total += pruned[i]
			files += archives(i)
			if int(pruned[i]) != archives(i) {
				t.Fatalf("%s: server %d pruned %v runs and holds %d archives", what, i, pruned[i], archives(i))
			}
			if !alive[i] {
				continue
			}
			for _, m := range []*regexp.Regexp{pruneElsewhereMetric, pruneLeftMetric, prunePassesFailed} {
				if n := metricOf(t, procs[i].base, m); n != 0 {
					t.Fatalf("%s: server %d counts %v for %s\n%s", what, i, n, m, procs[i].stderr)
				}
			}
		}
		if int(total) != started || files != started {
			t.Fatalf("%s: %v runs pruned, %d archives, for %d runs", what, total, files, started)
		}
		for i := range started {
			id := fmt.Sprintf("duty-%d", i)
			if _, err := st.Pruning(ctx, id); err != nil {
				t.Fatalf("%s: %s: %v", what, id, err)
			}
		}
		return h
	}

	first := round("three servers", 6)
	for i := range procs {
		if i != first && metricOf(t, procs[i].base, prunePassesElsewhere) == 0 {
			t.Fatalf("server %d, not holding the duty, counts no pass skipped for it", i)
		}
	}
	if int(pruned[first]) != 6 {
		t.Fatalf("the holder, server %d, pruned %v runs of 6", first, pruned[first])
	}
	// flrh store check names the holder.
	out, err := flrh(bin, nil, "store", "check", "--json", "--store", spec)
	var rep storeReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Duties) != 1 ||
		rep.Duties[0].Name != pruneDuty || rep.Duties[0].Holder != procs[first].owner() || rep.Duties[0].Lapsed {
		t.Fatalf("store check: %v, duties %+v\n%s", err, rep.Duties, out)
	}

	// Stopped gracefully, the holder gives the duty up: the store says so
	// at once, and another server prunes the next runs.
	before, err := st.Duty(ctx, pruneDuty)
	if err != nil {
		t.Fatal(err)
	}
	stopServe(t, procs[first])
	alive[first] = false
	if d, err := st.Duty(ctx, pruneDuty); err != nil || (d.Holder == procs[first].owner()) {
		t.Fatalf("after the holder stopped, the duty is %+v (%v)", d, err)
	}
	second := round("the holder stopped", 4)
	if second == first || int(pruned[second]) != 4 {
		t.Fatalf("after server %d stopped, server %d holds the duty having pruned %v of 4 runs", first, second, pruned[second])
	}
	if d, _ := st.Duty(ctx, pruneDuty); d.Generation <= before.Generation {
		t.Fatalf("the duty passed from server %d to %d at generation %d, it was at %d", first, second, d.Generation, before.Generation)
	}

	// Killed, the holder keeps the duty until its lease lapses (two
	// intervals); then the last server takes it.
	if err := procs[second].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-procs[second].exited
	alive[second] = false
	killed := time.Now()
	third := round("the holder killed", 3)
	if third == first || third == second || int(pruned[third]) != 3 {
		t.Fatalf("after server %d was killed, server %d holds the duty having pruned %v of 3 runs", second, third, pruned[third])
	}
	t.Logf("the duty passed %s after its holder was killed", time.Since(killed).Round(100*time.Millisecond))
	out, err = flrh(bin, nil, "verify", "--all", "--store", spec)
	if err != nil || strings.Count(out, ": pruned") != started {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
}

var pruneKeptMetric = regexp.MustCompile(`(?m)^flrh_prune_kept_runs (\d+)$`)

// flrh serve --prune-ended-after keeps a run that ended with an effect a
// person abandoned, and says so in flrh_prune_kept_runs, pass after pass;
// restarted with --prune-abandoned (and --prune-compress) it prunes it,
// the compressed archive holding the effect open, and keeps nothing.
func TestServePrunesAbandonedRunsWhenTold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	ctx := context.Background()
	dir := t.TempDir()
	db, archives := filepath.Join(dir, "flrh.db"), filepath.Join(dir, "archive")
	st, err := openStore(ctx, "sqlite:"+db, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := refundruns.Record(t, st, "", false, 20, 30)
	ab := refundruns.Abandoned(t, st, "")
	st.Close()

	args := []string{"--store", "sqlite:" + db, "--prune-ended-after", "1ms", "--prune-archive", archives, "--prune-every", "1s"}
	p := startServe(t, bin, nil, args...)
	eventually(t, "the closed runs pruned", 30*time.Second, func() bool { return metricOf(t, p.base, pruneMetric) == float64(len(ids)) })
	eventually(t, "the abandoned run kept", 30*time.Second, func() bool { return metricOf(t, p.base, pruneKeptMetric) == 1 })
	stopServe(t, p)
	if _, err := os.Stat(filepath.Join(archives, ab+archiveSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the abandoned run was archived without --prune-abandoned: %v", err)
	}

	p = startServe(t, bin, nil, append(args, "--prune-abandoned", "--prune-compress")...)
	eventually(t, "the abandoned run pruned", 30*time.Second, func() bool { return metricOf(t, p.base, pruneMetric) == 1 })
	if n := metricOf(t, p.base, pruneKeptMetric); n != 0 {
		t.Fatalf("with --prune-abandoned the pass kept %v runs", n)
	}
	stopServe(t, p)
	doc, err := readArchiveFile(filepath.Join(archives, ab+archiveSuffix+".gz"))
	if err != nil || !strings.Contains(string(doc), `"outbox":"`) || strings.Count(string(doc), `"outbox":"done"`) != 0 {
		t.Fatalf("the abandoned run's archive (%v) does not hold its effect open", err)
	}
	out, err := flrh(bin, nil, "verify", "--all", "--store", "sqlite:"+db)
	if err != nil || strings.Count(out, ": pruned") != len(ids)+1 {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
}
