package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// Every member of an intent and of a receipt a TextReader can fill.
var (
	intentTextMembers = []string{
		"kind", "intent_id", "proposal_id", "batch_id", "effect_type", "action_digest", "capability",
		"authority_digest", "cause_id", "correlation_id", "idempotency_key", "destination_digest", "goal_id",
		"obligation_id", "adapter_version", "assessed_risk", "approval_required", "approval_digest", "preconditions",
	}
	receiptTextMembers = []string{
		"kind", "intent_id", "action_digest", "command_digest", "input_root_digest", "platform_digest", "cause_id",
		"correlation_id", "capability", "authority_digest", "destination_digest", "goal_id", "obligation_id",
		"adapter_version", "assessed_risk", "approval_required", "approval_digest", "attempt_id", "idempotency_key",
		"output_digests", "outcome", "trace_ref", "recorded_at",
	}
	intentText  = NewTextReader[EffectIntent](KindEffectIntent, intentTextMembers...)
	receiptText = NewTextReader[ActionReceipt](KindActionReceipt, receiptTextMembers...)
	// A few members only, as a caller keeps them.
	intentFew  = NewTextReader[EffectIntent](KindEffectIntent, "intent_id", "approval_digest", "approval_required")
	receiptFew = NewTextReader[ActionReceipt](KindActionReceipt, "outcome", "output_digests", "trace_ref")
)

// keptOf is v with every member whose JSON name is not in names zeroed.
func keptOf[T any](v T, names []string) T {
	rv := reflect.ValueOf(&v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if !slices.Contains(names, name) {
			rv.Field(i).SetZero()
		}
	}
	return v
}

// checkTextReader holds one reader to Validate and encoding/json on text:
// the same error, a read exactly where the text path accepts, and then the
// kept members encoding/json reads, without error.
func checkTextReader[T any](t tester, r *TextReader[T], names []string, text []byte) {
	t.Helper()
	var got T
	read, err := r.Validate(text, &got)
	if want := Validate(r.kind, text); !reflect.DeepEqual(err, want) {
		t.Fatalf("%s: TextReader error %v, Validate %v, for %s", r.kind, err, want, text)
	}
	if err != nil && (read || !reflect.ValueOf(got).IsZero()) {
		t.Fatalf("%s: refused %s yet read %v: %+v", r.kind, text, read, got)
	}
	if read != acceptsText(r.kind, text) {
		t.Fatalf("%s: read %v, text path %v, for %s", r.kind, read, !read, text)
	}
	if !read {
		return
	}
	var whole T
	if err := json.Unmarshal(text, &whole); err != nil {
		t.Fatalf("%s: read %s, which encoding/json refuses: %v", r.kind, text, err)
	}
	if want := keptOf(whole, names); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read %+v, encoding/json %+v, from %s", r.kind, got, want, text)
	}
}

func checkTextReaders(t tester, text []byte) {
	t.Helper()
	checkTextReader(t, intentText, intentTextMembers, text)
	checkTextReader(t, receiptText, receiptTextMembers, text)
	checkTextReader(t, intentFew, []string{"intent_id", "approval_digest", "approval_required"}, text)
	checkTextReader(t, receiptFew, []string{"outcome", "output_digests", "trace_ref"}, text)
}

func TestTextReaderOnRepoFixtures(t *testing.T) {
	reads := 0
	for _, v := range repoJSON(t) {
		text, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		indented, _ := json.MarshalIndent(v, " ", "\t")
		checkTextReaders(t, text)
		checkTextReaders(t, indented)
		if k := v.(map[string]any)["kind"]; k == KindEffectIntent || k == KindActionReceipt {
			reads++
		}
	}
	if reads < 4 {
		t.Fatalf("only %d intents and receipts among the fixtures", reads)
	}
}

// Generated bodies: the repository's wire objects mutated (members
// dropped, added, replaced by values on both sides of every bound of the
// schema, at any depth), written compact or indented, and edited as text.
func TestTextReaderMatchesValidateOnMutations(t *testing.T) {
	var seeds []map[string]any
	for _, s := range wireSeeds(repoJSON(t)) {
		if k := s["kind"]; k == KindEffectIntent || k == KindActionReceipt {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		t.Fatal("no intent or receipt among the fixtures")
	}
	pool := mutationPool()
	names := memberNames()
	edits := []string{`"`, `\`, `\u0041`, ",", "]", "}", "null", " ", "é", "\x7f", "1", "true", `""`, `[]`, `{}`}
	rapid.Check(t, func(t *rapid.T) {
		v := deepCopy(rapid.SampledFrom(seeds).Draw(t, "seed")).(map[string]any)
		for n := rapid.IntRange(0, 3).Draw(t, "mutations"); n > 0; n-- {
			mutate(t, v, pool, names)
		}
		var text []byte
		var err error
		if rapid.Bool().Draw(t, "indent") {
			text, err = json.MarshalIndent(v, "", "  ")
		} else {
			text, err = json.Marshal(v)
		}
		if err != nil {
			t.Fatal(err)
		}
		if rapid.IntRange(0, 3).Draw(t, "edit") == 0 && len(text) > 0 {
			at := rapid.IntRange(0, len(text)-1).Draw(t, "at")
			cut := rapid.IntRange(0, min(3, len(text)-at)).Draw(t, "cut")
			text = slices.Concat(text[:at], []byte(rapid.SampledFrom(edits).Draw(t, "insert")), text[at+cut:])
		}
		checkTextReaders(t, text)
	})
}

// A kept member whose value the schema accepts but encoding/json would not
// read into its field is not read: the caller decodes.
func TestTextReaderLeavesOtherShapesToTheCaller(t *testing.T) {
	intent := mustRead("valid", "effect-intent")
	type oddVersions struct {
		Versions string `json:"versions"`
	}
	type oddPreconditions struct {
		Preconditions bool `json:"preconditions"`
	}
	type oddRequired struct {
		ApprovalRequired string `json:"approval_required"`
	}
	var a oddVersions
	var b oddPreconditions
	var c oddRequired
	for name, read := range map[string]func() (bool, error){
		"versions": func() (bool, error) {
			return NewTextReader[oddVersions](KindEffectIntent, "versions").Validate(intent, &a)
		},
		"preconditions": func() (bool, error) {
			return NewTextReader[oddPreconditions](KindEffectIntent, "preconditions").Validate(intent, &b)
		},
		"approval_required": func() (bool, error) {
			return NewTextReader[oddRequired](KindEffectIntent, "approval_required").Validate(intent, &c)
		},
	} {
		if ok, err := read(); ok || err != nil {
			t.Errorf("%s: read %v, error %v; want not read, no error", name, ok, err)
		}
	}
	var in EffectIntent
	if ok, err := intentText.Validate(intent, &in); !ok || err != nil || in.IntentID == "" || in.Preconditions == nil {
		t.Fatalf("the fixture intent: read %v, %v, %+v", ok, err, in)
	}
}

// Readers the text path cannot serve are refused when first used.
func TestTextReaderRefusesWhatItCannotRead(t *testing.T) {
	type folded struct {
		IntentID string `json:"Intent_ID"`
	}
	type opts struct {
		IntentID string `json:"intent_id,string"`
	}
	type nested struct {
		Versions VersionEnvelope `json:"versions"`
	}
	for name, use := range map[string]func(){
		"a kind the text path does not check": func() {
			var v EffectIntent
			_, _ = NewTextReader[EffectIntent](KindStableProposalBatch, "kind").Validate(nil, &v)
		},
		"a member the schema does not declare": func() {
			var v folded
			_, _ = NewTextReader[folded](KindEffectIntent, "Intent_ID").Validate(nil, &v)
		},
		"an option that changes decoding": func() {
			var v opts
			_, _ = NewTextReader[opts](KindEffectIntent, "intent_id").Validate(nil, &v)
		},
		"a struct member": func() {
			var v nested
			_, _ = NewTextReader[nested](KindEffectIntent, "versions").Validate(nil, &v)
		},
		"a member not in the struct": func() {
			var v EffectIntent
			_, _ = NewTextReader[EffectIntent](KindEffectIntent, "no_such").Validate(nil, &v)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			use()
		}()
	}
}

// The strings a TextReader reads are cut from one copy of the text, made
// once per text (not one per member), which the caller's text does not
// share: overwriting the text afterwards changes none of them.
func TestTextReaderCopiesTheTextOnce(t *testing.T) {
	g := recordedGolden(t)
	for _, c := range []struct {
		ptr   string
		check func(text []byte) any
	}{
		{"intents", func(text []byte) any {
			var v EffectIntent
			read, err := intentText.Validate(text, &v)
			if err != nil || !read {
				t.Fatalf("intent: read %v, %v", read, err)
			}
			return v
		}},
		{"receipts", func(text []byte) any {
			var v ActionReceipt
			read, err := receiptText.Validate(text, &v)
			if err != nil || !read {
				t.Fatalf("receipt: read %v, %v", read, err)
			}
			return v
		}},
	} {
		text, err := cjson.Encode(g[c.ptr].([]any)[0].(map[string]any)["body"])
		if err != nil {
			t.Fatal(err)
		}
		c.check(text) // the reader resolved
		// One copy of the text, then the pointers and lists reflection
		// sets (a handful), where a copy per kept member made 25 or more.
		allocs := testing.AllocsPerRun(20, func() { c.check(text) })
		if allocs > 8 {
			t.Errorf("%s: %.0f allocations a read, want at most 8", c.ptr, allocs)
		}
		before := c.check(text)
		kept := show(before)
		clear(text)
		if after := show(before); after != kept {
			t.Errorf("%s: overwriting the text changed what was read: %s, then %s", c.ptr, kept, after)
		}
	}
}

// A kept list is read as encoding/json reads it whatever its length: an
// empty list is [] (not nil), and the strings of a longer one are in
// order. (The fixtures' receipts name one output digest each.)
func TestTextReaderReadsListsOfEveryLength(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "m0", "valid", "action-receipt.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	for _, list := range [][]string{{}, {digest("a")}, {digest("c"), digest("a"), digest("b")}} {
		v["output_digests"] = list
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got ActionReceipt
		if read, err := receiptFew.Validate(b, &got); err != nil || !read {
			t.Fatalf("%d digests: read %v, error %v", len(list), read, err)
		}
		if got.OutputDigests == nil || len(got.OutputDigests) != len(list) {
			t.Fatalf("%d digests: read %#v", len(list), got.OutputDigests)
		}
		checkTextReaders(t, b)
	}
}
