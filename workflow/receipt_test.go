package workflow

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// unmarshalReceipt is what the tick read before: encoding/json into the
// protocol type.
func unmarshalReceipt(body []byte) (string, string, error) {
	var rc protocol.ActionReceipt
	err := json.Unmarshal(body, &rc)
	return rc.IntentID, rc.Outcome, err
}

// ParseReceipt reads what json.Unmarshal reads, and fails where it fails with
// its error: over receipts as cjson writes them (which the scan must read
// itself) and the same text edited byte by byte, member by member.
func TestReceiptOfIsUnmarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.SampledFrom([]string{"intent:a1", "", "é", "confirmed_success", "x\"y", "a\\b", "\u0001", "K", "\u212a"})
		rc := protocol.ActionReceipt{Kind: protocol.KindActionReceipt, IntentID: text.Draw(t, "intent"), Outcome: text.Draw(t, "outcome"),
			ActionDigest: text.Draw(t, "digest"), ApprovalRequired: rapid.Bool().Draw(t, "approval"), OutputDigests: protocol.DigestSet{}}
		if rapid.Bool().Draw(t, "trace") {
			s := text.Draw(t, "trace_ref")
			rc.TraceRef = &s
		}
		if rapid.Bool().Draw(t, "outputs") {
			rc.OutputDigests = protocol.DigestSet{text.Draw(t, "out1"), "sha256:00"}
		}
		b, err := cjson.Marshal(rc)
		if err != nil {
			t.Skip(err)
		}
		var read protocol.ActionReceipt
		if ok := receiptReader.Read(b, &read); !ok && cjson.CheckString(rc.IntentID, "") == nil && plainText(rc.IntentID) && plainText(rc.Outcome) &&
			plainText(rc.ActionDigest) && (rc.TraceRef == nil || plainText(*rc.TraceRef)) && (len(rc.OutputDigests) == 0 || plainText(rc.OutputDigests[0])) {
			t.Fatalf("a receipt as cjson writes it is left to encoding/json: %s", b)
		}
		edits := rapid.IntRange(0, 3).Draw(t, "edits")
		for range edits {
			switch rapid.IntRange(0, 5).Draw(t, "edit") {
			case 0: // a byte replaced
				if len(b) > 0 {
					b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] = rapid.SampledFrom([]byte(" \t\"\\,:{}[]01nulltrefasIKé\xff\x00")).Draw(t, "byte")
				}
			case 1: // a byte dropped
				if len(b) > 0 {
					k := rapid.IntRange(0, len(b)-1).Draw(t, "drop")
					b = append(b[:k:k], b[k+1:]...)
				}
			case 2: // text inserted
				k := rapid.IntRange(0, len(b)).Draw(t, "insert")
				ins := rapid.SampledFrom([]string{" ", `"intent_id":"dup",`, `"Intent_ID":"fold",`, `"extra":1,`, `"outcome":null,`,
					`"approval_required":"yes",`, `"output_digests":[1],`, `"trace_ref":7,`, "\n", `"kind":"x",`}).Draw(t, "text")
				b = append(b[:k:k], append([]byte(ins), b[k:]...)...)
			case 3: // trailing text
				b = append(b, rapid.SampledFrom([]string{" ", "{}", "x"}).Draw(t, "tail")...)
			case 4: // another document
				b = []byte(rapid.SampledFrom([]string{"null", "{}", "[]", `"x"`, "", `{"intent_id":null}`, `{"outcome":"a","outcome":"b"}`,
					`{"output_digests":null,"approval_digest":null,"approval_required":null}`, `{"intent_id":"a\u00e9"}`}).Draw(t, "doc"))
			case 5: // a value replaced
				for _, m := range []string{`"intent_id":"`, `"outcome":"`} {
					b = []byte(replaceOnce(string(b), m, m+rapid.SampledFrom([]string{"\\u0041", "\xc3", "\\\"", "é"}).Draw(t, "prefix")))
				}
			}
		}
		id, out, err := ParseReceipt(b)
		wid, wout, werr := unmarshalReceipt(b)
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%q: error %v, encoding/json %v", b, err, werr)
		}
		if err == nil && (id != wid || out != wout) {
			t.Fatalf("%q: read %q %q, encoding/json %q %q", b, id, out, wid, wout)
		}
	})
}

// plainText is a string the reader reads as it is: no escape in its JSON
// text, valid UTF-8.
func plainText(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// TestOutcomeValueIsBoxed holds outcomeValue to the outcome boxed as it
// is: the same string, for the protocol's outcomes (boxed once) and for
// drawn others.
func TestOutcomeValueIsBoxed(t *testing.T) {
	known := []string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure, protocol.OutcomeUnknown}
	rapid.Check(t, func(t *rapid.T) {
		o := rapid.OneOf(rapid.SampledFrom(known), rapid.String()).Draw(t, "outcome")
		if got := outcomeValue(o); got != any(o) {
			t.Fatalf("outcomeValue(%q) = %#v", o, got)
		}
	})
	for _, o := range known {
		if n := testing.AllocsPerRun(10, func() { _ = outcomeValue(o) }); n != 0 {
			t.Fatalf("outcomeValue(%q): %v allocations", o, n)
		}
	}
}
