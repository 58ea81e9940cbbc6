package control

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/racebuild"
)

// fingerprintPreimage is the fingerprint's preimage as the encoder writes
// it: kind and version beside the input's members.
func fingerprintPreimage(in FingerprintInput) (string, error) {
	return cjson.DigestOf(struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
		FingerprintInput
	}{"ProgressFingerprint", FingerprintVersion, in})
}

// Fingerprint, written member by member, is the digest of the encoder's
// preimage for every input it accepts: drawn cursors and digests.
func TestFingerprintIsTheEncodersPreimage(t *testing.T) {
	digest := rapid.Custom(func(t *rapid.T) string {
		return "sha256:" + strings.Join(rapid.SliceOfN(rapid.SampledFrom(strings.Split("0123456789abcdef", "")), 64, 64).Draw(t, "hex"), "")
	})
	rapid.Check(t, func(t *rapid.T) {
		in := FingerprintInput{
			Cursor: rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Min(0)).Draw(t, "cursor"),
			FState: digest.Draw(t, "f"), LSupports: digest.Draw(t, "l"), RFrontier: digest.Draw(t, "r"),
			PendingEffects: digest.Draw(t, "pending"), Evidence: digest.Draw(t, "evidence"),
		}
		got, err := Fingerprint(in)
		want, werr := fingerprintPreimage(in)
		if err != nil || werr != nil || got != want {
			t.Fatalf("%+v: %s %v, the encoder's %s %v", in, got, err, want, werr)
		}
	})
}

// A fingerprint allocates its digest's text alone.
func TestFingerprintAllocatesItsText(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	d := "sha256:" + strings.Repeat("0a", 32)
	in := FingerprintInput{Cursor: 7, FState: d, LSupports: d, RFrontier: d, PendingEffects: d, Evidence: d}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Fingerprint(in); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}
