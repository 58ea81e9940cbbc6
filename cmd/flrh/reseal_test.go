package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
)

// TestResealOverTheCLI takes a store from clear to encrypted and through a
// key rotation with flrh store reseal, through separate processes: a run
// written in clear is refused under the key until reseal --clear seals
// it, and then approved to its end; after a rotation, reseal moves every
// record under the new key, and the old key can go: every run verifies,
// replays and shows its trace with the new key alone.
func TestResealOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	testResealOverTheCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "flrh.db"))
}

func TestResealOverTheCLIPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	_, spec, _ := postgresSpec(t, "flrh_reseal_", "reseal a PostgreSQL store through the CLI")
	testResealOverTheCLI(t, spec)
}

func testResealOverTheCLI(t *testing.T, spec string) {
	bin := buildFlrh(t)
	dir := t.TempDir()
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	storeFlag := "--store=" + spec
	dest := "--destination=" + base + "/v1/effects"
	key := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	k1, k2, k3 := []string{"FLRH_ENCRYPTION_KEY=" + key(1)}, []string{"FLRH_ENCRYPTION_KEY=" + key(2) + "," + key(1)}, []string{"FLRH_ENCRYPTION_KEY=" + key(3)}
	run := func(env []string, args ...string) (string, int) {
		t.Helper()
		out, err := flrh(bin, env, args...)
		return out, exitStatus(t, err)
	}
	ok := func(env []string, args ...string) string {
		t.Helper()
		out, code := run(env, args...)
		if code != 0 {
			t.Fatalf("flrh %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	reseal := func(env []string, args ...string) resealReport {
		t.Helper()
		var rep resealReport
		out := ok(env, append([]string{"store", "reseal", "--json", storeFlag}, args...)...)
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return rep
	}
	refund := func(id string, amount int) string {
		return `{"type":"refund.requested/1","payload":{"refund_id":"` + id + `","amount":` + strconv.Itoa(amount) + `,"payee":"alice","reason":"damaged item"}}`
	}

	// Written in clear: one paid, one waiting for approval.
	ok(nil, "run", "start", "example:refund-agent", "--id", "small", "--input-json", refund("r-1", 40), storeFlag, dest)
	out := ok(nil, "run", "start", "example:refund-agent", "--id", "big", "--input-json", refund("r-2", 400), storeFlag, dest)
	req := approvalRequest.FindString(out)
	if req == "" {
		t.Fatalf("no approval asked:\n%s", out)
	}
	// Encryption turned on: the old records are refused.
	if out, code := run(k1, "approve", "big", req, "--as", "finance-lead", storeFlag, dest); code == 0 || !strings.Contains(out, "stored in clear") {
		t.Fatalf("a run in clear was advanced under the key: exit %d\n%s", code, out)
	}
	if out, code := run(nil, "store", "reseal", storeFlag); code != 2 || !strings.Contains(out, "--encryption-key-file") {
		t.Fatalf("reseal without a key: exit %d\n%s", code, out)
	}
	rep := reseal(k1)
	if rep.Counts.Resealed != 0 || rep.Counts.Clear == 0 || rep.Runs != 2 || len(rep.Failed) != 0 {
		t.Fatalf("reseal without --clear: %+v", rep)
	}
	inClear := rep.Counts.Clear
	rep = reseal(k1, "--clear")
	if rep.Counts.Resealed != inClear || rep.Counts.Clear != 0 || rep.Counts.Current != 0 {
		t.Fatalf("reseal --clear: %+v, %d were in clear", rep, inClear)
	}
	if out := ok(k1, "approve", "big", req, "--as", "finance-lead", storeFlag, dest); !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Fatalf("approved after reseal:\n%s", out)
	}

	// Rotation: key 2 first, key 1 kept to read the old records; one more
	// run under key 2; reseal; then key 1 goes.
	ok(k2, "run", "start", "example:refund-agent", "--id", "after", "--input-json", refund("r-3", 30), storeFlag, dest)
	dry := reseal(k2, "--dry-run")
	rep = reseal(k2)
	if dry.Counts != rep.Counts || !dry.DryRun {
		t.Fatalf("the dry run counted %+v, the pass %+v", dry.Counts, rep.Counts)
	}
	if rep.Counts.Resealed == 0 || rep.Counts.Current == 0 || rep.Counts.Clear != 0 || rep.Runs != 3 || len(rep.Failed) != 0 {
		t.Fatalf("reseal after rotation: %+v", rep)
	}
	if again := reseal(k2); again.Counts.Resealed != 0 || again.Counts.Current != rep.Counts.Resealed+rep.Counts.Current {
		t.Fatalf("a second pass: %+v after %+v", again, rep)
	}
	k2only := []string{"FLRH_ENCRYPTION_KEY=" + key(2)}
	if out := ok(k2only, "verify", "--all", storeFlag); strings.Count(out, "verified") < 3 {
		t.Fatalf("verify with the new key alone:\n%s", out)
	}
	for _, id := range []string{"small", "big", "after"} {
		if out := ok(k2only, "replay", id, storeFlag); !strings.Contains(out, "identical") {
			t.Fatalf("replay %s with the new key alone:\n%s", id, out)
		}
		ok(k2only, "run", "trace", id, storeFlag)
	}

	// A key that opens nothing: every run fails its pass, nothing is
	// written, exit 1, and the report says to keep the keys.
	out, code := run(k3, "store", "reseal", storeFlag)
	if code != 1 || strings.Count(out, "not resealed (SEALED)") != 3 || !strings.Contains(out, "keep the older keys") {
		t.Fatalf("reseal with a key that opens nothing: exit %d\n%s", code, out)
	}
	if out := ok(k2only, "verify", "--all", storeFlag); strings.Count(out, "verified") < 3 {
		t.Fatalf("a failed pass changed the store:\n%s", out)
	}
}

// sealedKeys returns the key ids the sealed records in the embedded
// store's files (database and log) name, read from the bytes themselves
// (store.SealedPrefix, a length byte, the id): live records and what
// freed pages still hold alike.
func sealedKeys(t *testing.T, path string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for {
			i := bytes.Index(b, []byte(store.SealedPrefix))
			if i < 0 {
				break
			}
			b = b[i+len(store.SealedPrefix):]
			if len(b) > 0 && int(b[0]) < len(b) {
				ids[string(b[1:1+int(b[0])])] = true
			}
		}
	}
	return ids
}

// TestResealLeavesNoOldKey: after a rotation, reseal moves every record
// under the new key, zeroing the old ones as it rewrites them, and
// empties the embedded store's log: its files hold no record sealed
// under the old key, with no compaction; reseal --compact then rewrites
// the files, and every run verifies with the new key alone.
func TestResealLeavesNoOldKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	path := filepath.Join(dir, "flrh.db")
	storeFlag, dest := "--store=sqlite:"+path, "--destination="+base+"/v1/effects"
	key := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	k1, k2 := []string{"FLRH_ENCRYPTION_KEY=" + key(1)}, []string{"FLRH_ENCRYPTION_KEY=" + key(2) + "," + key(1)}
	ok := func(env []string, args ...string) string {
		t.Helper()
		out, err := flrh(bin, env, args...)
		if err != nil {
			t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for i, amount := range []int{40, 400, 30} {
		ok(k1, "run", "start", "example:refund-agent", "--id", "run-"+strconv.Itoa(i), "--input-json",
			`{"type":"refund.requested/1","payload":{"refund_id":"r-`+strconv.Itoa(i)+`","amount":`+strconv.Itoa(amount)+`,"payee":"alice","reason":"damaged item"}}`, storeFlag, dest)
	}
	old := sealedKeys(t, path)
	if len(old) != 1 {
		t.Fatalf("records under %d keys before the rotation: %v", len(old), old)
	}
	var rep resealReport
	if err := json.Unmarshal([]byte(ok(k2, "store", "reseal", "--json", storeFlag)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counts.Resealed == 0 || rep.Log == nil || !rep.Log.Emptied || rep.Compacted != nil {
		t.Fatalf("reseal: %+v", rep)
	}
	after := sealedKeys(t, path)
	var newer []string
	for id := range after {
		if !old[id] {
			newer = append(newer, id)
		}
	}
	if len(newer) != 1 || len(after) != 1 {
		t.Fatalf("after reseal the files hold records under %v, want the new key's alone (before: %v)", after, old)
	}
	if out := ok(k2, "store", "reseal", storeFlag); strings.Contains(out, "log emptied") {
		t.Fatalf("a reseal that rewrote nothing emptied the log:\n%s", out)
	}
	if out, err := flrh(bin, k2, "store", "reseal", "--compact", "--dry-run", storeFlag); exitStatus(t, err) != exitUsage || !strings.Contains(out, "--dry-run writes nothing") {
		t.Fatalf("--compact with --dry-run: %v\n%s", err, out)
	}
	rep = resealReport{}
	if err := json.Unmarshal([]byte(ok(k2, "store", "reseal", "--compact", "--json", storeFlag)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Compacted == nil || rep.Compacted.After <= 0 || rep.Compacted.After > rep.Compacted.Before || rep.Counts.Resealed != 0 || rep.Log != nil {
		t.Fatalf("reseal --compact: %+v", rep)
	}
	if got := sealedKeys(t, path); len(got) != 1 || !got[newer[0]] {
		t.Fatalf("after --compact the files hold records under %v, want the new key's alone %v", got, newer)
	}
	k2only := []string{"FLRH_ENCRYPTION_KEY=" + key(2)}
	if out := ok(k2only, "verify", "--all", storeFlag); strings.Count(out, "verified") < 3 {
		t.Fatalf("verify with the new key alone:\n%s", out)
	}
	if out := ok(nil, "store", "compact", storeFlag); !strings.HasPrefix(out, "compacted: ") {
		t.Fatalf("store compact said:\n%s", out)
	}
}
