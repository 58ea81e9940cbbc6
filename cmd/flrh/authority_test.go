package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func runAuthority(t *testing.T, args ...string) (string, error) {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		if c.Name() != "authority" {
			continue
		}
		for _, sub := range c.Commands() {
			sub.Flags().VisitAll(func(f *pflag.Flag) {
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					_ = sv.Replace(nil)
				} else {
					_ = f.Value.Set(f.DefValue)
				}
				f.Changed = false
			})
		}
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	rootCmd.SetArgs(nil)
	return out.String(), err
}

// The commands in testdata are the reference corpus's low-risk and
// approval-granted cases, assembled in our test layout.
func TestAuthorityProject(t *testing.T) {
	out, err := runAuthority(t, "authority", "project", "testdata/authority-low-risk.command.json")
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"EFFECT_AUTHORIZED -> COMMIT_INTENT", "intent:4b20fe24be155a68c88410cc2a401409da2cb98faec44f1e2a896ef1f81ce294", "sha256:f48177d595e696f71a373bc4f30b6b75a3343c550626835032ac5bf37e26ef66"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runAuthority(t, "authority", "project", "--json", "testdata/authority-approval-granted.command.json")
	if err != nil || !strings.Contains(out, `"projection_digest":"sha256:499e41b461d2cf68b5913404121b1c2801d7ad02c085bedbd7509738e8fe190a"`) {
		t.Fatalf("granted: %v\n%s", err, out)
	}
	// A tampered command is rejected with exit 1.
	raw, _ := os.ReadFile("testdata/authority-low-risk.command.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, bytes.Replace(raw, []byte(`"effect_sequence":1`), []byte(`"effect_sequence":2`), 1), 0o644)
	out, err = runAuthority(t, "authority", "project", bad)
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, "COMMAND_DIGEST_MISMATCH") {
		t.Fatalf("tampered: %v\n%s", err, out)
	}
	if _, err := runAuthority(t, "authority", "project", "testdata/no-such-file.json"); exitCode(err) != exitUsage {
		t.Fatalf("missing file: %v", err)
	}
}

func TestAuthorityGates(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "p.dl")
	os.WriteFile(policy, []byte(`decision("G2", "ALLOW", "g2.pay") :- action(t, "payment.send"), capability(t, _).
decision("H1", "REFUSE", "h1.ceiling") :- param_num(t, "amount", n), n > 10000.
`), 0o644)
	ticket := filepath.Join(dir, "t.json")
	os.WriteFile(ticket, []byte(`{"ticket_id":"ticket:1","action":"payment.send","destination":"dest:shop","scope":"scope:team","parameters":{"amount":50},"side_effects":["EXTERNAL"],"assessed_risk":"reversible"}`), 0o644)
	out, err := runAuthority(t, "authority", "gates", policy, ticket, "--capability", "capability:pay")
	if err != nil || !strings.Contains(out, "decision ALLOW") || !strings.Contains(out, "g2.pay") {
		t.Fatalf("allowed: %v\n%s", err, out)
	}
	out, err = runAuthority(t, "authority", "gates", policy, ticket)
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, "default-deny") {
		t.Fatalf("without capability: %v\n%s", err, out)
	}
	os.WriteFile(ticket, []byte(`{"ticket_id":"ticket:1","action":"payment.send","destination":"dest:shop","scope":"scope:team","parameters":{"amount":50000},"side_effects":["EXTERNAL"],"assessed_risk":"reversible"}`), 0o644)
	out, err = runAuthority(t, "authority", "gates", "--json", policy, ticket, "--capability", "c")
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, `"highest_tier":0`) {
		t.Fatalf("ceiling: %v\n%s", err, out)
	}
	// A quorum the policy asks: printed with the rule and the facts it
	// matched, and in the JSON; none below the limit.
	os.WriteFile(policy, []byte(`decision("G2", "ALLOW", "g2.pay") :- action(t, "payment.send"), capability(t, _).
.decl quorum(n: number, rule: symbol)
quorum(2, "g2.four-eyes") :- param_num(t, "amount", n), n > 1000.
`), 0o644)
	out, err = runAuthority(t, "authority", "gates", "--json=false", policy, ticket, "--capability", "c")
	if err != nil || !strings.Contains(out, `an approval needs 2 people, each approving: g2.four-eyes [param_num("ticket:1", "amount", 50000)] at `+policy+`:3:1`) {
		t.Fatalf("quorum: %v\n%s", err, out)
	}
	out, err = runAuthority(t, "authority", "gates", "--json", policy, ticket, "--capability", "c")
	if err != nil || !strings.Contains(out, `"quorum":2,"quorum_reason":{`) {
		t.Fatalf("quorum, JSON: %v\n%s", err, out)
	}
	os.WriteFile(ticket, []byte(`{"ticket_id":"ticket:1","action":"payment.send","destination":"dest:shop","scope":"scope:team","parameters":{"amount":50},"side_effects":["EXTERNAL"],"assessed_risk":"reversible"}`), 0o644)
	out, err = runAuthority(t, "authority", "gates", "--json=false", policy, ticket, "--capability", "c")
	if err != nil || strings.Contains(out, "approval needs") {
		t.Fatalf("no quorum below the limit: %v\n%s", err, out)
	}
	// A decision for a gate the matrix does not know: written as a
	// constant, the policy is refused when it loads, with the position;
	// bound from the ticket, it is refused when evaluated, and the human
	// output says why, not only the JSON.
	os.WriteFile(policy, []byte(`decision("G9", "ALLOW", "g9.typo") :- action(t, _).
`), 0o644)
	_, err = runAuthority(t, "authority", "gates", "--json=false", policy, ticket, "--capability", "c")
	if err == nil || !strings.Contains(err.Error(), `p.dl:1:10: decision names unknown gate "G9"`) {
		t.Fatalf("unknown gate at load: %v", err)
	}
	os.WriteFile(policy, []byte(`decision(g, "ALLOW", "g9.typo") :- destination(t, g).
`), 0o644)
	out, err = runAuthority(t, "authority", "gates", "--json=false", policy, ticket, "--capability", "c")
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, `unknown gate "dest:shop"`) {
		t.Fatalf("unknown gate: %v\n%s", err, out)
	}
}
