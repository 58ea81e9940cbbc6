package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store/sqlite"
)

// flrh store backup, through the binary, on a store holding runs a real
// runner wrote (one of them pruned): bad flags, the copy verified and
// read as the store reads, a run that fails verification reported, a
// process killed with SIGKILL before the copy is named, and the copy
// restored in the store's place and written to.
func TestBackupCommand(t *testing.T) {
	bin := buildFlrh(t)
	ctx := context.Background()
	dir := t.TempDir()
	spec := "sqlite:" + filepath.Join(dir, "flrh.db")
	recordRuns(t, spec, true, 800, 30)
	cli := func(env []string, args ...string) (string, int) {
		t.Helper()
		out, err := flrh(bin, env, args...)
		return out, exitStatus(t, err)
	}
	if out, code := cli(nil, "store", "prune", "--ended-before", "0s", "--discard", "--limit", "1", "--store", spec); code != 0 {
		t.Fatalf("prune: exit %d\n%s", code, out)
	}
	verifyAll := func(spec string) string {
		t.Helper()
		out, code := cli(nil, "verify", "--all", "--store", spec)
		if code != 0 {
			t.Fatalf("verify --all --store %s: exit %d\n%s", spec, code, out)
		}
		return out
	}
	want := verifyAll(spec)
	if !strings.Contains(want, "run small: pruned") {
		t.Fatalf("the store before its backup:\n%s", want)
	}

	// Bad flags change nothing and say why.
	taken := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(taken, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--store", spec}, "--to FILE is required"},
		{[]string{"--store", spec, "--to", taken}, "never overwrites"},
		{[]string{"--store", spec, "--to", filepath.Join(dir, "flrh.db")}, "never overwrites"},
		{[]string{"--store", spec, "--to", filepath.Join(dir, "no", "b.db")}, "no such directory"},
		{[]string{"--store", "sqlite:" + filepath.Join(dir, "none.db"), "--to", filepath.Join(dir, "b.db")}, "no store at"},
		{[]string{"--store", "postgres://u@127.0.0.1:1/db", "--to", filepath.Join(dir, "b.db")}, "pg_dump"},
	} {
		out, code := cli(nil, append([]string{"store", "backup"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.says) {
			t.Errorf("backup %v: exit %d, want %d saying %q\n%s", tc.args, code, exitUsage, tc.says, out)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "mine" {
		t.Fatalf("the file in the way now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused backup wrote a file: %v", err)
	}

	// Killed with the copy whole but not yet named: no backup, and the
	// next one replaces the partial file.
	dest := filepath.Join(dir, "backup.db")
	out, code := cli([]string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=backup-written"}, "store", "backup", "--store", spec, "--to", dest)
	if code != -1 || !strings.Contains(out, "SIGKILL at backup-written") {
		t.Fatalf("backup killed: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("a killed backup named its copy: %v", err)
	}
	if _, err := os.Stat(dest + sqlite.PartialSuffix); err != nil {
		t.Fatalf("the killed backup's partial file: %v", err)
	}

	out, code = cli(nil, "store", "backup", "--store", spec, "--to", dest, "--verify", "--json")
	var rep backupReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("backup --verify: exit %d\n%s", code, out)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Path != dest || rep.Bytes != fi.Size() || rep.Runs != 4 || rep.SchemaVersion != sqlite.SchemaVersion ||
		rep.Verified == nil || rep.Verified.Runs != 4 || rep.Verified.Pruned != 1 || rep.Verified.Failed != 0 {
		t.Fatalf("backup --verify: %+v\n%s", rep, out)
	}
	if _, err := os.Stat(dest + sqlite.PartialSuffix); !os.IsNotExist(err) {
		t.Fatalf("the partial file is left: %v", err)
	}
	if got := verifyAll("sqlite:" + dest); got != want {
		t.Fatalf("the copy verifies otherwise:\n%s\nthe store:\n%s", got, want)
	}
	for _, args := range [][]string{{"run", "list"}, {"run", "events", "large"}, {"run", "trace", "agent-1"}, {"store", "check"}} {
		a, ca := cli(nil, append(args, "--store", spec)...)
		b, cb := cli(nil, append(args, "--store", "sqlite:"+dest)...)
		if ca != 0 || cb != ca || a != b {
			t.Fatalf("flrh %v reads otherwise from the copy (exit %d, %d):\n%s\nthe store:\n%s", args, cb, ca, b, a)
		}
	}

	// A run that fails verification in the store fails in its copy, which
	// is kept.
	corrupt := `UPDATE attempts SET generation = generation + 100 WHERE intent_id IN (SELECT intent_id FROM intents WHERE run_id = 'large')`
	rawExec(t, spec, corrupt)
	bad := filepath.Join(dir, "bad.db")
	out, code = cli(nil, "store", "backup", "--store", spec, "--to", bad, "--verify")
	if code != 1 || !strings.Contains(out, "1 of 4 runs fail") || !strings.Contains(out, "run large:") {
		t.Fatalf("backup --verify of a store with a run that fails: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Fatalf("the copy of a store that fails verification: %v", err)
	}
	rawExec(t, spec, strings.Replace(corrupt, "+ 100", "- 100", 1))

	// Restored in a store's place, the copy is a store that runs write to.
	restored := filepath.Join(t.TempDir(), "flrh.db")
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(restored, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := openStore(ctx, "sqlite:"+restored, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	l, err := rs.AcquireLease(ctx, "agent-0", "restorer", time.Minute)
	if err != nil {
		t.Fatalf("a lease on the restored store: %v", err)
	}
	if err := rs.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(restored + "-wal"); err != nil {
		t.Fatalf("the restored store is not in WAL mode again: %v", err)
	}
}

// A store restored from a backup taken before a refund was approved and
// paid: the run waits for its approval again, and approved again it pays
// nothing twice (the destination answers the same idempotency key with
// its first result). Restore refuses while the store is open, is killed
// with SIGKILL at both cut points and run again, and sets the store it
// replaces aside whole.
func TestRestoreCommand(t *testing.T) {
	c := newCLIRig(t)
	ctx := context.Background()
	path := strings.TrimPrefix(c.store, "--store=sqlite:")
	out := c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest)
	req := approvalRequest.FindString(out)
	if req == "" {
		t.Fatalf("no approval request in:\n%s", out)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	c.ok("store", "backup", "--to", backup)
	if out := c.ok("approve", "big", req, "--as", "finance-lead", c.dest); !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Fatalf("approve:\n%s", out)
	}
	if n := len(mutations(t, c.base)); n != 1 {
		t.Fatalf("%d mutations after the approval", n)
	}

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"store", "restore"}, "--from BACKUP is required"},
		{[]string{"store", "restore", "--from", filepath.Join(t.TempDir(), "none.db")}, "no backup at"},
		{[]string{"store", "restore", "--from", path}, "is the store itself"},
	} {
		if out, code := c.run(tc.args...); code != exitUsage || !strings.Contains(out, tc.says) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", tc.args, code, exitUsage, tc.says, out)
		}
	}
	if out, err := flrh(c.bin, nil, "store", "restore", "--from", backup, "--store", "postgres://u@127.0.0.1:1/db"); exitStatus(t, err) != exitUsage || !strings.Contains(out, "pg_restore") {
		t.Errorf("restore of a PostgreSQL store: %v\n%s", err, out)
	}
	held, err := openStore(ctx, "sqlite:"+path, true)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := c.run("store", "restore", "--from", backup); code != 1 || !strings.Contains(out, "stop everything that uses it") {
		t.Fatalf("restore while the store is open: exit %d\n%s", code, out)
	}
	held.Close()
	if out := c.ok("run", "show", "big"); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("the store after a refused restore:\n%s", out)
	}

	// Killed with the copy whole beside the store: the store is in its
	// place. Killed with the store set aside: no store at the path.
	for _, point := range []string{"restore-written", "restore-set-aside"} {
		out, err := flrh(c.bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + point}, "store", "restore", "--from", backup, c.store)
		if code := exitStatus(t, err); code != -1 || !strings.Contains(out, "SIGKILL at "+point) {
			t.Fatalf("restore killed at %s: exit %d\n%s", point, code, out)
		}
		if _, err := os.Stat(path + sqlite.PartialSuffix); err != nil {
			t.Fatalf("killed at %s, the copy: %v", point, err)
		}
		if point == "restore-written" {
			if out := c.ok("run", "show", "big"); !strings.Contains(out, "SUCCEEDED") {
				t.Fatalf("killed at %s, the store:\n%s", point, out)
			}
		} else if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("killed at %s, a store is at the path: %v", point, err)
		}
	}
	aside, _ := filepath.Glob(path + sqlite.ReplacedInfix + "*Z")
	if len(aside) != 1 {
		t.Fatalf("stores set aside: %v", aside)
	}
	out = c.ok("store", "restore", "--from", backup, "--json")
	var rep restoreReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Path != path || rep.Runs != 1 || rep.Replaced != "" || rep.SchemaVersion != sqlite.SchemaVersion {
		t.Fatalf("restore: %+v, %v\n%s", rep, err, out)
	}
	if out, err := flrh(c.bin, nil, "run", "show", "big", "--store", "sqlite:"+aside[0]); err != nil || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("the store set aside: %v\n%s", err, out)
	}

	if out := c.ok("run", "show", "big"); !strings.Contains(out, "WAIT_APPROVAL") {
		t.Fatalf("the restored run:\n%s", out)
	}
	if out := c.ok("approve", "big", req, "--as", "finance-lead", c.dest); !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Fatalf("approve again:\n%s", out)
	}
	if n := len(mutations(t, c.base)); n != 1 {
		t.Fatalf("%d mutations after the restored run was approved again; want the first one only", n)
	}
	c.ok("verify", "--all")
}

// Backups taken by another process while flrh serve runs refunds: each
// copy verifies, and holds every run as a prefix of what the store holds
// once the server stops (the same events up to its head, by chain hash).
// A restore while the server has the store open is refused.
func TestBackupWhileServeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	db := filepath.Join(dir, "flrh.db")
	p := startServe(t, bin, nil, "--store", "sqlite:"+db, "--destination", sb+"/v1/effects")
	stop := make(chan struct{})
	posted := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				posted <- nil
				return
			default:
			}
			if err := postRefund(p.base, fmt.Sprintf("bk-%03d", i), 10+i%50); err != nil {
				posted <- err
				return
			}
		}
	}()
	var backups []string
	for i := range 3 {
		time.Sleep(300 * time.Millisecond)
		b := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		out, err := flrh(bin, nil, "store", "backup", "--store", "sqlite:"+db, "--to", b, "--verify")
		if err != nil || !strings.Contains(out, "verified the copy") || !strings.Contains(out, "intact") {
			t.Fatalf("backup %d while serve runs: %v\n%s", i, err, out)
		}
		backups = append(backups, b)
	}
	if out, err := flrh(bin, nil, "store", "restore", "--store", "sqlite:"+db, "--from", backups[0]); exitStatus(t, err) != 1 || !strings.Contains(out, "stop everything that uses it") {
		t.Fatalf("restore while serve runs: %v\n%s", err, out)
	}
	close(stop)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	stopServe(t, p)

	ctx := context.Background()
	final, err := sqlite.Open(ctx, db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	prev := int64(0)
	for i, b := range backups {
		cp, err := sqlite.Open(ctx, b, sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := cp.Runs(ctx, "", 100000)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(runs)) < prev || len(runs) == 0 {
			t.Fatalf("backup %d holds %d runs, the one before %d", i, len(runs), prev)
		}
		prev = int64(len(runs))
		live := 0
		for _, r := range runs {
			if r.Outcome == "" {
				live++
			}
			evs, err := final.Events(ctx, r.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Head > int64(len(evs)) || (r.Head > 0 && evs[r.Head-1].ChainHash != r.HeadHash) {
				t.Fatalf("backup %d: run %s at head %d (%s) is not a prefix of the store's %d events", i, r.ID, r.Head, r.HeadHash, len(evs))
			}
		}
		t.Logf("backup %d: %d runs, %d of them live", i, len(runs), live)
		cp.Close()
	}
	if out, err := flrh(bin, nil, "verify", "--all", "--store", "sqlite:"+db); err != nil {
		t.Fatalf("verify --all after the backups: %v\n%s", err, out)
	}
}

// flrh store check --integrity finds no fault in a sound store and each
// fault of a damaged page, exiting 1; a PostgreSQL store is refused.
func TestStoreCheckIntegrity(t *testing.T) {
	bin := buildFlrh(t)
	path := filepath.Join(t.TempDir(), "flrh.db")
	recordRuns(t, "sqlite:"+path, true, 800)
	out, err := flrh(bin, nil, "store", "check", "--integrity", "--json", "--store", "sqlite:"+path)
	var rep storeReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.IntegrityChecked || len(rep.Integrity) != 0 || rep.Problems != 0 {
		t.Fatalf("a sound store: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "store", "check", "--integrity", "--store", "sqlite:"+path); err != nil || !strings.Contains(out, "integrity: every page checked, no fault") {
		t.Fatalf("a sound store: %v\n%s", err, out)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 512)), fi.Size()-4096+8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err = flrh(bin, nil, "store", "check", "--integrity", "--store", "sqlite:"+path)
	if exitStatus(t, err) != 1 || !strings.Contains(out, "integrity: ") || !strings.Contains(out, "fault(s)") {
		t.Fatalf("a damaged page: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, "store", "check", "--integrity", "--store", "postgres://u@127.0.0.1:1/db")
	if exitStatus(t, err) != exitUsage || !strings.Contains(out, "PostgreSQL checks its own") {
		t.Fatalf("--integrity on PostgreSQL: %v\n%s", err, out)
	}
}

// A store encrypted at rest is backed up encrypted: --verify without the
// key says the copy is written but could not be verified (exit 1); with
// the key, the copy verifies.
func TestBackupOfASealedStore(t *testing.T) {
	bin := buildFlrh(t)
	dir := t.TempDir()
	spec := "sqlite:" + filepath.Join(dir, "flrh.db")
	key := []string{"FLRH_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	if out, err := flrh(bin, key, "run", "start", "example:refund-agent", "--id", "s1", "--input-json", largeRefund, "--store", spec); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	plain := filepath.Join(dir, "plain.db")
	out, err := flrh(bin, nil, "store", "backup", "--store", spec, "--to", plain, "--verify")
	if exitStatus(t, err) != 1 || !strings.Contains(out, "backed up 1 runs") || !strings.Contains(out, "the backup is written, but could not be verified") || !strings.Contains(out, "SEALED") {
		t.Fatalf("backup --verify without the key: %v\n%s", err, out)
	}
	if _, err := os.Stat(plain); err != nil {
		t.Fatal(err)
	}
	keyed := filepath.Join(dir, "keyed.db")
	if out, err := flrh(bin, key, "store", "backup", "--store", spec, "--to", keyed, "--verify"); err != nil || !strings.Contains(out, "1 runs intact") {
		t.Fatalf("backup --verify with the key: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "run", "trace", "s1", "--store", "sqlite:"+keyed); err == nil || !strings.Contains(out, "SEALED") {
		t.Fatalf("the copy's trace read without the key: %v\n%s", err, out)
	}
}
