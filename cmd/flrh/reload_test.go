package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPReloadsAdapterSecrets rotates a credential under a running
// flrh serve: the bundle's Authorization header is read from a file
// (NAME_FILE); the file is rewritten and the server sent SIGHUP; the next
// refund reaches the destination with the new credential, the earlier one
// had the old. A reload that cannot read the file keeps the adapters as
// they were. Neither credential is ever in the server's logs.
func TestSIGHUPReloadsAdapterSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	bundleDir := secretBundle(t)
	dir := t.TempDir()
	sb, dest, effectsURL := capturedSandbox(t)
	const oldAuth, newAuth = "Bearer tok-OLD-3f9a51c07be2", "Bearer tok-NEW-8d20e6b4c1f7"
	authFile, keyFile := filepath.Join(dir, "auth"), filepath.Join(dir, "key")
	write := func(path, v string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil { // as a secret volume swaps its files
			t.Fatal(err)
		}
	}
	write(authFile, oldAuth)
	write(keyFile, plantedAPIKey)
	p := startServe(t, bin, []string{"FLRH_PAYMENTS_URL=" + effectsURL,
		"FLRH_TEST_PAYMENTS_AUTH_FILE=" + authFile, "FLRH_TEST_PAYMENTS_API_KEY_FILE=" + keyFile},
		"--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--workflows", bundleDir)

	pay := func(id string) {
		t.Helper()
		body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":{"type":"refund.requested/1","payload":{"refund_id":"r-%s","amount":40,"payee":"alice","reason":"damaged item"}}}`, id, id)
		resp, err := http.Post(p.base+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("start %s: %s", id, resp.Status)
		}
		if o := awaitOutcome(t, p.base, id); o != "success" {
			t.Fatalf("run %s: outcome %q", id, o)
		}
	}
	hup := func(wantLog string, n int) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.stderr.String(), wantLog) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after SIGHUP:\n%s", wantLog, p.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
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
	for _, secret := range []string{oldAuth, newAuth, plantedAPIKey} {
		if strings.Contains(p.stderr.String(), secret) || strings.Contains(p.stderr.String(), secret[7:]) {
			t.Errorf("the server's logs hold %q", secret)
		}
	}
}
