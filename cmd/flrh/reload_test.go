package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
)

// TestSIGHUPReloadsAdapterSecrets rotates a credential under a running
// flrh serve: the bundle's Authorization header is read from a file
// (NAME_FILE); the file is rewritten and the server sent SIGHUP; the next
// refund reaches the destination with the new credential, the earlier one
// had the old. A reload that cannot read the file keeps the adapters as
// they were. Neither credential is ever in the server's logs.
func TestSIGHUPReloadsAdapterSecrets(t *testing.T) {
	f := startReloadFixture(t)
	p, pay, write, authFile, dest, sb := f.p, f.pay, f.write, f.authFile, f.dest, f.sb
	hup := func(wantLog string, n int) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		f.awaitLog(wantLog, n)
	}

	pay("one")
	write(authFile, newAuth)
	hup(`"msg":"adapters reloaded","bundles":["refund-agent@`, 1)
	pay("two")
	if dest.mutationsWith("Authorization", oldAuth) != 1 || dest.mutationsWith("Authorization", newAuth) != 1 {
		t.Fatalf("old credential on %d mutations, new on %d; want one each", dest.mutationsWith("Authorization", oldAuth), dest.mutationsWith("Authorization", newAuth))
	}
	// The file gone: the reload keeps the adapters it has, and says why.
	if err := os.Remove(authFile); err != nil {
		t.Fatal(err)
	}
	hup(`adapters kept as they were`, 1)
	if !strings.Contains(p.stderr.String(), "FLRH_TEST_PAYMENTS_AUTH_FILE") {
		t.Fatalf("the reload did not say which file:\n%s", p.stderr)
	}
	pay("three")
	if n := dest.mutationsWith("Authorization", newAuth); n != 2 {
		t.Fatalf("after a failed reload, the new credential went with %d mutations, want 2", n)
	}
	if n := len(sb.Mutations()); n != 3 {
		t.Fatalf("%d mutations, want 3", n)
	}
	resp, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`flrh_adapter_reloads_total{outcome="reloaded"} 1`, `flrh_adapter_reloads_total{outcome="kept"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	f.noSecretLogged()
}

const oldAuth, newAuth = "Bearer tok-OLD-3f9a51c07be2", "Bearer tok-NEW-8d20e6b4c1f7"

// reloadFixture is a flrh serve whose bundle's adapter sends an
// Authorization header read from a file (oldAuth at first) and a secret
// parameter from another, against a sandbox that records each request's
// headers.
type reloadFixture struct {
	t        *testing.T
	p        *serveProc
	sb       *sandbox.Sandbox
	dest     *capture
	authFile string
}

func startReloadFixture(t *testing.T, args ...string) *reloadFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	bundleDir := secretBundle(t)
	dir := t.TempDir()
	f := &reloadFixture{t: t, authFile: filepath.Join(dir, "auth")}
	var effectsURL string
	f.sb, f.dest, effectsURL = capturedSandbox(t)
	keyFile := filepath.Join(dir, "key")
	f.write(f.authFile, oldAuth)
	f.write(keyFile, plantedAPIKey)
	f.p = startServe(t, bin, []string{"FLRH_PAYMENTS_URL=" + effectsURL,
		"FLRH_TEST_PAYMENTS_AUTH_FILE=" + f.authFile, "FLRH_TEST_PAYMENTS_API_KEY_FILE=" + keyFile},
		append([]string{"--store", "sqlite:" + filepath.Join(dir, "flrh.db"), "--workflows", bundleDir}, args...)...)
	return f
}

// write replaces the file at path with v and a line break, as a secret
// volume swaps its files (write, rename).
func (f *reloadFixture) write(path, v string) {
	f.t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(v+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		f.t.Fatal(err)
	}
}

// pay runs one small refund to success.
func (f *reloadFixture) pay(id string) {
	f.t.Helper()
	startSmallRefund(f.t, f.p.base, id)
	if o := awaitOutcome(f.t, f.p.base, id); o != "success" {
		f.t.Fatalf("run %s: outcome %q", id, o)
	}
}

// awaitLog waits up to 10 s for the server's log to hold want n times.
func (f *reloadFixture) awaitLog(want string, n int) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(f.p.stderr.String(), want) < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("the log does not hold %q %d times:\n%s", want, n, f.p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noSecretLogged holds the server's log to none of the credentials.
func (f *reloadFixture) noSecretLogged() {
	f.t.Helper()
	for _, secret := range []string{oldAuth, newAuth, plantedAPIKey} {
		if strings.Contains(f.p.stderr.String(), secret) || strings.Contains(f.p.stderr.String(), secret[7:]) {
			f.t.Errorf("the server's logs hold %q", secret)
		}
	}
}

// TestAdapterReloadWhenFilesChange: with --reload-adapters-every, a
// credential rotated by swapping its file reaches the destination without
// a signal; the file removed, the adapters are kept and the log says
// which variable; nothing is reloaded while nothing changes.
func TestAdapterReloadWhenFilesChange(t *testing.T) {
	f := startReloadFixture(t, "--reload-adapters-every", "100ms")
	f.pay("one")
	// Unchanged files: several looks, no reload.
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(f.p.stderr.String(), "adapters reloaded") {
		t.Fatalf("adapters reloaded with nothing changed:\n%s", f.p.stderr)
	}
	f.write(f.authFile, newAuth)
	f.awaitLog(`"msg":"adapters reloaded","why":"their variables changed","bundles":["refund-agent@`, 1)
	f.pay("two")
	if f.dest.mutationsWith("Authorization", oldAuth) != 1 || f.dest.mutationsWith("Authorization", newAuth) != 1 {
		t.Fatalf("old credential on %d mutations, new on %d; want one each", f.dest.mutationsWith("Authorization", oldAuth), f.dest.mutationsWith("Authorization", newAuth))
	}
	if err := os.Remove(f.authFile); err != nil {
		t.Fatal(err)
	}
	f.awaitLog(`adapters kept as they were`, 1)
	if !strings.Contains(f.p.stderr.String(), "FLRH_TEST_PAYMENTS_AUTH_FILE") {
		t.Fatalf("the reload did not say which file:\n%s", f.p.stderr)
	}
	f.pay("three")
	// Back in place: reloaded again.
	f.write(f.authFile, oldAuth)
	f.awaitLog(`"why":"their variables changed","bundles":["refund-agent@`, 2)
	f.pay("four")
	if n := f.dest.mutationsWith("Authorization", newAuth); n != 2 {
		t.Fatalf("the new credential went with %d mutations, want 2 (two and three)", n)
	}
	if n := f.dest.mutationsWith("Authorization", oldAuth); n != 2 {
		t.Fatalf("the old credential went with %d mutations, want 2 (one and four)", n)
	}
	f.noSecretLogged()
}

func TestReloadAdaptersEveryChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	for _, v := range []string{"-1s", "10ms"} {
		out, err := flrh(bin, nil, "serve", "--addr", "127.0.0.1:0", "--reload-adapters-every", v, "--store", "sqlite:"+filepath.Join(t.TempDir(), "flrh.db"))
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(out, "--reload-adapters-every must be 0 or at least 100ms") {
			t.Errorf("%s: %v\n%s", v, err, out)
		}
	}
}
