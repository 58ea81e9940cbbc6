package authority

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// Deterministic test keys: key material is an input, never generated.
func testKey(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed
	}
	return ed25519.NewKeyFromSeed(s)
}

var (
	operator = testKey(1)
	intruder = testKey(2)
	ring     = NewKeyring(operator.Public().(ed25519.PublicKey))
)

func rootCap() Capability {
	return Capability{ID: "capability:pay", EffectType: "payment.send", Destination: "dest:*",
		Scopes: []string{"scope:team", "scope:self"}, Limits: map[string]int64{"amount": 5000}, NotBefore: 0, Expiry: 1000}
}

func payTicket(t testing.TB, amount int64, dest, scope string) Ticket {
	tk, err := DraftTicket(TicketSpec{TicketID: "ticket:p", Action: "payment.send", Destination: dest, Scope: scope,
		Parameters: map[string]any{"amount": amount}, SideEffects: []SideEffect{SideEffectExternal}, AssessedRisk: RiskHighRiskExternal})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func capCode(err error) string {
	var ce *CapabilityError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return fmt.Sprint(err)
}

func TestCapabilitySignVerifyCover(t *testing.T) {
	sc, err := SignCapability(rootCap(), operator)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ring.VerifyChain([]SignedCapability{sc}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Covers(payTicket(t, 100, "dest:shop", "scope:team")); err != nil {
		t.Fatal(err)
	}
	for name, tk := range map[string]Ticket{
		"over limit":  payTicket(t, 5001, "dest:shop", "scope:team"),
		"wrong scope": payTicket(t, 1, "dest:shop", "scope:org"),
		"wrong dest":  payTicket(t, 1, "bank:x", "scope:team"),
	} {
		if code := capCode(c.Covers(tk)); code != "NOT_COVERED" {
			t.Errorf("%s: %s", name, code)
		}
	}
	// Expiry is exclusive, not-before inclusive.
	if _, err := ring.VerifyChain([]SignedCapability{sc}, 1000); capCode(err) != "CAPABILITY_EXPIRED" {
		t.Errorf("at expiry: %v", err)
	}
	if _, err := ring.VerifyChain([]SignedCapability{sc}, 0); err != nil {
		t.Errorf("at not-before: %v", err)
	}
}

func TestCapabilityTampering(t *testing.T) {
	sc, _ := SignCapability(rootCap(), operator)
	forged, _ := SignCapability(rootCap(), intruder)
	widened := sc
	widened.Capability.Limits = map[string]int64{"amount": 1 << 40}
	unsigned := sc
	unsigned.Signature = ""
	cases := map[string]struct {
		chain []SignedCapability
		code  string
	}{
		"untrusted key":      {[]SignedCapability{forged}, "UNTRUSTED_KEY"},
		"widened after sign": {[]SignedCapability{widened}, "BAD_SIGNATURE"},
		"unsigned":           {[]SignedCapability{unsigned}, "BAD_SIGNATURE"},
		"none":               {nil, "CAPABILITY_MISSING"},
	}
	// An intruder re-signing a capability with its own key id claimed as the operator's.
	spoof := forged
	spoof.KeyID = sc.KeyID
	cases["spoofed key id"] = struct {
		chain []SignedCapability
		code  string
	}{[]SignedCapability{spoof}, "BAD_SIGNATURE"}
	for name, c := range cases {
		if _, err := ring.VerifyChain(c.chain, 10); capCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}

func TestAttenuationRefusesToWiden(t *testing.T) {
	root, _ := SignCapability(rootCap(), operator)
	for name, mutate := range map[string]func(*Capability){
		"bigger limit":  func(c *Capability) { c.Limits = map[string]int64{"amount": 6000} },
		"dropped limit": func(c *Capability) { c.Limits = nil },
		"new scope":     func(c *Capability) { c.Scopes = []string{"scope:org"} },
		"wider dest":    func(c *Capability) { c.Destination = "*" },
		"later expiry":  func(c *Capability) { c.Expiry = 2000 },
		"other effect":  func(c *Capability) { c.EffectType = "payment.refund" },
	} {
		c := rootCap()
		c.ID = "capability:child"
		mutate(&c)
		if _, err := Attenuate(root, c, operator); capCode(err) != "ATTENUATION_WIDENS" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A chain whose link was forged wider is rejected even if signed.
	c := rootCap()
	c.ID, c.Parent = "capability:child", root.Capability.Digest()
	c.Limits = map[string]int64{"amount": 9000}
	wide, _ := SignCapability(c, operator)
	if _, err := ring.VerifyChain([]SignedCapability{root, wide}, 10); capCode(err) != "ATTENUATION_WIDENS" {
		t.Errorf("wide link: %v", err)
	}
	// And a link that does not name its parent breaks the chain.
	c.Limits, c.Parent = map[string]int64{"amount": 10}, "sha256:"+fmt.Sprintf("%064d", 0)
	orphan, _ := SignCapability(c, operator)
	if _, err := ring.VerifyChain([]SignedCapability{root, orphan}, 10); capCode(err) != "BROKEN_CHAIN" {
		t.Errorf("orphan link: %v", err)
	}
}

// Property: no sequence of attenuations widens anything. Whatever ticket
// and time the final link accepts, the root accepts too, and every link
// verifies as narrowing its parent.
func TestAttenuationOnlyNarrowsRapid(t *testing.T) {
	dests := []string{"dest:*", "dest:shop", "dest:sh*", "dest:shop*", "bank:*", "*"}
	scopes := []string{"scope:team", "scope:self", "scope:org"}
	rapid.Check(t, func(rt *rapid.T) {
		root, _ := SignCapability(rootCap(), operator)
		chain := []SignedCapability{root}
		for i := rapid.IntRange(0, 5).Draw(rt, "links"); i > 0; i-- {
			prev := chain[len(chain)-1].Capability
			next := Capability{
				ID: fmt.Sprintf("capability:link%d", len(chain)), EffectType: prev.EffectType,
				Destination: rapid.SampledFrom(dests).Draw(rt, "dest"),
				Scopes:      rapid.SliceOfNDistinct(rapid.SampledFrom(scopes), 1, 3, rapid.ID[string]).Draw(rt, "scopes"),
				Limits:      map[string]int64{"amount": rapid.Int64Range(0, 8000).Draw(rt, "limit")},
				NotBefore:   rapid.Int64Range(0, 600).Draw(rt, "nb"),
				Expiry:      rapid.Int64Range(601, 1500).Draw(rt, "exp"),
			}
			sc, err := Attenuate(chain[len(chain)-1], next, operator)
			if err != nil {
				if Narrows(next, prev) {
					rt.Fatalf("refused a narrowing attenuation: %v", err)
				}
				continue
			}
			chain = append(chain, sc)
		}
		now := rapid.Int64Range(0, 1500).Draw(rt, "now")
		last, err := ring.VerifyChain(chain, now)
		if err != nil {
			return
		}
		if _, err := ring.VerifyChain(chain[:1], now); err != nil {
			rt.Fatalf("final link live at %d but root is not: %v", now, err)
		}
		tk := payTicket(t, rapid.Int64Range(0, 9000).Draw(rt, "amount"), rapid.SampledFrom([]string{"dest:shop", "dest:shopping", "bank:x", "dest:other"}).Draw(rt, "tdest"), rapid.SampledFrom(scopes).Draw(rt, "tscope"))
		if last.Covers(tk) == nil && root.Capability.Covers(tk) != nil {
			rt.Fatalf("attenuated capability covers what the root does not: %+v", tk)
		}
	})
}

// SignChain parents and signs each link after the root, and refuses what
// Attenuate or Verify would: a widening link, a root with a parent, a
// link naming another parent, an empty chain.
func TestSignChain(t *testing.T) {
	child := rootCap()
	child.ID, child.Limits, child.Scopes = "capability:child", map[string]int64{"amount": 100}, []string{"scope:self"}
	grandchild := child
	grandchild.ID, grandchild.Destination = "capability:grandchild", "dest:shop"
	wide := child
	wide.Limits = map[string]int64{"amount": 9000}
	parented := child
	parented.Parent = "sha256:" + fmt.Sprintf("%064d", 0)
	rooted := rootCap()
	rooted.Parent = parented.Parent
	for _, tc := range []struct {
		name  string
		links []Capability
		code  string // "" when the chain signs
	}{
		{"root alone", []Capability{rootCap()}, ""},
		{"three links", []Capability{rootCap(), child, grandchild}, ""},
		{"empty", nil, "CAPABILITY_MISSING"},
		{"widening link", []Capability{rootCap(), wide}, "ATTENUATION_WIDENS"},
		{"widening after a narrowing", []Capability{rootCap(), child, wide}, "ATTENUATION_WIDENS"},
		{"root with a parent", []Capability{rooted}, "BROKEN_CHAIN"},
		{"link naming another parent", []Capability{rootCap(), parented}, "BROKEN_CHAIN"},
		{"malformed link", []Capability{rootCap(), {ID: "capability:x"}}, "MALFORMED_CAPABILITY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, err := SignChain(tc.links, operator)
			if tc.code != "" {
				if capCode(err) != tc.code || chain != nil {
					t.Fatalf("signed %d links, err %v; want %s", len(chain), err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(chain) != len(tc.links) {
				t.Fatalf("%d links signed of %d", len(chain), len(tc.links))
			}
			v, err := ring.Verify(chain)
			if err != nil {
				t.Fatalf("a signed chain does not verify: %v", err)
			}
			if v.Capability().ID != tc.links[len(tc.links)-1].ID {
				t.Fatalf("effective capability %s", v.Capability().ID)
			}
			// Ed25519 is deterministic: signing again gives the same chain,
			// and a link given its parent already signs the same.
			again := append([]Capability(nil), tc.links...)
			for i := 1; i < len(again); i++ {
				again[i].Parent = chain[i-1].Capability.Digest()
			}
			chain2, err := SignChain(again, operator)
			if err != nil || fmt.Sprint(chain2) != fmt.Sprint(chain) {
				t.Fatalf("signed again: %v, %v", chain2, err)
			}
			if _, err := NewKeyring(intruder.Public().(ed25519.PublicKey)).Verify(chain); capCode(err) != "UNTRUSTED_KEY" {
				t.Fatalf("verified under another key: %v", err)
			}
		})
	}
}
