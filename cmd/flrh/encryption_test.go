package main

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestEncryptedRunOverTheCLI runs a bundle with encryption at rest through
// separate flrh processes: the run completes, verifies and replays with the
// key; without it, or with another key, the commands that need the sealed
// records fail with a clear error; the database files hold no checkpoint
// or trace content in clear; and a flipped bit in the latest checkpoint
// quarantines the run instead of resuming it.
func TestEncryptedRunOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	dbPath := filepath.Join(dir, "flrh.db")
	storeFlag := "--store=sqlite:" + dbPath
	dest := "--destination=" + base + "/v1/effects"
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, 32))
	withKey := []string{"FLRH_ENCRYPTION_KEY=" + key}
	run := func(env []string, args ...string) string {
		t.Helper()
		out, err := flrh(bin, env, args...)
		if err != nil {
			t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	input := `{"type":"refund.requested/1","payload":{"refund_id":"r-enc","amount":400,"payee":"alice","reason":"damaged item"}}`
	out := run(withKey, "run", "start", "example:refund-agent", "--id", "enc", "--input-json", input, storeFlag, dest)
	req := approvalRequest.FindString(out)
	if !strings.Contains(out, "WAIT_APPROVAL") || req == "" {
		t.Fatalf("a 400 refund should wait for approval:\n%s", out)
	}
	out = run(withKey, "approve", "enc", req, "--as", "finance-lead", storeFlag, dest)
	if !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Fatalf("approved refund did not succeed:\n%s", out)
	}
	if out := run(withKey, "verify", "enc", storeFlag); !strings.Contains(out, "verified") {
		t.Fatalf("verify with the key:\n%s", out)
	}
	if out := run(withKey, "replay", "enc", storeFlag); !strings.Contains(out, "identical") {
		t.Fatalf("replay with the key:\n%s", out)
	}
	traceJSON := run(withKey, "run", "trace", "enc", "--json", storeFlag)
	if !strings.Contains(traceJSON, "mrp.journey") || !strings.Contains(traceJSON, "journey") {
		t.Fatalf("trace with the key:\n%s", traceJSON)
	}
	// A key file serves as well as the variable; one readable by others is
	// refused.
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(nil, "verify", "enc", storeFlag, "--encryption-key-file", keyFile)
	// So does a command printing the keys, as a key service's CLI would,
	// named by the flag or the variable; one that fails is refused.
	if out := run(nil, "replay", "enc", storeFlag, "--encryption-key-command", "cat "+keyFile); !strings.Contains(out, "identical") {
		t.Fatalf("replay with the key from a command:\n%s", out)
	}
	run([]string{encryptionKeyCommandEnv + "=cat " + keyFile}, "verify", "enc", storeFlag)
	if out, err := flrh(bin, nil, "verify", "enc", storeFlag, "--encryption-key-command", "echo key service unreachable >&2; exit 1"); err == nil || !strings.Contains(out, `"key service unreachable"`) {
		t.Fatalf("a failing key command: %v\n%s", err, out)
	}
	os.Chmod(keyFile, 0o644)
	if out, err := flrh(bin, nil, "verify", "enc", storeFlag, "--encryption-key-file", keyFile); err == nil || !strings.Contains(out, "readable by others") {
		t.Fatalf("a world-readable key file was used: %v\n%s", err, out)
	}

	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"no key", nil, "no encryption key was given"},
		{"other key", []string{"FLRH_ENCRYPTION_KEY=" + other}, "does not hold"},
	} {
		for _, args := range [][]string{{"verify", "enc"}, {"replay", "enc"}, {"run", "trace", "enc", "--json"}} {
			out, err := flrh(bin, c.env, append(args, storeFlag)...)
			if err == nil || !strings.Contains(out, "SEALED") || !strings.Contains(out, c.want) {
				t.Fatalf("%s: flrh %s: %v\n%s", c.name, strings.Join(args, " "), err, out)
			}
			if strings.Contains(out, key) {
				t.Fatalf("%s: the output quotes the key", c.name)
			}
		}
	}

	// Every byte written: the trace's content and the checkpoint's kind
	// appear nowhere in clear (the events, which are not sealed, do hold
	// the input).
	for _, plain := range []string{"flrh.runner.checkpoint", `"strip"`, "journey_strip", `"fhr_chain"`} {
		for _, f := range dbFiles(t, dir) {
			if bytes.Contains(f.body, []byte(plain)) {
				t.Fatalf("%s holds %q in clear", f.name, plain)
			}
		}
	}

	// Tamper with the latest checkpoint, as someone with the file could,
	// and start another run: the tampered one is quarantined, never resumed.
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	start := run(withKey, "run", "start", "example:refund-agent", "--id", "enc2", "--input-json",
		`{"type":"refund.requested/1","payload":{"refund_id":"r-enc2","amount":400,"payee":"bob","reason":"late"}}`, storeFlag, dest)
	req2 := approvalRequest.FindString(start)
	var body []byte
	if err := db.QueryRow(`SELECT body FROM checkpoints WHERE run_id = 'enc2' ORDER BY n DESC LIMIT 1`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	body[len(body)-3] ^= 0x01
	if _, err := db.Exec(`DROP TRIGGER checkpoints_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE checkpoints SET body = ? WHERE run_id = 'enc2' AND n = (SELECT MAX(n) FROM checkpoints WHERE run_id = 'enc2')`, body); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Approving reads the checkpoint first and is refused...
	out, err = flrh(bin, withKey, "approve", "enc2", req2, "--as", "finance-lead", storeFlag, dest)
	if err == nil || !strings.Contains(out, "CORRUPT") || !strings.Contains(out, "fails authentication") {
		t.Fatalf("approving over a tampered checkpoint: %v\n%s", err, out)
	}
	// ...and the runner, on its next visit, parks the run for good.
	out, _ = flrh(bin, withKey, "run", "resume", "enc2", storeFlag, dest)
	show := run(withKey, "run", "show", "enc2", storeFlag)
	if !strings.Contains(show, "QUARANTINED") || !strings.Contains(show, "fails authentication") {
		t.Fatalf("a tampered checkpoint did not quarantine the run:\nresume: %s\nshow: %s", out, show)
	}
	if n := len(mutations(t, base)); n != 1 {
		t.Fatalf("%d mutations at the destination, want the first run's 1", n)
	}
}

type dbFile struct {
	name string
	body []byte
}

// dbFiles reads every file of the SQLite database in dir (main file, WAL,
// shared memory).
func dbFiles(t *testing.T, dir string) []dbFile {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "flrh.db*"))
	if len(matches) == 0 {
		t.Fatal("no database files")
	}
	var out []dbFile
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dbFile{filepath.Base(m), b})
	}
	return out
}

// TestKeysRotatedOnSIGHUP: flrh serve reads its key file again on SIGHUP
// and seals what it writes next under the new key, while the records
// under the old one still open; new keys that drop the key it seals under
// now are refused, the keys kept, the log saying why; and a key read from
// a command is read again by running it again.
func TestKeysRotatedOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "flrh.db")
	k1, k2, k3 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)),
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	keyFile := filepath.Join(dir, "keys")
	writeKeys := func(keys ...string) {
		t.Helper()
		if err := os.WriteFile(keyFile, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	only := func(name, key string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	k1File, k2File := only("k1", k1), only("k2", k2)
	hup := func(p *serveProc, says string) {
		t.Helper()
		before := strings.Count(p.stderr.String(), says)
		p.cmd.Process.Signal(syscall.SIGHUP)
		for deadline := time.Now().Add(10 * time.Second); strings.Count(p.stderr.String(), says) == before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after SIGHUP:\n%s", says, p.stderr.String())
			}
		}
	}
	verifiesWith := func(run, keys string) bool {
		t.Helper()
		out, err := flrh(bin, nil, "verify", run, "--store", db, "--encryption-key-file", keys)
		if err != nil && !strings.Contains(out, "SEALED") {
			t.Fatalf("verify %s: %v\n%s", run, err, out)
		}
		return err == nil
	}

	writeKeys(k1)
	p := startServe(t, bin, nil, "--store", db, "--destination", sb+"/v1/effects", "--encryption-key-file", keyFile)
	startRefund(t, p.base, "before", 20)
	if got := awaitOutcome(t, p.base, "before"); got != "success" {
		t.Fatalf("before the rotation: %q", got)
	}
	writeKeys(k2, k1) // the new key first, the old after it
	hup(p, `"msg":"encryption keys reloaded"`)
	startRefund(t, p.base, "after", 20)
	if got := awaitOutcome(t, p.base, "after"); got != "success" {
		t.Fatalf("after the rotation: %q", got)
	}
	// The current key dropped: kept as they were; still sealing under k2.
	writeKeys(k3)
	hup(p, `"msg":"encryption keys kept as they were"`)
	startRefund(t, p.base, "kept", 20)
	if got := awaitOutcome(t, p.base, "kept"); got != "success" {
		t.Fatalf("after a refused reload: %q", got)
	}
	stopServe(t, p)
	for _, c := range []struct {
		run    string
		k1, k2 bool
	}{{"before", true, false}, {"after", false, true}, {"kept", false, true}} {
		if verifiesWith(c.run, k1File) != c.k1 || verifiesWith(c.run, k2File) != c.k2 {
			t.Errorf("run %s: opens with k1 %v, k2 %v; want %v, %v", c.run, !c.k1, !c.k2, c.k1, c.k2)
		}
	}
	if logs := p.stderr.String(); !strings.Contains(logs, "the new keys do not hold k1-") || strings.Contains(logs, k2) {
		t.Errorf("the refusal does not say why, or the log quotes a key:\n%s", logs)
	}

	// From a command: run again on SIGHUP.
	writeKeys(k2)
	p = startServe(t, bin, nil, "--store", db, "--destination", sb+"/v1/effects", "--encryption-key-command", "cat "+keyFile)
	writeKeys(k3, k2)
	hup(p, `"msg":"encryption keys reloaded"`)
	startRefund(t, p.base, "by-command", 20)
	if got := awaitOutcome(t, p.base, "by-command"); got != "success" {
		t.Fatalf("after the command's rotation: %q", got)
	}
	stopServe(t, p)
	if verifiesWith("by-command", k2File) || !verifiesWith("by-command", only("k3", k3)) {
		t.Error("the run after the command's rotation is not sealed under k3 alone")
	}
}
