package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// alteredTexts returns text's object with each top-level member, and each
// pair of members among pairs, removed or replaced by each value of a pool
// (values of every type, and the ones the kinds' conditions compare), in
// canonical bytes.
func alteredTexts(t *testing.T, text []byte, pairs []string) [][]byte {
	t.Helper()
	v, err := cjson.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	obj := v.(map[string]any)
	d := "sha256:" + strings.Repeat("ab", 32)
	pool := []any{nil, true, false, "x", "", d, "sha256:00", "high_risk_external", "read_only", "reversible",
		"confirmed_success", "unknown", int64(0), int64(-1), []any{}, []any{"a"}, map[string]any{}, map[string]any{"a": "b"}}
	const absent = "\x00absent"
	choices := append([]any{absent}, pool...)
	var out [][]byte
	emit := func(set map[string]any) {
		m := map[string]any{}
		for k, x := range obj {
			m[k] = x
		}
		for k, x := range set {
			if x == absent {
				delete(m, k)
			} else {
				m[k] = x
			}
		}
		b, err := cjson.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	emit(nil)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range obj {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range append(keys, "extra") {
		for _, x := range choices {
			emit(map[string]any{k: x})
		}
	}
	for a := range pairs {
		for b := a + 1; b < len(pairs); b++ {
			for _, x := range choices {
				for _, y := range choices {
					emit(map[string]any{pairs[a]: x, pairs[b]: y})
				}
			}
		}
	}
	return out
}

// TestSpansAppliedAgreesWithRereading holds the check of the subschemas
// applied at a closed object's place from the spans of its members (the
// approval binding's conditions of intents and receipts) to the check that
// reads the object again, and to the full validator, over altered texts of
// every kind the text path checks.
func TestSpansAppliedAgreesWithRereading(t *testing.T) {
	fixtures := map[string]string{
		KindAcceptedEvent: "accepted-event", KindFactDelta: "fact-delta", KindEffectProposal: "effect-proposal",
		KindEligibilityVerdict: "eligibility-verdict", KindEffectIntent: "effect-intent",
		KindActionReceipt: "action-receipt", KindGraphEnvelope: "graph-envelope", KindGraphDelta: "graph-delta",
	}
	recorded := recordedGolden(t)
	bodies := map[string][]byte{}
	for _, c := range []struct{ kind, ptr string }{{KindEffectIntent, "intents"}, {KindActionReceipt, "receipts"}} {
		b, err := cjson.Encode(recorded[c.ptr].([]any)[0].(map[string]any)["body"])
		if err != nil {
			t.Fatal(err)
		}
		bodies[c.kind] = b
	}
	pairs := []string{"assessed_risk", "approval_required", "approval_digest"}
	accepted, applied := 0, 0
	for _, kind := range textKinds {
		texts := [][]byte{mustRead("valid", fixtures[kind])}
		if b, ok := bodies[kind]; ok {
			texts = append(texts, b)
		}
		for _, text := range texts {
			for _, alt := range alteredTexts(t, text, pairs) {
				spansApplied = false
				before := acceptsText(kind, alt)
				spansApplied = true
				after := acceptsText(kind, alt)
				if before != after {
					t.Fatalf("%s: read again %v, from spans %v: %s", kind, before, after, alt)
				}
				if after {
					accepted++
					if err := validateFull(kind, alt); err != nil {
						t.Fatalf("%s: the text path accepts what the validator refuses (%v): %s", kind, err, alt)
					}
				} else if validateFull(kind, alt) == nil {
					// The text path leaves it to the full path: that is fine
					// only outside its grammar, which these texts are not.
					t.Fatalf("%s: the text path refuses what the validator accepts: %s", kind, alt)
				}
				if kind == KindEffectIntent || kind == KindActionReceipt {
					applied++
				}
			}
		}
	}
	if accepted == 0 || applied == 0 {
		t.Fatalf("accepted %d, applied %d: the alterations exercise nothing", accepted, applied)
	}
}

// TestTextReaderFromSpansAgrees holds a TextReader's verdicts and reads
// of altered intents to those made reading the object again.
func TestTextReaderFromSpansAgrees(t *testing.T) {
	text := mustRead("valid", "effect-intent")
	for _, alt := range alteredTexts(t, text, []string{"assessed_risk", "approval_required", "approval_digest"}) {
		r := NewTextReader[EffectIntent](KindEffectIntent, "approval_digest", "approval_required", "assessed_risk")
		var a, b EffectIntent
		spansApplied = false
		readA, errA := r.Validate(alt, &a)
		spansApplied = true
		readB, errB := r.Validate(alt, &b)
		if readA != readB || (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("read %v/%v, error %v/%v: %s", readA, readB, errA, errB, alt)
		}
		if readB {
			ea, _ := json.Marshal(a)
			eb, _ := json.Marshal(b)
			if string(ea) != string(eb) {
				t.Fatalf("read %s, then %s", ea, eb)
			}
		}
	}
}

// TestSpansAppliedConditions holds the spans' verdicts to reading again
// under a schema whose conditions require members the closed object leaves
// optional, so that the count of required members decides.
func TestSpansAppliedConditions(t *testing.T) {
	doc := `{"$defs":{"x":{"type":"object","additionalProperties":false,
		"properties":{"a":{"type":["integer","string","null"]},"b":{},"c":{},"d":{"type":"array"}},
		"allOf":[
			{"if":{"required":["a"],"properties":{"a":{"const":1}}},
			 "then":{"required":["b"],"properties":{"b":{"type":"string"}}},
			 "else":{"properties":{"c":{"type":"null"},"d":{"items":{"type":"integer"}}}}},
			{"$ref":"#/$defs/y"}],
		"anyOf":[{"required":["c"]},{"required":["a","b"],"properties":{"a":{"minimum":0},"b":{}}}]},
		"y":{"properties":{"b":{"maxLength":2}},"required":["b"]}}}`
	fc, err := newFastCompiler([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	n, err := fc.def("x")
	if err != nil {
		t.Fatal(err)
	}
	values := []string{"", `0`, `1`, `2`, `-1`, `"s"`, `"long"`, `null`, `[]`, `[1]`, `["s"]`, `{}`}
	decided := 0
	for _, a := range values {
		for _, b := range values {
			for _, c := range values {
				for _, d := range values {
					var members []string
					for i, v := range []string{a, b, c, d} {
						if v != "" {
							members = append(members, `"`+string(rune('a'+i))+`":`+v)
						}
					}
					text := []byte("{" + strings.Join(members, ",") + "}")
					spansApplied = false
					_, before := n.acceptsTextAt(text, 0, 0, 0, false, false, nil)
					spansApplied = true
					_, after := n.acceptsTextAt(text, 0, 0, 0, false, false, nil)
					if before != after {
						t.Fatalf("read again %v, from spans %v: %s", before, after, text)
					}
					if after {
						decided++
					}
				}
			}
		}
	}
	if decided == 0 {
		t.Fatal("nothing accepted")
	}
}

// TestPatternsCutAgreesWithPlainScan holds the reading of a patterned
// string to its closing quote to the reading that scans it for plain
// bytes first, and to the full validator, over texts whose strings hold
// escapes, controls, DEL and non-ASCII bytes where the text path's
// grammar refuses them.
func TestPatternsCutAgreesWithPlainScan(t *testing.T) {
	recorded := recordedGolden(t)
	var texts [][]byte
	for _, id := range []string{"effect-intent", "action-receipt", "fact-delta", "accepted-event", "effect-proposal",
		"eligibility-verdict", "graph-envelope", "graph-delta"} {
		texts = append(texts, mustRead("valid", id))
	}
	for _, ptr := range []string{"intents", "receipts"} {
		b, err := cjson.Encode(recorded[ptr].([]any)[0].(map[string]any)["body"])
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, b)
	}
	inserts := []string{`\"`, `\\`, `\u0041`, `\n`, `\/`, "\x01", "\t", "\x7f", "é", "\xff", `"`, `\`, " ", "+", "A"}
	checked, accepted := 0, 0
	for _, text := range texts {
		kind, err := KindOf(text)
		if err != nil {
			t.Fatal(err)
		}
		// Every string of the text, each altered at its start, middle and end.
		for i := 0; i < len(text); i++ {
			if text[i] != '"' {
				continue
			}
			j := i + 1 + bytes.IndexByte(text[i+1:], '"')
			for _, at := range []int{i + 1, (i + 1 + j) / 2, j} {
				for _, ins := range inserts {
					alt := slices.Concat(text[:at], []byte(ins), text[at:])
					patternsCut = false
					before := acceptsText(kind, alt)
					patternsCut = true
					after := acceptsText(kind, alt)
					checked++
					if before != after {
						t.Fatalf("%s: scanned %v, cut %v: %s", kind, before, after, alt)
					}
					if after {
						accepted++
						if err := validateFull(kind, alt); err != nil {
							t.Fatalf("%s: the text path accepts what the validator refuses (%v): %s", kind, err, alt)
						}
					}
				}
			}
			i = j
		}
	}
	if accepted == 0 || checked == accepted {
		t.Fatalf("%d texts, %d accepted: the alterations exercise nothing", checked, accepted)
	}
}

// TestPlainPatterns: a pattern is plain only when none of its classes
// holds a byte the text path's strings may not hold.
func TestPlainPatterns(t *testing.T) {
	for p, want := range map[string]bool{
		`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`: true,
		`^sha256:[0-9a-f]{64}$`:          true,
		`^[ -~]*$`:                       false, // a quote and a backslash
		`^[a-z\\]+$`:                     false,
		`^[a-z"]+$`:                      false,
		"^[a-z\x7f]+$":                   false,
		"^[\t a-z]+$":                    false,
		`^(a|b)$`:                        false, // not a simple pattern: the regular expression
	} {
		m, err := compilePattern(p)
		if err != nil {
			t.Fatal(err)
		}
		if m.plain != want {
			t.Errorf("%q: plain %v, want %v", p, m.plain, want)
		}
	}
}
