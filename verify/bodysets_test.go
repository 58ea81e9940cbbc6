package verify

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
)

// An accepted input's body in a record found canonical is judged by the
// read that stops after its kind and its sets (canonicalBodySets) as
// the whole read judges it, and never canonical where canonicalizing it
// would not give it back. Bodies of kinds with sets and without, sets absent, in
// order, out of order, repeated or not arrays, keys before, between and
// after the kind and the sets, and texts that are not objects.
func TestCanonicalBodySetsAgreesWithCanonicalize(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		values := map[string][]string{
			"kind":                    {`"ActionReceipt"`, `"EffectIntent"`, `"StableProposalBatch"`, `"GraphDelta"`, `"Other"`, `5`, `null`, `"Action\"Receipt"`},
			"output_digests":          {`["a","b"]`, `["b","a"]`, `["a","a"]`, `[]`, `"a"`, `[{"x":1},{"w":2}]`, `[1,2]`, `[2,1]`},
			"preconditions":           {`["a","b"]`, `["b","a"]`, `[]`, `null`},
			"proposal_ids":            {`["a","b"]`, `["b","a"]`},
			"eligibility_verdict_ids": {`["a","b"]`, `["c","a"]`},
			"causal_parent_delta_ids": {`["a","b"]`, `["b","a"]`},
			"action_digest":           {`"sha256:a"`, `[3,1]`, `{"b":1,"a":2}`},
			"ki":                      {`1`},
			"kinda":                   {`[2,1]`},
			"outcome":                 {`"ok"`, `[2,1]`},
			"zeta":                    {`["b","a"]`, `{"kind":"ActionReceipt","output_digests":["b","a"]}`},
		}
		var keys []string
		for _, k := range []string{"kind", "output_digests", "preconditions", "proposal_ids", "eligibility_verdict_ids",
			"causal_parent_delta_ids", "action_digest", "ki", "kinda", "outcome", "zeta"} {
			if rapid.Bool().Draw(t, "has "+k) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		members := make([]string, len(keys))
		for i, k := range keys {
			members[i] = `"` + k + `":` + rapid.SampledFrom(values[k]).Draw(t, k)
		}
		body := []byte("{" + strings.Join(members, ",") + "}")
		switch rapid.IntRange(0, 9).Draw(t, "shape") {
		case 0:
			body = []byte(`["b","a"]`)
		case 1:
			body = []byte(`"s"`)
		}
		record := []byte(`{"body":` + string(body) + `,"kind":"input"}`)
		if c, err := cjson.Canonicalize(record); err != nil || !bytes.Equal(c, record) {
			t.Skip("record not canonical")
		}
		c, err := cjson.Canonicalize(body)
		want := err == nil && bytes.Equal(c, body)
		got, whole := bodyCanonical(body, true, record), bodyCanonicalWhole(body, true, record)
		if got != whole || got && !want {
			t.Fatalf("%s: bodyCanonical %v, read whole %v, Canonicalize says %v", body, got, whole, want)
		}
	})
}

// elementsIncreaseListed is elementsIncrease as first written: every
// array's elements gathered by jsonread.Elements, then compared.
func elementsIncreaseListed(m [][]byte) bool {
	for _, v := range m {
		if v == nil {
			continue
		}
		els, ok := jsonread.Elements(v)
		if !ok {
			return false
		}
		for i := 1; i < len(els); i++ {
			if bytes.Compare(els[i-1], els[i]) >= 0 {
				return false
			}
		}
	}
	return true
}

// elementsIncrease, comparing each element with the one before as the
// array is read, answers as gathering them first does: arrays in order,
// out of order, with repeats, empty, nested, cut short or not arrays.
func TestElementsIncreaseAsListed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := rapid.SampledFrom([]string{`"a"`, `"b"`, `"c"`, `1`, `2`, `[1]`, `{"x":"a"}`, `null`, `"a\"b"`})
		m := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) []byte {
			switch rapid.IntRange(0, 5).Draw(t, "shape") {
			case 0:
				return nil
			case 1:
				return []byte(rapid.SampledFrom([]string{`"a"`, `{}`, `[`, `["a",]`, `["a"]x`, `["b" "a"]`}).Draw(t, "not a list"))
			}
			els := rapid.SliceOfN(el, 0, 5).Draw(t, "elements")
			return []byte("[" + strings.Join(els, ",") + "]")
		}), 0, 4).Draw(t, "members")
		if got, want := elementsIncrease(m), elementsIncreaseListed(m); got != want {
			t.Fatalf("%q: elementsIncrease %v, listed %v", m, got, want)
		}
	})
}
