package workflow

import (
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// parseInputCases are bodies parseInputCanonical reads and bodies it must
// leave to parseInputDecoded: each is checked against the decoded reading.
var parseInputCases = []string{
	`{"payload":{"amount":12,"payee":"p","reason":"r","refund_id":"r-1"},"type":"refund.requested/1"}`,
	`{"occurred_at":"2026-01-02T03:04:05Z","payload":{"amount":12,"payee":"p","reason":"r","refund_id":"r-1"},"type":"refund.requested/1"}`,
	`{"occurred_at":"2026-01-02T03:04:05+02:00","payload":{},"type":"refund.requested/1"}`,
	`{"payload":{},"type":"flrh.receipt/1"}`,
	`{"payload":{"a":[1,{"b":null}],"c":"\u00e9"},"type":"refund.requested/1"}`,
	`{"payload":{"a":"x"} ,"type":"refund.requested/1"}`,
	`{"payload": {"a":"x"},"type":"refund.requested/1"}`,
	`{"type":"refund.requested/1","payload":{}}`,
	`{"payload":{},"type":"unknown/1"}`,
	`{"payload":{},"type":""}`,
	`{"payload":{},"type":"refund.requested/1"} `,
	`{"payload":{},"type":"refund.requested/1","x":1}`,
	`{"payload":{"a":1},"type":"refund.requested/1"},"type":"refund.requested/1"}`,
	`{"payload":{"a":1},"type":"x","type":"refund.requested/1"}`,
	`{"payload":{"a":1,"a":2},"type":"refund.requested/1"}`,
	`{"payload":{"event_type":"x"},"type":"refund.requested/1"}`,
	`{"payload":{"aggregate_id":"x"},"type":"refund.requested/1"}`,
	`{"payload":{"expected_revision":1},"type":"refund.requested/1"}`,
	`{"payload":[],"type":"refund.requested/1"}`,
	`{"payload":"x","type":"refund.requested/1"}`,
	`{"payload":{"a":1.5},"type":"refund.requested/1"}`,
	`{"payload":{"a":"` + "\x01" + `"},"type":"refund.requested/1"}`,
	`{"payload":{"a":"e` + "\u0301" + `"},"type":"refund.requested/1"}`,
	`{"occurred_at":"yesterday","payload":{},"type":"refund.requested/1"}`,
	`{"occurred_at":"2026-01-02T03:04:05Z" ,"payload":{},"type":"refund.requested/1"}`,
	`{"occurred_at":"2026-01-02T03:04:05\u005a","payload":{},"type":"refund.requested/1"}`,
	`{"occurred_at":1,"payload":{},"type":"refund.requested/1"}`,
	`{"occurred_at":"2026-01-02T03:04:05Z","type":"refund.requested/1"}`,
	`{"payload":{},"type":"refund.requested/1"`,
	`"type":"refund.requested/1"}`,
	`{"type":"refund.requested/1"}`,
	`{,"type":"refund.requested/1"}`,
	`{"payload":,"type":"refund.requested/1"}`,
	`{"payload":{"a":` + strings.Repeat("[", cjson.MaxDepth-2) + strings.Repeat("]", cjson.MaxDepth-2) + `},"type":"refund.requested/1"}`,
	`{"payload":{"a":` + strings.Repeat("[", cjson.MaxDepth-1) + strings.Repeat("]", cjson.MaxDepth-1) + `},"type":"refund.requested/1"}`,
	"\xef\xbb\xbf" + `{"payload":{},"type":"refund.requested/1"}`,
	`{"payload":` + "\xef\xbb\xbf" + `{},"type":"refund.requested/1"}`,
	`{"payload":{},"type":"refund.requested/1\"}`,
	`{"payload":{},"type":"\"}`,
	`"}`,
	``,
}

// checkParseInput holds parseInput of body to parseInputDecoded's reading:
// the same type, value, members and time, or the same error; it reports
// whether parseInputCanonical read the body.
func checkParseInput(fatalf func(string, ...any), w *Workflow, body []byte) bool {
	typ, typValue, members, occurred, err := w.parseInput(body)
	wtyp, wtypValue, wmembers, woccurred, werr := parseInputDecoded(body)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		fatalf("%q: error %v, decoded %v", body, err, werr)
	}
	if typ != wtyp || typValue != wtypValue || occurred != woccurred || !reflect.DeepEqual(members, wmembers) {
		fatalf("%q: %q %v %v %q, decoded %q %v %v %q", body, typ, typValue, members, occurred, wtyp, wtypValue, wmembers, woccurred)
	}
	_, _, _, _, ok := w.parseInputCanonical(body)
	if ok && werr != nil {
		fatalf("%q: read in place where decoding refuses it: %v", body, werr)
	}
	return ok
}

// TestParseInputCanonicalIsDecoded: an input read in place is read as
// decoding it whole reads it, and every body decoding refuses is left to
// it; a recorded input's canonical body is read in place.
func TestParseInputCanonicalIsDecoded(t *testing.T) {
	w := compileExample(t, "refund-agent")
	read := 0
	for _, c := range parseInputCases {
		if checkParseInput(t.Fatalf, w, []byte(c)) {
			read++
		}
	}
	if read < 5 {
		t.Fatalf("%d cases read in place", read)
	}
	if !checkParseInput(t.Fatalf, w, refundInput("r-1", 12, "p", "damaged")) {
		t.Fatal("a canonical input is not read in place")
	}
	rapid.Check(t, func(rt *rapid.T) {
		payload := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.SampledFrom([]string{"amount", "payee", "reason", "event_type", "k", "a\"b"}), 0, 4).Draw(rt, "keys") {
			payload[k] = rapid.OneOf(rapid.Just[any]("x"), rapid.Just[any](int64(-3)), rapid.Just[any](nil),
				rapid.Just[any]([]any{true, map[string]any{}}), rapid.Just[any]("\u00e9\n")).Draw(rt, "value")
		}
		in := map[string]any{"payload": payload,
			"type": rapid.SampledFrom([]string{"refund.requested/1", "flrh.receipt/1", "other/1", ""}).Draw(rt, "type")}
		if rapid.Bool().Draw(rt, "timed") {
			in["occurred_at"] = rapid.SampledFrom([]string{"2026-01-02T03:04:05Z", "2026-01-02", "\u00e9"}).Draw(rt, "time")
		}
		body, err := cjson.Marshal(in)
		if err != nil {
			rt.Fatal(err)
		}
		// Cut or change a byte some of the time: every body is read as
		// decoding reads it.
		if len(body) > 0 && rapid.Bool().Draw(rt, "mangle") {
			i := rapid.IntRange(0, len(body)-1).Draw(rt, "at")
			body = append(append([]byte{}, body[:i]...), append([]byte{rapid.SampledFrom([]byte(`{}[]",: "\\a1`)).Draw(rt, "byte")}, body[i+1:]...)...)
		}
		checkParseInput(rt.Fatalf, w, body)
	})
}
