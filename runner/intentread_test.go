package runner

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// decodeIntent reads what decodeInto reads, with the same error, and
// reads the runner's own canonical intents without decodeInto.
func TestDecodeIntentMatchesDecodeInto(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[a-z0-9:\-_]{0,12}`)
		if rapid.IntRange(0, 3).Draw(t, "odd text") == 0 {
			text = rapid.StringMatching(`[a-z0-9:\-_ "\\é\x00]{0,12}`)
		}
		var approval *string
		if rapid.Bool().Draw(t, "approved") {
			d := "sha256:" + cjson.HexDigest([]byte(text.Draw(t, "approval")))
			approval = &d
		}
		pi := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "i" + text.Draw(t, "id"), IdempotencyKey: "k" + text.Draw(t, "key"),
			EffectType: text.Draw(t, "type"), CauseID: text.Draw(t, "cause"), ApprovalRequired: approval != nil, ApprovalDigest: approval,
			Preconditions: rapid.SliceOfDistinct(text, func(s string) string { return s }).Draw(t, "preconditions"), Versions: versions()}
		b, err := cjson.Marshal(pi)
		if err != nil {
			t.Fatal(err)
		}
		// Edited texts: a member added, renamed or of another type, the
		// text cut short.
		switch rapid.IntRange(0, 5).Draw(t, "edit") {
		case 1:
			b = append([]byte(`{"extra":1,`), b[1:]...)
		case 2:
			b = append([]byte(`{"Kind":"x",`), b[1:]...)
		case 3:
			b = append([]byte(`{"approval_required":"yes",`), b[1:]...)
		case 4:
			b = b[:rapid.IntRange(0, len(b)).Draw(t, "cut")]
		case 5:
			b = append(b, ` {}`...)
		}
		got, gotErr := decodeIntent(b)
		var want protocol.EffectIntent
		wantErr := decodeInto(b, &want)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, decodeInto's %v", b, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read %#v, decodeInto %#v", b, got, want)
		}
	})
	// The runner's own intents are read without encoding/json.
	d := "sha256:" + cjson.HexDigest(nil)
	b, err := cjson.Marshal(protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "intent:1", IdempotencyKey: "k", ApprovalDigest: &d,
		Preconditions: protocol.IDSet{"a", "b"}, Versions: versions()})
	if err != nil {
		t.Fatal(err)
	}
	if !intentReader.Read(b, &protocol.EffectIntent{}) {
		t.Fatalf("%s is left to encoding/json", b)
	}
}

// asDecoded gives what decoding cjson's encoding of an intent gives, for
// every intent cjson encodes (preconditions unsorted, empty or nil, texts
// to escape, an approval digest or none), sharing nothing with it.
func TestAsDecodedMatchesDecoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[a-z0-9:\-_ "\\é\x00]{0,12}`)
		var approval *string
		if rapid.Bool().Draw(t, "approved") {
			d := "sha256:" + cjson.HexDigest([]byte(text.Draw(t, "approval")))
			approval = &d
		}
		var pre protocol.IDSet
		switch rapid.IntRange(0, 3).Draw(t, "preconditions") {
		case 0:
		case 1:
			pre = protocol.IDSet{}
		default:
			pre = rapid.SliceOf(text).Draw(t, "pre")
		}
		vs := versions()
		vs.Tool = text.Draw(t, "tool")
		pi := protocol.EffectIntent{Kind: rapid.SampledFrom([]string{protocol.KindEffectIntent, protocol.KindEffectIntent, "other"}).Draw(t, "kind"),
			IntentID: text.Draw(t, "id"), IdempotencyKey: text.Draw(t, "key"), ProposalID: text.Draw(t, "proposal"),
			EffectType: text.Draw(t, "type"), CauseID: text.Draw(t, "cause"), AssessedRisk: text.Draw(t, "risk"),
			ApprovalRequired: rapid.Bool().Draw(t, "required"), ApprovalDigest: approval, Preconditions: pre, Versions: vs}
		kb, err := encodedJSON(pi)
		if err != nil {
			return // planned refuses it
		}
		want, err := decodeIntent(kb.b)
		if err != nil {
			t.Fatalf("%s: %v", kb.b, err)
		}
		got, ok := asDecoded(pi)
		if !ok {
			if pi.Kind == protocol.KindEffectIntent {
				t.Fatal("asDecoded declined an intent")
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\nasDecoded %#v\n  decoded %#v", kb.b, got, want)
		}
		if len(got.Preconditions) > 0 && &got.Preconditions[0] == &pi.Preconditions[0] || got.ApprovalDigest != nil && got.ApprovalDigest == pi.ApprovalDigest {
			t.Fatal("asDecoded shares the intent's lists or pointers")
		}
	})
}
