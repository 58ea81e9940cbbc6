package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// A schedule's next backup is due at once with none in its directory,
// and every after the newest one otherwise; each backup is named for its
// time, only the newest keep stay, and files that are not scheduled
// backups are left alone.
func TestBackupScheduleDueAndKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := storetest.NewClock()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.EndedWithEverything(t, st, c, "a")
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	b := newBackupSchedule(st, dir, time.Hour, 2, slog.New(slog.DiscardHandler))
	b.now = func() time.Time { return now }
	if due, err := b.due(); err != nil || !due.Equal(now) {
		t.Fatalf("due with no backups: %v, %v", due, err)
	}
	for _, other := range []string{"notes.txt", "flrh-yesterday.db", "flrh.db"} {
		if err := os.WriteFile(filepath.Join(dir, other), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var taken []string
	for i := range 4 {
		if err := b.once(ctx); err != nil {
			t.Fatal(err)
		}
		taken = append(taken, "flrh-"+now.Format("20060102T150405Z")+".db")
		if due, err := b.due(); err != nil || !due.Equal(now.Add(time.Hour)) {
			t.Fatalf("due after backup %d: %v, %v", i, due, err)
		}
		now = now.Add(90 * time.Minute)
	}
	names, partial, err := b.backups()
	if err != nil || !slices.Equal(names, taken[2:]) || len(partial) != 0 {
		t.Fatalf("backups kept: %v (partial %v), %v; want %v", names, partial, err, taken[2:])
	}
	for _, other := range []string{"notes.txt", "flrh-yesterday.db", "flrh.db"} {
		if b, err := os.ReadFile(filepath.Join(dir, other)); err != nil || string(b) != "mine" {
			t.Fatalf("%s: %q, %v", other, b, err)
		}
	}
	for _, n := range names {
		cp, err := sqlite.Open(ctx, filepath.Join(dir, n), sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := cp.Run(ctx, "a"); err != nil || r.Outcome == "" {
			t.Fatalf("%s: run a %+v, %v", n, r, err)
		}
		cp.Close()
	}
	// Taken twice in one second (a process restarted at once): the second
	// finds the first and is content with it.
	now = now.Add(-90 * time.Minute)
	if err := b.once(ctx); err != nil {
		t.Fatalf("a second backup in the same second: %v", err)
	}
}

// flrh serve --backup-dir takes backups on its schedule while it runs
// refunds, keeps the newest --backup-keep, counts them in /metrics, and
// each one verifies. Restarted, it takes the next backup only when the
// newest one is --backup-every old. Bad flags are refused.
func TestServeBacksUpOnASchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	db, backups := filepath.Join(dir, "flrh.db"), filepath.Join(dir, "backups")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--store", "sqlite:" + db, "--backup-every", "1h"}, "need --backup-dir"},
		{[]string{"--store", "postgres://u@127.0.0.1:1/db", "--backup-dir", backups}, "pg_dump"},
		{[]string{"--store", "sqlite:" + db, "--backup-dir", backups, "--backup-every", "10ms"}, "at least 1s"},
		{[]string{"--store", "sqlite:" + db, "--backup-dir", backups, "--backup-keep", "0"}, "at least 1"},
	} {
		out, err := flrh(bin, nil, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...)
		if exitStatus(t, err) != exitUsage || !strings.Contains(out, tc.says) {
			t.Errorf("serve %v: %v, want a usage error saying %q\n%s", tc.args, err, tc.says, out)
		}
	}
	// A partial file of a backup killed mid-way is cleared at start.
	if err := os.MkdirAll(backups, 0o750); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(backups, "flrh-20260101T000000Z.db"+sqlite.PartialSuffix)
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}

	sb := startQuietSandbox(t, bin)
	p := startServe(t, bin, nil, "--store", "sqlite:"+db, "--destination", sb+"/v1/effects", "--backup-dir", backups, "--backup-every", "1s", "--backup-keep", "2")
	for i := range 20 {
		if err := postRefund(p.base, "sched-"+strconv.Itoa(i), 20+i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three scheduled backups", 30*time.Second, func() bool { return backupsTaken(t, p.base) >= 3 })
	stopServe(t, p)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale partial file: %v", err)
	}
	entries, err := os.ReadDir(backups)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range entries {
		kept = append(kept, e.Name())
	}
	if len(kept) != 2 {
		t.Fatalf("backups kept: %v; want the newest 2", kept)
	}
	for _, n := range kept {
		if out, err := flrh(bin, nil, "verify", "--all", "--store", "sqlite:"+filepath.Join(backups, n)); err != nil {
			t.Fatalf("verify %s: %v\n%s", n, err, out)
		}
	}

	// Restarted with an hour between backups: the newest is seconds old,
	// so none is due.
	p = startServe(t, bin, nil, "--store", "sqlite:"+db, "--destination", sb+"/v1/effects", "--backup-dir", backups, "--backup-every", "1h")
	time.Sleep(1500 * time.Millisecond)
	if n := backupsTaken(t, p.base); n != 0 {
		t.Fatalf("restarted with a backup seconds old, serve took %v", n)
	}
	stopServe(t, p)
	if after, _ := os.ReadDir(backups); len(after) != 2 {
		t.Fatalf("after the restart: %d files", len(after))
	}
}

var backupsOK = regexp.MustCompile(`(?m)^flrh_backups_total\{outcome="ok"\} (\d+)$`)

// backupsTaken reads flrh_backups_total{outcome="ok"} from a serve
// process's /metrics.
func backupsTaken(t *testing.T, base string) float64 {
	t.Helper()
	return metricOf(t, base, backupsOK)
}

var pruneMetric = regexp.MustCompile(`(?m)^flrh_prune_runs_total\{result="pruned"\} (\d+)$`)

// flrh serve --prune-ended-after prunes the runs that ended, as flrh
// store prune does, while it runs more: each archive verifies against the
// store, and verify reports the runs pruned. Bad flags are refused.
func TestServePrunesOnASchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	db, archives := filepath.Join(dir, "flrh.db"), filepath.Join(dir, "archive")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--prune-archive", archives}, "need --prune-ended-after"},
		{[]string{"--prune-abandoned"}, "need --prune-ended-after"},
		{[]string{"--prune-compress"}, "need --prune-ended-after"},
		{[]string{"--prune-ended-after", "1h", "--prune-discard", "--prune-compress"}, "--prune-discard writes none"},
		{[]string{"--prune-ended-after", "1h"}, "exactly one of --prune-archive DIR and --prune-discard"},
		{[]string{"--prune-ended-after", "1h", "--prune-archive", archives, "--prune-discard"}, "exactly one of"},
		{[]string{"--prune-ended-after", "-1h", "--prune-discard"}, "must not be negative"},
		{[]string{"--prune-ended-after", "1h", "--prune-discard", "--prune-every", "1ms"}, "at least 1s"},
	} {
		out, err := flrh(bin, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db}, tc.args...)...)
		if exitStatus(t, err) != exitUsage || !strings.Contains(out, tc.says) {
			t.Errorf("serve %v: %v, want a usage error saying %q\n%s", tc.args, err, tc.says, out)
		}
	}

	sb := startQuietSandbox(t, bin)
	p := startServe(t, bin, nil, "--store", "sqlite:"+db, "--destination", sb+"/v1/effects",
		"--prune-ended-after", "1s", "--prune-archive", archives, "--prune-every", "1s")
	const runs = 8
	for i := range runs {
		if err := postRefund(p.base, "pr-"+strconv.Itoa(i), 20+i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every run pruned", 60*time.Second, func() bool { return metricOf(t, p.base, pruneMetric) >= runs })
	stopServe(t, p)
	files, err := filepath.Glob(filepath.Join(archives, "*"+archiveSuffix))
	if err != nil || len(files) != runs {
		t.Fatalf("archives: %v, %v", files, err)
	}
	out, err := flrh(bin, nil, append([]string{"verify", "--store", "sqlite:" + db}, prefixed("--archive", files)...)...)
	if err != nil || strings.Count(out, "verified") < runs {
		t.Fatalf("the archives against the store: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, "verify", "--all", "--store", "sqlite:"+db)
	if err != nil || strings.Count(out, ": pruned") != runs {
		t.Fatalf("verify --all after scheduled pruning: %v\n%s", err, out)
	}
}

// prefixed puts flag before each value.
func prefixed(flag string, values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, flag, v)
	}
	return out
}

// metricOf reads the value re's one group captures from a serve process's
// /metrics.
func metricOf(t *testing.T, base string, re *regexp.Regexp) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /metrics:\n%s", re, b)
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n
}
