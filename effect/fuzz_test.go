package effect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// FuzzReceipt decodes arbitrary JSON as an ActionReceipt (as a stored or
// received receipt is read) and holds the receipt's two fast paths to
// their oracles: marshalReceipt writes cjson.Marshal's bytes (or the same
// refusal), and receiptConforms says yes only where protocol.Validate
// accepts those bytes.
func FuzzReceipt(f *testing.F) {
	d := "sha256:" + strings.Repeat("1", 64)
	base := sampleReceipt(d)
	good, err := cjson.Marshal(base)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"i-1"`), []byte(`"e\u0301"`), 1))
	f.Add(bytes.Replace(good, []byte(`"reversible"`), []byte(`"high_risk_external"`), 1))
	f.Add(bytes.Replace(good, []byte(`"approval_digest":"`+d+`"`), []byte(`"approval_digest":null`), 1))
	f.Add([]byte(`{"kind":"action_receipt","output_digests":["a","a"]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r protocol.ActionReceipt
		if json.Unmarshal(data, &r) != nil {
			return
		}
		got, gotErr := encodesAsMarshal(t, &r)
		conforms := receiptConforms(&r)
		if gotErr != nil {
			if conforms {
				t.Fatalf("conforms, but its encoding is refused: %v", gotErr)
			}
			return
		}
		if verr := protocol.Validate(r.WireKind(), got); conforms && verr != nil {
			t.Fatalf("receiptConforms, but protocol.Validate: %v\n%s", verr, got)
		}
	})
}
