package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/tamper"
	"flrh.dev/flrh/store/sqlite"
	"pgregory.net/rapid"
)

// storeDigest is the digest of every row of every table of the SQLite
// store at path, read through a read-only store: two stores with the same
// digest hold the same records, leases and clocks included.
func storeDigest(t *testing.T, path string) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cols, err := tamper.Columns(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, c := range cols {
		cells, err := tamper.Cells(st.DB(), c, "true")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cells {
			fmt.Fprintf(h, "%s.%s[%s]=%s:%x\n", c.Table, c.Name, x.Key, x.Type, x.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A person's act drawn from valid and invalid parts (the act, the run,
// the request, proposal or effect it names, the option, who acts, a flag
// more or less) is either taken or refused. Refused, it exits 1 or 2 with
// a message, writes nothing to the store (every row of every table as it
// was) and sends nothing; taken, it exits 0 and every run still verifies.
// No draw panics.
func TestAnyActIsTakenOrRefusedWithoutATrace(t *testing.T) {
	c := newCLIRig(t)
	req, proposal := c.waiting()
	c.ok("run", "start", "example:refund-agent", "--id", "small", "--input-json",
		`{"type":"refund.requested/1","payload":{"refund_id":"r-3","amount":20,"payee":"bob","reason":"damaged"}}`, c.dest)
	if req == "" || proposal == "" {
		t.Fatalf("the runs wait for nothing: request %q, proposal %q", req, proposal)
	}
	base := strings.TrimPrefix(c.store, "--store=sqlite:")
	dir := t.TempDir()
	draws, outcomes := 0, map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		path := filepath.Join(dir, fmt.Sprintf("draw%d.db", draws))
		for _, suffix := range []string{"", "-wal"} {
			if b, err := os.ReadFile(base + suffix); err == nil {
				if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		defer func() {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(path + suffix)
			}
		}()
		before := storeDigest(t, path)
		sent := len(mutations(t, c.base))

		act := rapid.SampledFrom([]string{"approve", "deny", "choose", "reconcile", "cancel"}).Draw(rt, "act")
		args := []string{act, rapid.SampledFrom([]string{"big", "big", "gw", "gw", "small", "nope", ""}).Draw(rt, "run")}
		switch act {
		case "approve", "deny":
			args = append(args, rapid.SampledFrom([]string{req, proposal, "approval-request:" + strings.Repeat("0", 64), "x"}).Draw(rt, "request"))
		case "choose":
			args = append(args, rapid.SampledFrom([]string{proposal, req, "proposal:nope"}).Draw(rt, "proposal"),
				rapid.SampledFrom([]string{"path:store-credit", "path:bogus", ""}).Draw(rt, "option"))
		case "reconcile":
			args = append(args, rapid.SampledFrom([]string{"intent:nope", req}).Draw(rt, "effect"),
				rapid.SampledFrom([]string{"--confirmed", "--failed", "--abandon", "--confirmed=false"}).Draw(rt, "how"))
		}
		if who := rapid.SampledFrom([]string{"finance-lead", "finance-lead", "dana", "dana", "mallory", "carol", ""}).Draw(rt, "as"); who != "" {
			args = append(args, "--as", who)
		}
		switch rapid.IntRange(0, 7).Draw(rt, "more") {
		case 1, 2:
			args = append(args, "--json")
		case 3:
			args = append(args, "--reason", "drawn")
		case 4:
			args = append(args, "--bogus-flag")
		}
		args = append(args, c.dest, "--store=sqlite:"+path)
		out, err := flrh(c.bin, nil, args...)
		code := exitStatus(t, err)
		what := "flrh " + strings.Join(args[:len(args)-2], " ")
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			rt.Fatalf("%s panicked:\n%s", what, out)
		}
		switch code {
		case 0:
			outcomes["taken"]++
			for _, run := range []string{"big", "gw", "small"} {
				if vout, err := flrh(c.bin, nil, "verify", run, "--store=sqlite:"+path); err != nil {
					rt.Fatalf("%s was taken, and run %s no longer verifies:\n%s", what, run, vout)
				}
			}
		case 1, 2:
			outcomes[fmt.Sprintf("refused, exit %d", code)]++
			if strings.TrimSpace(out) == "" {
				rt.Fatalf("%s: exit %d with nothing said", what, code)
			}
			if after := storeDigest(t, path); after != before {
				rt.Fatalf("%s was refused (exit %d) and changed the store:\n%s", what, code, out)
			}
			if n := len(mutations(t, c.base)); n != sent {
				rt.Fatalf("%s was refused (exit %d) and sent %d mutations", what, code, n-sent)
			}
		default:
			rt.Fatalf("%s: exit %d:\n%s", what, code, out)
		}
	})
	t.Logf("%d draws: %v", draws, outcomes)
}
