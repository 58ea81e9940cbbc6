package runner

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// The bytes planned keeps for an intent are what encoding the intent's
// value gives, and the payload's are encoded once and handed out as
// copies: binding and sending read what they read when they encoded the
// values themselves.
func TestPlannedKeepsCanonicalBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[a-z0-9:\-_ "\\é]{0,12}`)
		var approval *string
		if rapid.Bool().Draw(t, "approved") {
			d := "sha256:" + cjson.HexDigest([]byte(text.Draw(t, "approval")))
			approval = &d
		}
		kind := rapid.SampledFrom([]string{"EffectIntent", "other", ""}).Draw(t, "kind")
		plan := EffectPlan{
			Intent: protocol.EffectIntent{Kind: kind, IntentID: "i" + text.Draw(t, "id"), IdempotencyKey: "k" + text.Draw(t, "key"),
				EffectType: text.Draw(t, "type"), CauseID: text.Draw(t, "cause"), ApprovalRequired: approval != nil, ApprovalDigest: approval,
				Preconditions: rapid.SliceOfDistinct(text, func(s string) string { return s }).Draw(t, "preconditions"), Versions: versions()},
			ContentDigest: "sha256:" + cjson.HexDigest([]byte("c")),
		}
		payload := map[string]any{"amount": rapid.Int64().Draw(t, "amount"), "payee": text.Draw(t, "payee"),
			"tags": []any{text.Draw(t, "t1"), text.Draw(t, "t2")}}
		if rapid.Bool().Draw(t, "payload kind") {
			payload["kind"] = rapid.SampledFrom([]string{"EffectIntent", "ActionReceipt", "x"}).Draw(t, "pkind")
		}
		var err error
		if plan.Payload, err = cjson.Encode(payload); err != nil {
			t.Fatal(err)
		}
		e, err := planned(plan)
		if err != nil {
			t.Fatal(err)
		}
		want, err := canonBytes(e.Intent)
		if err != nil {
			t.Fatal(err)
		}
		if !e.intentBytes.kept() || !bytes.Equal(e.intentBytes.b, want) {
			t.Fatalf("kept intent bytes %s, encoding the value gives %s", e.intentBytes.b, want)
		}
		wantPayload, err := canonBytes(e.Payload)
		if err != nil {
			t.Fatal(err)
		}
		first, err := e.payloadCanonical()
		if err != nil || !bytes.Equal(first, wantPayload) {
			t.Fatalf("payload %s (%v), want %s", first, err, wantPayload)
		}
		for i := range first {
			first[i] = 'x' // what an adapter may do with its copy
		}
		again, err := e.payloadCanonical()
		if err != nil || !bytes.Equal(again, wantPayload) {
			t.Fatalf("after the first copy was changed, payload %s (%v), want %s", again, err, wantPayload)
		}
	})
}
