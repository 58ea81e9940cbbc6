package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The token file edited over the CLI while flrh serve runs: a token added
// is refused until SIGHUP and accepted after; a revoked one is refused
// after SIGHUP and the event stream it opened ends with "event: revoked";
// a file broken by hand leaves the tokens as they were, and the log says
// why without a token in it; with --reload-adapters-every a change is
// taken without a signal. The file never holds a token the CLI made in
// clear, and hash keeps only the digests of those written in clear.
func TestTokensOverTheCLIAndSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	add := func(actor, roles string) string {
		t.Helper()
		out, err := flrh(bin, nil, "tokens", "add", file, "--actor", actor, "--role", roles, "--json")
		var a addedToken
		if err != nil || json.Unmarshal([]byte(out), &a) != nil || !strings.HasPrefix(a.Token, tokenPrefix) || len(a.Token) != 48 {
			t.Fatalf("tokens add %s: %v\n%s", actor, err, out)
		}
		return a.Token
	}
	oscar := add("oscar", "operator")
	vera := add("vera", "viewer")
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v", fi, err)
	}

	for _, reload := range []string{"SIGHUP", "watch"} {
		t.Run(reload, func(t *testing.T) {
			args := []string{"--store", "sqlite:" + filepath.Join(t.TempDir(), "flrh.db"), "--tokens", file,
				"--workflows", filepath.Join("..", "..", "examples", "refund-agent")}
			if reload == "watch" {
				args = append(args, "--reload-adapters-every", "100ms")
			}
			p := startServe(t, bin, nil, args...)
			status := func(method, path, token, body string) int {
				t.Helper()
				s, _ := bearerCall(t, p.base, method, path, token, body)
				return s
			}
			// after waits until the server took the file as it is now.
			n := 0
			after := func() {
				t.Helper()
				n++
				if reload == "SIGHUP" {
					if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(20 * time.Second)
				for strings.Count(p.stderr.String(), `"msg":"tokens reloaded"`)+strings.Count(p.stderr.String(), `"msg":"tokens kept as they were"`) < n {
					if time.Now().After(deadline) {
						t.Fatalf("the server did not take the token file:\n%s", p.stderr)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			start := `{"workflow":"refund-agent","run_id":"held","input":{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":900,"payee":"alice","reason":"damaged item"}}}`
			if s := status("POST", "/v1/runs", oscar, start); s != http.StatusCreated {
				t.Fatalf("start: %d", s)
			}
			ended := p.streamEnd(t, "held", vera)

			rita := add("rita-"+reload, "viewer")
			// Until SIGHUP the file is not read again; a watcher may read
			// it at any moment after the edit, so that case has no
			// "before" to check.
			if s := status("GET", "/v1/runs/held", rita, ""); reload == "SIGHUP" && s != http.StatusUnauthorized {
				t.Fatalf("a token added, not yet taken: %d", s)
			}
			after()
			if s := status("GET", "/v1/runs/held", rita, ""); s != http.StatusOK {
				t.Fatalf("a token added and taken: %d", s)
			}

			if out, err := flrh(bin, nil, "tokens", "revoke", file, "--actor", "vera"); err != nil || !strings.Contains(out, "revoked vera (viewer)") {
				t.Fatalf("revoke: %v\n%s", err, out)
			}
			after()
			if s := status("GET", "/v1/runs/held", vera, ""); s != http.StatusUnauthorized {
				t.Fatalf("a revoked token: %d", s)
			}
			select {
			case last := <-ended:
				if last != "event: revoked" {
					t.Fatalf("the revoked token's stream ended with %q", last)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the revoked token's stream is still open")
			}

			// A file broken by hand: the tokens stay as they were.
			good, _ := os.ReadFile(file)
			broken := strings.Replace(string(good), `"actor":"oscar"`, `"actor":"oscar","token":"a leaked token with spaces"`, 1)
			if err := os.WriteFile(file, []byte(broken), 0o600); err != nil {
				t.Fatal(err)
			}
			after()
			if !strings.Contains(p.stderr.String(), `"msg":"tokens kept as they were"`) || strings.Contains(p.stderr.String(), "a leaked token") {
				t.Fatalf("a broken file:\n%s", p.stderr)
			}
			if s := status("GET", "/v1/runs/held", rita, ""); s != http.StatusOK {
				t.Fatalf("after a broken file: %d", s)
			}
			if err := os.WriteFile(file, good, 0o600); err != nil {
				t.Fatal(err)
			}
			after()
			vera = add("vera", "viewer")
			after()
			for _, tok := range []string{oscar, vera, rita} {
				if strings.Contains(p.stderr.String(), tok) {
					t.Fatal("a token is in the server's log")
				}
			}
		})
	}

	// No token the CLI made is in the file; one written in clear by hand
	// is kept as its digest by hash, and still authenticates.
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), tokenPrefix) {
		t.Fatalf("a token in clear in the file:\n%s", b)
	}
	clearTok := "a-token-written-by-hand-0123"
	entries, err := readTokenFile(file, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTokenFile(file, append(entries, tokenEntry{Actor: "hand", Roles: []string{"viewer"}, Token: clearTok})); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "tokens", "list", file); err != nil || !strings.Contains(out, "(in clear") || strings.Contains(out, clearTok) {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "hash", file); err != nil || !strings.Contains(out, "1 tokens kept as their SHA-256 only") {
		t.Fatalf("hash: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), clearTok) {
		t.Fatalf("hash left the token in clear:\n%s", b)
	}
	entries, _ = readTokenFile(file, false)
	if e := entries[len(entries)-1]; e.Actor != "hand" || e.TokenSHA256 != sha256hexOf(clearTok) {
		t.Fatalf("the hashed entry: %+v", e)
	}
}

// flrh tokens refuses what would make a file the server does not read,
// and leaves the file as it was.
func TestTokensRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	file := filepath.Join(t.TempDir(), "tokens.json")
	if out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "alice", "--role", "approver"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before, _ := os.ReadFile(file)
	d := "abcd"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", file, "--actor", "a b", "--role", "viewer"}, "/tokens/1/actor"},
		{[]string{"add", file, "--actor", "bob", "--role", "root"}, "/tokens/1/roles/0"},
		{[]string{"add", file, "--actor", "bob"}, "--actor and at least one --role"},
		{[]string{"add", file, "--actor", "bob", "--role", "agent", "--workflow", "not an id"}, "/tokens/1/workflows/0"},
		{[]string{"add", file, "--actor", "bob", "--role", "agent", "--rate", "5/d"}, "/tokens/1/rate"},
		{[]string{"add", file, "--actor", "bob", "--role", "agent", "--rate", "1/h", "--burst", "30"}, "spans more than a day"},
		{[]string{"add", file, "--actor", "bob", "--role", "agent", "--burst", "3"}, "--burst needs --rate"},
		{[]string{"revoke", file, "--actor", "alice"}, "no token, which flrh serve refuses"},
		{[]string{"revoke", file, "--actor", "nobody"}, "no token of actor nobody"},
		{[]string{"revoke", file, "--digest", d}, "at least 8 hex digits"},
		{[]string{"revoke", file}, "give --actor, --digest or --expired"},
		{[]string{"revoke", file, "--actor", "alice", "--expired"}, "give --actor, --digest or --expired"},
		{[]string{"list", filepath.Join(t.TempDir(), "none.json")}, "no such file"},
	} {
		out, err := flrh(bin, nil, append([]string{"tokens"}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("tokens %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
		if now, _ := os.ReadFile(file); string(now) != string(before) {
			t.Fatalf("tokens %s changed the file", strings.Join(c.args, " "))
		}
	}
	// A digest prefix names one token; two that share it are not guessed at.
	if out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "bob", "--role", "viewer", "--json"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	entries, _ := readTokenFile(file, false)
	if out, err := flrh(bin, nil, "tokens", "revoke", file, "--digest", "sha256:"+entries[1].TokenSHA256[:10]); err != nil || !strings.Contains(out, "revoked bob") {
		t.Fatalf("revoke by digest: %v\n%s", err, out)
	}
	if now, _ := readTokenFile(file, false); len(now) != 1 || now[0].Actor != "alice" {
		t.Fatalf("after revoking bob: %+v", now)
	}
	// A token for one team's workflows: written, and listed, with them.
	if out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "support-bot", "--role", "agent", "--workflow", "refund-agent,refund-agent"); err != nil ||
		!strings.Contains(out, "it sees the runs of refund-agent alone") {
		t.Fatalf("add a scoped token: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "list", file); err != nil || !strings.Contains(out, "workflows refund-agent") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if now, _ := readTokenFile(file, false); len(now) != 2 || fmt.Sprint(now[1].Workflows) != "[refund-agent]" {
		t.Fatalf("the scoped token as written: %+v", now)
	}
	// A token with its own rate: written, listed, and kept when the file
	// is rewritten for another token's revocation.
	if out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "sweeper", "--role", "agent", "--rate", "2/s", "--burst", "4"); err != nil {
		t.Fatalf("add a token with a rate: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "revoke", file, "--actor", "support-bot"); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "list", file); err != nil || !strings.Contains(out, "rate 2/s (burst 4)") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if now, _ := readTokenFile(file, false); len(now) != 2 || now[1].Rate != "2/s" || now[1].Burst != 4 {
		t.Fatalf("the rated token after a revocation: %+v", now)
	}
}

func TestParseLifetime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration // 0: refused
	}{
		{"90m", 90 * time.Minute}, {"12h", 12 * time.Hour}, {"30d", 30 * 24 * time.Hour}, {"1m", time.Minute},
		{"3660d", 3660 * 24 * time.Hour},
		{"59s", 0}, {"3661d", 0}, {"-1d", 0}, {"soon", 0}, {"d", 0}, {"", 0}, {"1.5d", 0}, {"-5h", 0},
	} {
		got, err := parseLifetime(c.in)
		if (c.want == 0) != (err != nil) || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// A token made to expire is written with its instant, listed with it, and
// removed with the other expired ones by revoke --expired.
func TestTokensExpireOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	file := filepath.Join(t.TempDir(), "tokens.json")
	before := time.Now()
	out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "carol", "--role", "approver", "--expires", "30d", "--json")
	var a addedToken
	if err != nil || json.Unmarshal([]byte(out), &a) != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	at, err := time.Parse(time.RFC3339, a.ExpiresAt)
	if err != nil || at.Before(before.Add(30*24*time.Hour-time.Second)) || at.After(time.Now().Add(30*24*time.Hour)) {
		t.Fatalf("expires_at %q", a.ExpiresAt)
	}
	entries, _ := readTokenFile(file, false)
	entries = append(entries, tokenEntry{Actor: "old", Roles: []string{"viewer"}, TokenSHA256: sha256hexOf("old"), ExpiresAt: "2020-01-01T00:00:00Z"})
	if err := writeTokenFile(file, entries); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "tokens", "list", file); err != nil || !strings.Contains(out, "expires "+a.ExpiresAt) || !strings.Contains(out, "expired 2020-01-01T00:00:00Z") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "revoke", file, "--expired"); err != nil || !strings.Contains(out, "revoked old (viewer)") || strings.Contains(out, "carol") {
		t.Fatalf("revoke --expired: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "tokens", "revoke", file, "--expired"); err == nil || !strings.Contains(out, "no expired token") {
		t.Fatalf("revoke --expired again: %v\n%s", err, out)
	}
	for _, bad := range []string{"10s", "soon"} {
		if out, err := flrh(bin, nil, "tokens", "add", file, "--actor", "dan", "--role", "viewer", "--expires", bad); err == nil || !strings.Contains(out, "--expires") {
			t.Fatalf("--expires %s: %v\n%s", bad, err, out)
		}
	}
	if now, _ := readTokenFile(file, false); len(now) != 1 || now[0].Actor != "carol" {
		t.Fatalf("left: %+v", now)
	}
}

func sha256hexOf(s string) string { return tokenEntry{Token: s}.digest() }
