package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/testidp"
	"flrh.dev/flrh/ratelimit"
	"flrh.dev/flrh/runner"
)

// rateTokens: the agent held to its own rate, the viewer to none, the
// others to the server's.
var rateTokens = strings.NewReplacer(
	`"roles":["agent"],"token":"`+tokAgent+`"`, `"roles":["agent"],"token":"`+tokAgent+`","rate":"2/h","burst":3`,
	`"roles":["viewer"],"token":"`+tokViewer+`"`, `"roles":["viewer"],"token":"`+tokViewer+`","rate":"none"`,
).Replace(tokenFileText)

// retryAfter is a 429's Retry-After in seconds, and its body's type.
func retryAfter(t *testing.T, a answer) int {
	t.Helper()
	if a.status != 429 {
		t.Fatalf("answered %d, not 429: %s", a.status, a.body)
	}
	if typ := a.json(t)["error"].(map[string]any)["type"]; typ != TypeRateLimited {
		t.Fatalf("a 429 of type %v", typ)
	}
	n, err := strconv.Atoi(a.header.Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q", a.header.Get("Retry-After"))
	}
	return n
}

// Each caller is held to its rate, by actor: its token's, or the
// server's; past it, 429 with when to come again, and a refusal spends
// nothing. The others are not slowed; probes and webhooks are not
// callers; a reload keeps what each has spent.
func TestRateLimits(t *testing.T) {
	def, _ := ratelimit.Parse("5/h", 0)
	f := newFixture(t, rateTokens, func(_ *runner.Config, c *Config) { c.RateLimit = def })
	for i := range 3 {
		if a := f.get("/v1/runs", tokAgent); a.status != 200 {
			t.Fatalf("the agent's request %d: %d %s", i+1, a.status, a.body)
		}
	}
	// 2/h: an interval of 30 minutes, the burst of three spent (less
	// the seconds a loaded machine takes between the requests).
	a := f.get("/v1/runs", tokAgent)
	if n := retryAfter(t, a); n < 1770 || n > 1800 {
		t.Fatalf("the agent's fourth request: Retry-After %d", n)
	}
	if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "actor bot") || !strings.Contains(msg, "2/h (burst 3)") {
		t.Fatalf("the refusal says %q", msg)
	}
	if n := retryAfter(t, f.get("/v1/runs/none", tokAgent)); n < 1770 || n > 1800 {
		t.Fatalf("retried at once: Retry-After %d (a refusal spent something)", n)
	}
	// Counted before the roles are: an act the agent may not do is 429
	// too, not 403.
	retryAfter(t, f.post("/v1/runs/none/cancel", tokAgent, `{}`))
	// The server's 5/h holds the operator; the viewer's "none", nothing.
	for i := range 5 {
		if a := f.get("/v1/runs", tokOperator); a.status != 200 {
			t.Fatalf("the operator's request %d: %d", i+1, a.status)
		}
	}
	if n := retryAfter(t, f.get("/v1/runs", tokOperator)); n < 690 || n > 720 {
		t.Fatalf("the operator past the server's rate: Retry-After %d", n)
	}
	for i := range 30 {
		if a := f.get("/v1/runs", tokViewer); a.status != 200 {
			t.Fatalf("the viewer's request %d: %d", i+1, a.status)
		}
	}
	// Each caller is told its rate: the agent its token's, the operator
	// the server's, the viewer none.
	for tok, want := range map[string]string{tokViewer: "<nil>", tokApprover: "map[burst:5 count:5 per_seconds:3600]"} {
		if got := fmt.Sprint(f.get("/v1/whoami", tok).json(t)["rate"]); got != want {
			t.Errorf("whoami's rate: %s, want %s", got, want)
		}
	}
	// Probes, an unknown token and the approver's own bucket are apart.
	for _, p := range []string{"/healthz", "/readyz", "/v1/openapi.json"} {
		if a := f.get(p, ""); a.status != 200 {
			t.Fatalf("%s: %d", p, a.status)
		}
	}
	if a := f.get("/v1/runs", "an-unknown-token-0123456789"); a.status != 401 {
		t.Fatalf("an unknown token: %d", a.status)
	}
	if a := f.get("/v1/runs", tokApprover); a.status != 200 {
		t.Fatalf("the approver: %d", a.status)
	}
	// A reload keeps what each actor spent; one giving the agent a faster
	// rate finds its bucket empty under it, not half an hour away.
	same, err := ParseTokens([]byte(rateTokens))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(same); err != nil {
		t.Fatal(err)
	}
	retryAfter(t, f.get("/v1/runs", tokAgent))
	faster, err := ParseTokens([]byte(strings.Replace(rateTokens, `"rate":"2/h","burst":3`, `"rate":"1000/s"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(faster); err != nil {
		t.Fatal(err)
	}
	if n := retryAfter(t, f.get("/v1/runs", tokAgent)); n != 1 {
		t.Fatalf("under a faster rate: Retry-After %d", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.get("/v1/runs", tokAgent).status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the agent still refused a second after a faster rate")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An agent's MCP requests are its requests: past its rate the tools
// answer no more.
func TestRateLimitsMCP(t *testing.T) {
	f := newFixture(t, strings.Replace(tokenFileText, `"token":"`+tokAgent+`"`, `"token":"`+tokAgent+`","rate":"1/h","burst":6`, 1))
	cs := f.mustMCP(tokAgent)
	calls := 0
	for ; calls < 10; calls++ {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			if !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "Too Many Requests") {
				t.Fatalf("call %d refused, but not for the rate: %v", calls+1, err)
			}
			break
		}
	}
	if calls == 10 {
		t.Fatal("ten tool listings past a burst of six")
	}
}

func TestTokenFileRates(t *testing.T) {
	tk, err := ParseTokens([]byte(rateTokens))
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{tokAgent: "2/h (burst 3)", tokViewer: "none", tokOperator: "<nil>"} {
		g, _ := tk.lookup(tok)
		got := "<nil>"
		if g.p.Rate != nil {
			got = g.p.Rate.String()
		}
		if got != want {
			t.Errorf("%s's rate: %s, want %s", g.p.Actor, got, want)
		}
	}
	for extra, words := range map[string]string{
		`"rate":"2/d"`:                 "/tokens/0/rate",
		`"rate":"0/s"`:                 "/tokens/0/rate",
		`"rate":"2/s","burst":0`:       "/tokens/0/burst",
		`"burst":5`:                    "/tokens/0/burst: a burst is of a rate",
		`"rate":"none","burst":5`:      "/tokens/0/burst: a caller held to no rate has no burst",
		`"rate":"1/h","burst":25`:      "/tokens/0/rate: rate limit \"1/h\": a burst of 25 at this rate spans more than a day",
		`"rate":"2/s","burst":2000000`: "/tokens/0/burst",
	} {
		_, err := ParseTokens([]byte(`{"tokens":[{"actor":"x","roles":["viewer"],"token":"` + tokViewer + `",` + extra + `}]}`))
		if err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v; want %q", extra, err, words)
		}
	}
	bad := ratelimit.Limit{Count: 1, Per: time.Hour, Burst: 100}
	f := newFixture(t, "")
	if _, err := New(Config{Store: f.store, Runner: f.runner, Catalog: f.server.cfg.Catalog, RateLimit: bad}); err == nil || !strings.Contains(err.Error(), "spans more than a day") {
		t.Fatalf("a server's rate spanning days: %v", err)
	}
}

// An identity provider's groups map to rates: a caller is held to the
// fastest of its groups', to none when one is "none", to the server's
// when none has one; a rate that does not read is refused naming the
// group.
func TestIdentityRates(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	id := newIdentity(t, identityConfig(t, p, `,"rates":{"ci-bots":{"rate":"2/s","burst":10},"batch":{"rate":"100/m"},"peers":{"rate":"120/m","burst":3},"sre":{"rate":"none"}}`))
	for _, c := range []struct {
		name   string
		groups []string
		want   string
	}{
		{"one group", []string{"ci-bots"}, "2/s (burst 10)"},
		{"the fastest of two", []string{"batch", "ci-bots"}, "2/s (burst 10)"},
		{"as fast: the larger burst", []string{"peers", "ci-bots"}, "2/s (burst 10)"},
		{"as fast, the other way round", []string{"ci-bots", "peers"}, "2/s (burst 10)"},
		{"none among them", []string{"ci-bots", "sre"}, "none"},
		{"no group with a rate", []string{"staff"}, "the server's"},
	} {
		g, aerr := id.grant(context.Background(), idToken(p, k1, "sam", time.Hour, c.groups...), time.Now())
		if aerr != nil {
			t.Fatalf("%s: %v", c.name, aerr)
		}
		got := "the server's"
		if g.p.Rate != nil {
			got = g.p.Rate.String()
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	for extra, words := range map[string]string{
		`"rates":{"bots":{"rate":"2/d"}}`:             "/rates/bots/rate",
		`"rates":{"bots":{"burst":2}}`:                "/rates/bots",
		`"rates":{"bots":{"rate":"1/h","burst":30}}`:  `/rates: "bots": rate: rate limit "1/h": a burst of 30 at this rate spans more than a day`,
		`"rates":{"bots":{"rate":"none","burst":30}}`: `/rates: "bots": burst: a caller held to no rate has no burst`,
	} {
		if _, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"flrh",`+extra+`}`), t.TempDir()); err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v; want %q", extra, err, words)
		}
	}
}
