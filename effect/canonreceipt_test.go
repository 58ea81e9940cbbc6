package effect_test

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/protocol"
)

// NewCanonicalActionReceipt validates the receipt's text where
// NewCheckedActionReceipt validates its decoded value: the two accept
// and refuse the same observations with the same error, and build the
// same receipt and bytes.
func TestCanonicalReceiptIsTheChecked(t *testing.T) {
	digest := rapid.SampledFrom([]string{
		"sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
		"sha256:9999999999999999999999999999999999999999999999999999999999999999",
		"sha256:CCCC", "", "not a digest", "sha256:" + string(make([]byte, 64)),
	})
	rapid.Check(t, func(t *rapid.T) {
		e := fixture.EffectIntent(rapid.SampledFrom([]string{"effect:1", "effect:é", "", "k\"\\"}).Draw(t, "key"))
		if rapid.Bool().Draw(t, "unapproved") {
			e.ApprovalDigest, e.ApprovalRequired = nil, false
		}
		e.AdapterVersion = rapid.SampledFrom([]string{e.AdapterVersion, "", "http/2"}).Draw(t, "adapter")
		bind := effect.ReceiptBinding{CommandDigest: digest.Draw(t, "command"), InputRootDigest: digest.Draw(t, "input"),
			PlatformDigest: digest.Draw(t, "platform")}
		obs := effect.Observation{
			AttemptID:     rapid.SampledFrom([]string{"attempt:1", "effect:1/attempt/2", "", "a b"}).Draw(t, "attempt"),
			Outcome:       rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeUnknown, "confirmed_failure", "probably_fine"}).Draw(t, "outcome"),
			OutputDigests: rapid.SliceOfN(digest, 0, 3).Draw(t, "outputs"),
			RecordedAt:    rapid.SampledFrom([]string{"2026-08-08T00:00:02Z", "yesterday", ""}).Draw(t, "at"),
		}
		want, werr := effect.NewCheckedActionReceipt(e, bind, obs)
		got, gerr := effect.NewCanonicalActionReceipt(e, bind, obs)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("canonical: %v; checked: %v", gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.Value != nil || !bytes.Equal(got.Canonical, want.Canonical) || !reflect.DeepEqual(got.Receipt, want.Receipt) {
			t.Fatalf("canonical %s %+v (value %v); checked %s %+v", got.Canonical, got.Receipt, got.Value, want.Canonical, want.Receipt)
		}
	})
}
