package runner

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/protocol"
)

// genDocText draws the text of a document an effect's payload or a
// receipt may be handed in as: canonical encodings of drawn values (some
// under a kind with set-like members), and texts that are not canonical
// alone (unsorted keys or sets, duplicates, whitespace), or that nest too
// deep once embedded in a checkpoint.
func genDocText() *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0, 1:
			v := genJSON(3).Draw(t, "v")
			if m, ok := v.(map[string]any); ok && rapid.Bool().Draw(t, "kind") {
				m["kind"] = rapid.SampledFrom([]string{"EffectIntent", "ActionReceipt", "other"}).Draw(t, "k")
				m["preconditions"] = []any{"a", "b"}
			}
			b, err := cjson.Encode(v)
			if err != nil {
				return []byte(`null`)
			}
			return b
		case 2:
			return []byte(rapid.SampledFrom([]string{`{"b":1,"a":2}`, `{"kind":"EffectIntent","preconditions":["b","a"]}`,
				`{"kind":"EffectIntent","preconditions":["a","b"]}`, `{"kind":"other","preconditions":["b","a"]}`,
				`{ "a":1}`, `["a","a"]`, `"\u0041"`, `{"a":[]}`, `7`}).Draw(t, "text"))
		default:
			n := rapid.IntRange(cjson.MaxDepth-6, cjson.MaxDepth).Draw(t, "deep")
			return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		}
	})
}

// TestKeptBytesEncodeAsValues holds a checkpoint whose payloads, intents
// and pending receipts are kept as canonical bytes (planned, close) to
// the same checkpoint with each of them decoded, as it was before they
// were kept: the checkpoint's bytes, the digest of its open effects (the
// no-progress fingerprint's), the intents' evidence digest, the members
// read from an intent, the payload handed to adapters and the receipt
// accepted back.
func TestKeptBytesEncodeAsValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kept := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, WorkflowID: "wf", WorkflowDigest: cjson.Digest([]byte("wf")),
			Control: control.Configuration{State: "EXECUTE"}, Completion: Continue, Open: []openEffect{}, Ingest: []pendingReceipt{}}
		kept.setState(genJSON(2).Draw(t, "state"))
		decoded := *kept
		decoded.Open, decoded.Ingest = []openEffect{}, []pendingReceipt{}
		for i := range rapid.IntRange(0, 3).Draw(t, "effects") {
			text := rapid.StringMatching(`[a-z0-9 "\\é]{0,8}`)
			plan := EffectPlan{
				Intent: protocol.EffectIntent{Kind: "EffectIntent", IntentID: "i" + text.Draw(t, "id"), IdempotencyKey: "k" + text.Draw(t, "key"),
					EffectType: text.Draw(t, "type"), Preconditions: rapid.SliceOfDistinct(text, func(s string) string { return s }).Draw(t, "pre"),
					Versions: versions()},
				Payload:       genDocText().Draw(t, "payload"),
				ContentDigest: cjson.Digest([]byte{byte(i)}),
			}
			e, err := planned(plan)
			if err != nil {
				if _, derr := canonValue(plan.Payload); derr == nil {
					t.Fatalf("planned refused %s: %v", plan.Payload, err)
				}
				continue
			}
			if rapid.Bool().Draw(t, "committed") {
				e.Stage = stageCommitted
			}
			kept.Open = append(kept.Open, e)
			ref := e
			ref.intentBytes, ref.payloadBytes = canonJSON{}, canonJSON{}
			if ref.Payload, err = canonValue(plan.Payload); err != nil {
				t.Fatalf("planned kept %s, which does not decode: %v", plan.Payload, err)
			}
			iv, err := cjson.Marshal(plan.Intent)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Intent, err = canonValue(iv); err != nil {
				t.Fatal(err)
			}
			m := ref.Intent.(map[string]any)
			if rapid.Bool().Draw(t, "bound") {
				// What commitIntents reads once bindContent decoded the intent.
				var pi protocol.EffectIntent
				if err := decodeInto(e.intentBytes.b, &pi); err != nil {
					t.Fatal(err)
				}
				e.committed = &pi
			}
			if got, want := e.effectType(), m["effect_type"]; got != want {
				t.Fatalf("effect type %q, the decoded intent's %q", got, want)
			}
			if got, want := e.idempotencyKey(), m["idempotency_key"]; got != want {
				t.Fatalf("idempotency key %q, the decoded intent's %q", got, want)
			}
			if rapid.Bool().Draw(t, "read") && !reflect.DeepEqual(e.intentObject(), m) {
				t.Fatalf("intent object %v, decoded %v", e.intentObject(), m)
			}
			decoded.Open = append(decoded.Open, ref)
		}
		for i := range rapid.IntRange(0, 2).Draw(t, "receipts") {
			body := genDocText().Draw(t, "receipt")
			if !cjson.IsCanonical(body) {
				continue // close keeps cjson.Marshal's bytes, canonical by construction
			}
			v, err := canonValue(body)
			if err != nil {
				t.Fatal(err)
			}
			d := cjson.Digest(body)
			var held any = json.RawMessage(body) // bytes not proved: checked where written
			if rapid.Bool().Draw(t, "proved") {
				held, _ = checkedJSON(body)
			}
			kept.Ingest = append(kept.Ingest, pendingReceipt{IntentID: "r" + string(rune('a'+i)), Digest: d, Receipt: held})
			decoded.Ingest = append(decoded.Ingest, pendingReceipt{IntentID: "r" + string(rune('a'+i)), Digest: d, Receipt: v})
			got, err := keptBytes(kept.Ingest[len(kept.Ingest)-1].Receipt)
			want, werr := canonBytes(v)
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("receipt accepted as %s (%v), decoded it encodes as %s (%v)", got, err, want, werr)
			}
		}
		got, gerr := kept.encode()
		want, werr := decoded.encode()
		if (gerr == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("kept: %s, %v\ndecoded: %s, %v", got, gerr, want, werr)
		}
		if ref, err := cjson.Marshal(&decoded); (err == nil) != (werr == nil) || !bytes.Equal(ref, want) {
			t.Fatalf("decoded checkpoint encodes as %s, cjson.Marshal gives %s (%v)", want, ref, err)
		}
		gd, gerr := cjson.DigestOf(kept.Open)
		wd, werr := cjson.DigestOf(decoded.Open)
		if gd != wd || (gerr == nil) != (werr == nil) {
			t.Fatalf("open effects digest %s (%v), decoded %s (%v)", gd, gerr, wd, werr)
		}
		// What EFFECT_AUTHORIZED digests: the intents as they are held.
		var keptIntents, decodedIntents []any
		for i := range kept.Open {
			keptIntents, decodedIntents = append(keptIntents, kept.Open[i].Intent), append(decodedIntents, decoded.Open[i].Intent)
		}
		if g, w := evidence(map[string]any{"capability_digest": keptIntents}), evidence(map[string]any{"capability_digest": decodedIntents}); !reflect.DeepEqual(g, w) {
			t.Fatalf("intents' evidence %v, decoded %v", g, w)
		}
		for i := range kept.Open {
			got, gerr := kept.Open[i].payloadCanonical()
			want, werr := decoded.Open[i].payloadCanonical()
			if (gerr == nil) != (werr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("payload %s (%v), decoded %s (%v)", got, gerr, want, werr)
			}
		}
	})
}
