package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/internal/testidp"
)

// An identity provider's tokens over real processes: flrh serve
// --identity finds the provider's keys by discovery and takes the actor
// and roles from its claims. A refund that needs two of three finance
// leads is approved by alice with one token, refused for alice with
// another (one person, one actor, however many tokens), paid when bob
// approves. A key rotated in is fetched when a token first names it; a
// key withdrawn and SIGHUP end the stream its token opened; a
// configuration broken by hand is kept out, and the log says why.
func TestIdentityProviderOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	k1 := testidp.MustSigner(t, "ES256", "k1")
	k2 := testidp.MustSigner(t, "RS256", "k2")
	idp := testidp.NewServer(t, k1)
	config := filepath.Join(dir, "identity.json")
	writeConfig := func(text string) {
		t.Helper()
		if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	goodConfig := `{"issuer":"` + idp.URL + `","audience":"flrh","actor_claim":"preferred_username","roles_claim":"/realm_access/roles",
 "roles":{"finance":["approver"],"ops":["operator","viewer"]}}`
	writeConfig(goodConfig)
	// token is person's token in group, signed by s; n tells two tokens
	// of one person apart.
	token := func(s *testidp.Signer, person, group string, n int) string {
		now := time.Now()
		return s.Token(map[string]any{"iss": idp.URL, "aud": "flrh", "sub": "u-" + person, "preferred_username": person,
			"jti": person + string(rune('a'+n)), "iat": now.Unix() - int64(n), "exp": now.Add(time.Hour).Unix(),
			"realm_access": map[string]any{"roles": []string{group}}}, nil)
	}
	bundle := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2,`)
	sandbox := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	p := startServe(t, bin, []string{"FLRH_PAYMENTS_URL=" + sandbox + "/v1/effects"},
		"--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--identity", config, "--workflows", bundle)
	if !strings.Contains(p.stdout.String(), "identity provider "+idp.URL) {
		t.Fatalf("serve announced %q", p.stdout)
	}
	call := func(method, path, tok, body string) (int, string) {
		t.Helper()
		status, b := bearerCall(t, p.base, method, path, tok, body)
		return status, string(b)
	}
	olga := token(k1, "olga", "ops", 0)
	start := `{"workflow":"refund-agent","run_id":"q","input":{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":900,"payee":"alice","reason":"damaged item"}}}`
	if s, b := call("POST", "/v1/runs", olga, start); s != http.StatusCreated {
		t.Fatalf("start: %d %s", s, b)
	}
	var page struct {
		Run struct {
			State string `json:"state"`
		} `json:"run"`
		Waiting []struct {
			RequestID     string   `json:"request_id"`
			RequestDigest string   `json:"request_digest"`
			ApprovedBy    []string `json:"approved_by"`
		} `json:"waiting"`
	}
	read := func(until func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, b := call("GET", "/v1/runs/q", olga, "")
			page.Waiting = nil
			json.Unmarshal([]byte(b), &page)
			if until() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run: %s", b)
			}
		}
	}
	read(func() bool { return len(page.Waiting) == 1 })
	approve := `{"request_id":"` + page.Waiting[0].RequestID + `","request_digest":"` + page.Waiting[0].RequestDigest + `"}`
	if s, b := call("POST", "/v1/runs/q/approve", token(k1, "alice", "finance", 0), approve); s != http.StatusAccepted {
		t.Fatalf("alice approves: %d %s", s, b)
	}
	read(func() bool { return len(page.Waiting) == 1 && len(page.Waiting[0].ApprovedBy) == 1 })
	if s, b := call("POST", "/v1/runs/q/approve", token(k1, "alice", "finance", 1), approve); s != http.StatusConflict || !strings.Contains(b, "a quorum of 2 needs other people") {
		t.Fatalf("alice again, with another token: %d %s", s, b)
	}
	if s, b := call("POST", "/v1/runs/q/approve", olga, approve); s != http.StatusForbidden {
		t.Fatalf("an operator approves: %d %s", s, b)
	}
	if s, b := call("POST", "/v1/runs/q/approve", token(k1, "bob", "finance", 0), approve); s != http.StatusAccepted {
		t.Fatalf("bob approves: %d %s", s, b)
	}
	read(func() bool { return page.Run.State == "SUCCEEDED" })
	if muts := mutations(t, sandbox); len(muts) != 1 {
		t.Fatalf("%d payments", len(muts))
	}

	// A key rotated in, fetched when a token first names it: the fetch at
	// start was moments ago, and a rotation that new waits out the pause
	// between fetches, so the test publishes the key, then waits.
	fetches := idp.Fetches()
	idp.Publish(k1, k2)
	vera := token(k2, "vera", "ops", 0)
	if s, b := call("GET", "/v1/whoami", vera, ""); s != http.StatusUnauthorized || !strings.Contains(b, `no key \"k2\"`) || idp.Fetches() != fetches {
		t.Fatalf("a new key within the pause after a fetch: %d %s (%d fetches, %d before)", s, b, idp.Fetches(), fetches)
	}

	// SIGHUP reads the configuration and fetches the keys again: k2 is
	// taken, and a stream opened with a k1 token lives until k1 is
	// withdrawn.
	reloads := 0
	hup := func(want string) {
		t.Helper()
		reloads++
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); strings.Count(p.stderr.String(), `"msg":"identity provider`) < reloads; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no reload logged:\n%s", p.stderr)
			}
		}
		if !strings.Contains(p.stderr.String(), want) {
			t.Fatalf("the log lacks %q:\n%s", want, p.stderr)
		}
	}
	hup(`"msg":"identity provider reloaded"`)
	if s, b := call("GET", "/v1/whoami", vera, ""); s != http.StatusOK || !strings.Contains(b, `"actor":"vera"`) {
		t.Fatalf("a rotated key after SIGHUP: %d %s", s, b)
	}
	ended := p.streamEnd(t, "q", olga)
	writeConfig(`{"issuer":`)
	hup(`"msg":"identity provider kept as it was"`)
	if s, _ := call("GET", "/v1/whoami", olga, ""); s != http.StatusOK {
		t.Fatalf("the configuration kept: %d", s)
	}
	writeConfig(goodConfig)
	idp.Publish(k2)
	hup(`"keys":1`)
	select {
	case last := <-ended:
		if last != "event: revoked" {
			t.Fatalf("the stream ended with %q", last)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream of a withdrawn key's token is still open")
	}
	if s, _ := call("GET", "/v1/whoami", olga, ""); s != http.StatusUnauthorized {
		t.Fatalf("a withdrawn key's token: %d", s)
	}
	for _, tok := range []string{olga, vera} {
		if strings.Contains(p.stderr.String(), tok) {
			t.Fatal("a token is in the log")
		}
	}
}
