package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
)

// Wherever the fast member reader answers, encoding/json reads the same
// member from the same text.
func FuzzMembersAgreeWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"state":{"a":[1,"x"]},"control":{"state":"S"}}`, `{"State":1}`, `{"state":1,"state":2}`,
		`{"a":"\u00e9","state":"\"q"}`, `{"state":null}`, `{}`, `{"ſtate":1}`, `{"state":-0}`, `{"state":01}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := jsonread.Members(b, "state")
		if !ok {
			return
		}
		var body struct {
			State json.RawMessage `json:"state"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%q: members read it, encoding/json refuses it: %v", b, err)
		}
		if !bytes.Equal(m[0], body.State) {
			t.Fatalf("%q: members read %q, encoding/json %q", b, m[0], body.State)
		}
	})
}

// decodeAccepted and runner.DecodeAccepted read every text alike.
func FuzzDecodeAcceptedAgreesWithTheRunner(f *testing.F) {
	for _, s := range []string{`{"actor":"a","actor_role":"r","body":{"x":1},"capability":"c","digest":"d","kind":"input","seq":1}`,
		`{"body":null}`, `{"seq":"1"}`, `{"Kind":"x"}`, `{"kind":"a\u0062"}`, `{"seq":1,"seq":2}`, `{"body":{"a":1.5}}`,
		`{"body":{"b":1,"a":2}}`, `{"body":{"kind":"ActionReceipt","output_digests":["sha256:b","sha256:a"]}}`,
		`{"body":{"kind":"ActionReceipt","output_digests":["sha256:a","sha256:b"]},"kind":"receipt"}`,
		`{"body":{"kind":"ActionReceipt","output_digests":["sha256:b","sha256:a"]},"kind":"receipt","seq":2}`,
		`{"body":{"kind":5,"z":[2,1]},"kind":"input"}`, `{"body":[{"kind":"ActionReceipt"}],"kind":"input"}`,
		`{"body":{"kind":"EffectIntent","preconditions":["b","a","a"]},"kind":"input"}`,
		`{"body":{"kind":"EffectIntent","preconditions":["a","a"]},"kind":"input"}`,
		`{"body":{"kind":"EffectIntent","preconditions":["a","b"]},"kind":"input"}`,
		`{"body":{"kind":"EffectIntent","preconditions":"a"},"kind":"input"}`,
		`{"body":{"kind":"ActionReceipt","output_digests":[{"b":1},{"a":2}]},"kind":"receipt"}`,
		`{"body":{"kind":"StableProposalBatch","eligibility_verdict_ids":["a","c"],"proposal_ids":["b","a"]},"kind":"input"}`,
		`{"kind":"receipt","body":{"output_digests":["a","b"],"kind":"ActionReceipt"}}`,
		`{"body":{"output_digests":["a","b"],"kind":"ActionReceipt"},"kind":"receipt"}`, "{\"actor\":\"\x83\",\"body\":0}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := decodeAccepted(b)
		want, werr := runner.DecodeAccepted(b)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v %v\nwant %+v %v", b, got, gerr, want, werr)
		}
		// A record the verifier found canonical as a whole is read
		// alike when replay takes that as known.
		if c, err := cjson.Canonicalize(b); err == nil && bytes.Equal(c, b) {
			got, gerr := decodeAcceptedAs(b, true)
			if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q, vouched canonical:\n got %+v %v\nwant %+v %v", b, got, gerr, want, werr)
			}
		}
	})
}

// Readers of intents and receipts that keep every member.
var (
	wholeIntentReader  = jsonread.NewReader(protocol.EffectIntent{})
	wholeReceiptReader = jsonread.NewReader(protocol.ActionReceipt{})
)

// Wherever the struct reader answers, encoding/json reads the same intent
// or receipt from the same text, and without error, in the members the
// reader keeps; the reader answers exactly where a reader keeping every
// member does.
func FuzzStructReaderAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"kind":"EffectIntent","intent_id":"i","approval_required":true,"approval_digest":"sha256:x","preconditions":["a"],"versions":{"workflow":"w/1"}}`,
		`{"approval_digest":null,"outcome":"confirmed_success","output_digests":["sha256:a"],"trace_ref":"t"}`,
		`{"kind":"a\u0062"}`, `{"Kind":"x"}`, `{"kind":"x","kind":"y"}`, `{"approval_required":1}`, `{"preconditions":"a"}`,
		"{\"kind\":\"\xff\"}", `{"versions":null}`, `{"kind":null}`, `{"trace_ref":5}`,
		`{"adopted":false,"breach":null,"clock_millis":17,"limits":{"steps":64,"tokens":-0},"max_attempts":4,"retries_exhausted":null,"steps":1}`,
		`{"breach":{"dimension":"steps","limit":1,"used":2},"limits":null,"steps":1.0}`, `{"steps":-}`, `{"retries_exhausted":{"a":1}}`,
		`{"steps":99999999999999999999}`, `{"limits":{"Steps":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameRead(t, b)
		var gi, wi protocol.EffectIntent
		var whole protocol.EffectIntent
		if intentReader.Read(b, &gi) != wholeIntentReader.Read(b, &whole) {
			t.Fatalf("%q: the intent reader and the whole reader disagree", b)
		}
		if intentReader.Read(b, &gi) {
			if err := json.Unmarshal(b, &wi); err != nil || !reflect.DeepEqual(gi, keptOnly(wi, intentKept)) {
				t.Fatalf("%q: read %+v, encoding/json %+v %v", b, gi, wi, err)
			}
		}
		var gl, wl ledger
		if ledgerReader.Read(b, &gl) {
			if err := json.Unmarshal(b, &wl); err != nil || !reflect.DeepEqual(gl, wl) {
				t.Fatalf("%q: read %+v, encoding/json %+v %v", b, gl, wl, err)
			}
		}
		if gb := (ledgers{}); ledgersReader.Read(b, &gb) {
			var wb ledger
			var wy retryLedger
			if json.Unmarshal(b, &wb) != nil || json.Unmarshal(b, &wy) != nil || !reflect.DeepEqual(gb.budget(), wb) || !reflect.DeepEqual(gb.retry(), wy) {
				t.Fatalf("%q: read %+v, encoding/json %+v and %+v", b, gb, wb, wy)
			}
		}
		var gy, wy retryLedger
		if retryLedgerReader.Read(b, &gy) {
			if err := json.Unmarshal(b, &wy); err != nil || !reflect.DeepEqual(gy, wy) {
				t.Fatalf("%q: read %+v, encoding/json %+v %v", b, gy, wy, err)
			}
		}
		var gr, wr protocol.ActionReceipt
		var wholeReceipt protocol.ActionReceipt
		if receiptReader.Read(b, &gr) != wholeReceiptReader.Read(b, &wholeReceipt) {
			t.Fatalf("%q: the receipt reader and the whole reader disagree", b)
		}
		if receiptReader.Read(b, &gr) {
			if err := json.Unmarshal(b, &wr); err != nil || !reflect.DeepEqual(gr, keptOnly(wr, receiptKept)) {
				t.Fatalf("%q: read %+v, encoding/json %+v %v", b, gr, wr, err)
			}
		}
	})
}
