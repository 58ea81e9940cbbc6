package frontier

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"

	"flrh.dev/flrh/internal/racebuild"
)

// A delta's delivery id is what DeliveryID spells and its digest, derived
// where it is read, the digest of the delta's canonical bytes (MarshalJSON,
// its strings checked as cjson checks them); building the delta makes one
// allocation, its delivery id.
func TestDeltaIDAndDigest(t *testing.T) {
	v := mustVerdict(t, m3Verdict())
	rapid.Check(t, func(rt *rapid.T) {
		src := rapid.StringMatching(`[a-z][a-z0-9:._-]{0,30}`).Draw(rt, "source")
		at := rapid.Int64Range(0, 1<<50).Draw(rt, "at")
		diff := rapid.SampledFrom([]int{1, -1}).Draw(rt, "diff")
		d, rej := NewValueDelta(src, at, diff, "dataflow/0", v)
		if rej != nil {
			rt.Skip("rejected")
		}
		if want := DeliveryID(src, at, "dataflow/0", v.kind, v.digest); d.DeliveryID() != want {
			rt.Fatalf("delivery id %s, want %s", d.DeliveryID(), want)
		}
		canon, _ := d.MarshalJSON()
		dec, err := cjson.Decode(canon)
		if err != nil {
			rt.Fatal(err)
		}
		if m, _ := dec.(map[string]any); m["delivery_id"] != d.DeliveryID() || m["value_digest"] != v.digest || m["source_id"] != src {
			rt.Fatalf("the canonical delta %s does not carry its ids", canon)
		}
		if want, err := cjson.DigestOf(dec); err != nil || d.Digest() != want {
			rt.Fatalf("digest %s, want %s (%v)", d.Digest(), want, err)
		}
		if enc, _ := cjson.Encode(dec); string(enc) != string(canon) {
			rt.Fatalf("not canonical: %s", canon)
		}
	})
	if racebuild.Enabled {
		return // pooled scratch buffers are dropped at random under the race detector
	}
	if a := testing.AllocsPerRun(20, func() { NewValueDelta("src:a", 7, 1, "dataflow/0", v) }); a != 1 {
		t.Fatalf("NewValueDelta makes %v allocations, want 1", a)
	}
}
