package authority

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/cjson"
)

// TestVerifiedChainsDecideAsPresented holds Input.Verified to what the
// same chains presented in Input.Capabilities decide: the same verdicts
// and the same audit lines in the same order, byte for byte — expired,
// not-yet-valid and non-covering chains included — so a caller that
// verifies its chains once loses nothing a decision records.
func TestVerifiedChainsDecideAsPresented(t *testing.T) {
	base, _ := fixtureInput(t, "internal")
	early, err := SignCapability(Capability{ID: "capability:early", EffectType: "artifact.publish", Destination: "dest:*",
		Scopes: []string{"scope:artifact-publishers"}, NotBefore: 0, Expiry: 50}, operator)
	if err != nil {
		t.Fatal(err)
	}
	late, err := SignCapability(Capability{ID: "capability:late", EffectType: "artifact.publish", Destination: "dest:*",
		Scopes: []string{"scope:artifact-publishers"}, NotBefore: 150, Expiry: 400}, operator)
	if err != nil {
		t.Fatal(err)
	}
	other, err := SignCapability(Capability{ID: "capability:other", EffectType: "artifact.publish", Destination: "dest:elsewhere",
		Scopes: []string{"scope:artifact-publishers"}, NotBefore: 0, Expiry: 400}, operator)
	if err != nil {
		t.Fatal(err)
	}
	good := base.Capabilities[0]
	for _, c := range []struct {
		name   string
		chains [][]SignedCapability
		now    int64
	}{
		{"one live chain", [][]SignedCapability{good}, 100},
		{"expired then live", [][]SignedCapability{{early}, good}, 100},
		{"not covering then live", [][]SignedCapability{{other}, good}, 100},
		{"not yet valid, expired, not covering", [][]SignedCapability{{late}, {early}, {other}}, 100},
		{"all expired", [][]SignedCapability{{early}, good}, 300},
		{"live late only", [][]SignedCapability{good, {late}}, 250},
		{"none", nil, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			presented := base
			presented.Now, presented.Capabilities = c.now, c.chains
			verified := presented
			verified.Capabilities = nil
			for _, ch := range c.chains {
				v, err := base.Policy.Keyring.Verify(ch)
				if err != nil {
					t.Fatal(err)
				}
				verified.Verified = append(verified.Verified, v)
			}
			want, err := Authorize(presented)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Authorize(verified)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := cjson.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := cjson.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wb, gb) {
				t.Fatalf("verified chains decide differently from presented ones:\npresented %s\nverified  %s", wb, gb)
			}
			if len(c.chains) > 1 && len(want.Outcomes[0].Audit) == 0 {
				t.Fatalf("the case audits nothing, so it proves little: %+v", want.Outcomes[0])
			}
		})
	}
}
