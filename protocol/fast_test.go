package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// schemaKinds are the definitions the fast check is compiled for.
var schemaKinds = append(slices.Clone(Kinds), "VersionEnvelope")

// tester is what the checks need of a *testing.T or a *rapid.T.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// fastAccepts is the fast check's verdict for v as kind.
func fastAccepts(t tester, kind string, v any) bool {
	n := compiledFast()[kind]
	if n == nil {
		t.Fatalf("no fast check for %s", kind)
	}
	return n.accepts(v, 0)
}

// schemaAccepts is the JSON Schema validator's verdict for v as kind.
func schemaAccepts(t tester, kind string, v any) bool {
	schemas, err := compiled()
	if err != nil {
		t.Fatal(err)
	}
	err = schemas[kind].Validate(v)
	var ve *jsonschema.ValidationError
	if err != nil && !errors.As(err, &ve) {
		// Not a verdict (say, a value outside the JSON model): the fast
		// check must not accept it either.
		return false
	}
	return err == nil
}

// referenceValidate is Validate taking no shortcut: every step in order,
// the JSON Schema validator last.
func referenceValidate(kind string, text []byte) error {
	v, err := cjson.Decode(text)
	if err != nil {
		return err
	}
	return validateValue(kind, v, 0)
}

// checkSame asserts that the fast check and the schema validator agree on
// v for every kind, and that Validate and ValidateValue return exactly the
// errors of the full sequence.
func checkSame(t tester, v any) {
	t.Helper()
	for _, k := range schemaKinds {
		if f, s := fastAccepts(t, k, v), schemaAccepts(t, k, v); f != s {
			t.Fatalf("%s: fast check %v, schema %v, for %s", k, f, s, show(v))
		}
	}
	for _, k := range Kinds {
		if got, want := ValidateValue(k, v), validateValue(k, v, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("ValidateValue(%s) = %v, want %v, for %s", k, got, want, show(v))
		}
	}
	// encoding/json keeps arrays as they are (duplicates and order), so
	// the text reaches the set-like check of Validate.
	text, err := json.Marshal(v)
	if err != nil {
		return
	}
	checkSameText(t, text)
}

func checkSameText(t tester, text []byte) {
	t.Helper()
	for _, k := range Kinds {
		if got, want := Validate(k, text), referenceValidate(k, text); !reflect.DeepEqual(got, want) {
			t.Fatalf("Validate(%s) = %v, want %v, for %s", k, got, want, text)
		}
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestFastCompilesEveryKind(t *testing.T) {
	fast := compiledFast()
	for _, k := range schemaKinds {
		if fast[k] == nil {
			t.Errorf("%s has no fast check: its schema uses a keyword the compiler does not know", k)
		}
	}
	// The protocol's patterns are in the matcher's subset; a regular
	// expression there would cost most of what the fast check saves.
	fc, err := newFastCompiler(Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"id", "version", "digest"} {
		n, err := fc.def(name)
		if err != nil {
			t.Fatal(err)
		}
		if n.pattern == nil || n.pattern.re != nil {
			t.Errorf("pattern of %s is not compiled to the matcher", name)
		}
	}
}

func TestFastCompilerRefuses(t *testing.T) {
	for _, def := range []string{
		`{"type":"number","multipleOf":2}`,
		`{"format":"email"}`,
		`{"$ref":"https://example.com/other.json"}`,
		`{"additionalProperties":{"type":"string"}}`,
		`{"const":{"a":1}}`,
		`{"minimum":0.5}`,
		`{"$ref":"#/$defs/loop"}`,
	} {
		doc := `{"$defs":{"loop":{"$ref":"#/$defs/x"},"x":` + def + `}}`
		fc, err := newFastCompiler([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fc.def("x"); err == nil {
			t.Errorf("%s compiled; it must be left to the schema validator", def)
		}
	}
}

func TestMatcherMatchesRegexp(t *testing.T) {
	patterns := []string{
		`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`,
		`^[A-Za-z0-9][A-Za-z0-9._:+/-]*$`,
		`^sha256:[0-9a-f]{64}$`,
		`^a+$`,
		`^[a-c]{2}x*$`,
		`^ab{2}c+$`,
		`^x[0-9]{3}$`,
		`^[0-9]{0}a*$`,
	}
	// Every short string over an alphabet the patterns tell apart, and
	// digests a byte off, then drawn strings.
	short := []string{""}
	for range 4 {
		for _, s := range short {
			for _, c := range "aAbcx019:." {
				if n := s + string(c); !slices.Contains(short, n) {
					short = append(short, n)
				}
			}
		}
	}
	hex := strings.Repeat("0123456789abcdef", 4)
	short = append(short, "sha256:"+hex, "sha256:"+hex[1:], "sha256:"+hex+"0", "sha256:"+hex[1:]+"A",
		"sha256:"+hex[1:]+"g", "sha256:A"+hex[1:], "sha257:"+hex, "sha256"+hex)
	for _, p := range patterns {
		m, _ := compilePattern(p)
		re := regexp.MustCompile(p)
		for _, s := range short {
			if got, want := m.match(s), re.MatchString(s); got != want || matchIn(m, []byte(s)) != want {
				t.Fatalf("%s on %q: matcher %v (bytes %v), regexp %v", p, s, got, matchIn(m, []byte(s)), want)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.SampledFrom(patterns).Draw(t, "pattern")
		s := rapid.OneOf(
			rapid.StringMatching(`[A-Za-z0-9._:+/ -]{0,8}`),
			rapid.StringMatching(`sha256:[0-9a-fA-F]{62,66}`),
			rapid.StringMatching("sha256:[0-9a-f]{56}[/09:@af`gG]{8}"),
			rapid.StringMatching(`[A-Za-z0-9._:/+-]{0,40}[ -~\x00\x7f\x80-\xff]?[A-Za-z0-9._:/-]{0,24}`),
			rapid.StringMatching(`[abcx]{0,5}\n?`),
			rapid.StringMatching(`[abcx0-9]{0,6}`),
			rapid.String(),
		).Draw(t, "s")
		m, err := compilePattern(p)
		if err != nil {
			t.Fatal(err)
		}
		if m.re != nil {
			t.Fatalf("%s not compiled to the matcher", p)
		}
		re, _ := compilePattern(strings.Replace(p, "^", "^(?:)", 1)) // forces regexp
		if re.re == nil {
			t.Fatal("expected a regexp")
		}
		if got, want := m.match(s), re.re.MatchString(s); got != want || matchIn(m, []byte(s)) != want {
			t.Fatalf("%s on %q: matcher %v (bytes %v), regexp %v", p, s, got, matchIn(m, []byte(s)), want)
		}
	})
}

// TestInWordIsBytewise holds inWord to the class's table, byte by byte:
// for drawn classes of up to four runs, words of bytes in the
// class with any byte at any place, and drawn words.
func TestInWordIsBytewise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a atom
		for _, c := range rapid.SliceOfN(rapid.IntRange(0, 0x7f), 1, 12).Draw(t, "bytes") {
			a.class[c>>6] |= 1 << (c & 63)
		}
		if rapid.Bool().Draw(t, "run") {
			lo := rapid.IntRange(0, 0x7f).Draw(t, "lo")
			for c := lo; c <= min(0x7f, lo+rapid.IntRange(0, 40).Draw(t, "n")); c++ {
				a.class[c>>6] |= 1 << (c & 63)
			}
		}
		if !a.wordRanges() {
			return
		}
		var in []byte
		for c := range 0x80 {
			if a.has(byte(c)) {
				in = append(in, byte(c))
			}
		}
		var w [8]byte
		for i := range w {
			w[i] = rapid.SampledFrom(in).Draw(t, "in")
		}
		if rapid.Bool().Draw(t, "odd") {
			w[rapid.IntRange(0, 7).Draw(t, "at")] = rapid.Byte().Draw(t, "b")
		}
		if rapid.IntRange(0, 4).Draw(t, "drawn") == 0 {
			binary.LittleEndian.PutUint64(w[:], rapid.Uint64().Draw(t, "w"))
		}
		want := true
		for _, c := range w {
			want = want && c < 0x80 && a.has(c)
		}
		if got := inWord(binary.LittleEndian.Uint64(w[:]), &a.ranges); got != want {
			t.Fatalf("%q: inWord %v, the class %v", w, got, want)
		}
		if word64(w[:], 0) != binary.LittleEndian.Uint64(w[:]) || word64(string(w[:]), 0) != binary.LittleEndian.Uint64(w[:]) {
			t.Fatalf("%q: word64 %x", w, word64(w[:], 0))
		}
	})
	// Every byte at every place, in a word of the identifiers' class.
	m, _ := compilePattern(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
	a := &m.atoms[1]
	if !a.words {
		t.Fatal("the identifiers' class is not read by words")
	}
	for at := range 8 {
		for c := range 256 {
			w := []byte("aZ09._:/")
			w[at] = byte(c)
			want := a.in[c]
			if got := inWord(binary.LittleEndian.Uint64(w), &a.ranges); got != want {
				t.Fatalf("%q: inWord %v, the class %v", w, got, want)
			}
		}
	}
}

// TestWordsReadAgrees: matchIn reads the same strings with and without
// reading eight bytes at a time.
func TestWordsReadAgrees(t *testing.T) {
	defer func() { wordsRead = true }()
	patterns := []string{`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`, `^[A-Za-z0-9][A-Za-z0-9._:+/-]*$`, `^[a-c]{2}x*$`, `^x[0-9]{3}$`, `^[a-z]{0,9}[0-9]{3,12}$`}
	rapid.Check(t, func(t *rapid.T) {
		m, _ := compilePattern(rapid.SampledFrom(patterns).Draw(t, "pattern"))
		s := rapid.OneOf(rapid.StringMatching(`[A-Za-z0-9._:/+-]{0,30}[ -~\x00\x80-\xff]?[A-Za-z0-9._:/-]{0,20}`),
			rapid.StringMatching(`[a-cx0-9]{0,30}`), rapid.String()).Draw(t, "s")
		wordsRead = false
		want := matchIn(m, []byte(s))
		wordsRead = true
		if got := matchIn(m, []byte(s)); got != want || m.match(s) != want {
			t.Fatalf("%q: by words %v (string %v), by bytes %v", s, got, m.match(s), want)
		}
	})
}

// TestDigestPatternIsValidDigest: the schema's digest pattern is matched by
// cjson.ValidDigest (TestMatcherMatchesRegexp holds the two to the regular
// expression), and only that pattern is.
func TestDigestPatternIsValidDigest(t *testing.T) {
	for p, digest := range map[string]bool{digestPattern: true, `^sha256:[0-9a-f]{63}$`: false, `^sha256:[0-9a-f]*$`: false} {
		if m, err := compilePattern(p); err != nil || m.digest != digest {
			t.Fatalf("%s: digest %v, want %v (%v)", p, m.digest, digest, err)
		}
	}
	hex := strings.Repeat("0123456789abcdef", 4)
	m, _ := compilePattern(digestPattern)
	b := []byte("sha256:" + hex)
	if n := testing.AllocsPerRun(100, func() { matchIn(m, b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// repoJSON is every JSON value in the repository's .json files that
// flrh-cjson/1 reads (fixtures, goldens, conformance vectors, schemas),
// with every object inside them.
func repoJSON(t testing.TB) []any {
	var out []any
	var collect func(v any)
	collect = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			out = append(out, x)
			for _, k := range slices.Sorted(maps.Keys(x)) {
				collect(x[k])
			}
		case []any:
			for _, e := range x {
				collect(e)
			}
		}
	}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if v, err := cjson.Decode(text); err == nil {
			collect(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wireSeeds are the valid wire objects among values.
func wireSeeds(values []any) []map[string]any {
	var seeds []map[string]any
	for _, v := range values {
		obj := v.(map[string]any)
		if k, ok := obj["kind"].(string); ok && KnownKind(k) && ValidateValue(k, obj) == nil {
			seeds = append(seeds, obj)
		}
	}
	return seeds
}

func TestFastMatchesSchemaOnRepoFixtures(t *testing.T) {
	values := repoJSON(t)
	seeds := wireSeeds(values)
	kinds := map[string]bool{}
	for _, s := range seeds {
		kinds[s["kind"].(string)] = true
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("no valid %s among the repository's fixtures", k)
		}
	}
	for _, v := range values {
		checkSame(t, v)
	}
	for _, dir := range []string{"valid", "invalid"} {
		entries, err := os.ReadDir("testdata/m0/" + dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			checkSameText(t, mustRead(dir, strings.TrimSuffix(e.Name(), ".json")))
		}
	}
}

// mutationPool holds the values mutations put in place: the constants
// and enumerated values of the schema, and values on both sides of every
// bound and pattern it states.
func mutationPool() []any {
	d := "sha256:" + strings.Repeat("a", 64)
	pool := []any{
		nil, true, false, int64(0), int64(-1), int64(1), int64(2), int64(1) << 62,
		int64(-1) << 63, int64(1<<63 - 1),
		"", "a", "x:1", ".a", "-a", "a b", "a+b", "ä", "A\u030a", strings.Repeat("a", 128),
		strings.Repeat("a", 129), strings.Repeat("ä", 128), strings.Repeat("ä", 129),
		d, strings.ToUpper(d), d[:len(d)-1], d + "a", "sha256:" + strings.Repeat("g", 64),
		"2026-08-08T01:00:00Z", "2024-02-29t23:59:60z", "2026-02-29T00:00:00Z",
		"2026-08-08T01:00:00.5+05:30", "2026-08-08 01:00:00Z",
		map[string]any{}, map[string]any{"a": int64(1)}, []any{}, []any{"a"},
		[]any{"a", "a"}, []any{"b", "a"}, []any{d, d}, []any{int64(1)}, []any{nil},
		[]any{map[string]any{}}, map[string]any{"kind": "x"},
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if k == "const" {
					pool = append(pool, x[k])
				}
				if k == "enum" {
					pool = append(pool, x[k].([]any)...)
				}
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	schema, _ := cjson.Decode(Schema())
	walk(schema)
	return pool
}

// memberNames are every member name the schema declares, and a few it
// does not.
func memberNames() []string {
	names := map[string]bool{"x": true, "": true, "é": true, "kind": true}
	fc, _ := newFastCompiler(Schema())
	for _, def := range fc.defs {
		if props, ok := def.(map[string]any)["properties"].(map[string]any); ok {
			for n := range props {
				names[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// mutate changes the object v at a container drawn at random: it drops,
// adds, replaces or duplicates one member or element.
func mutate(t *rapid.T, v map[string]any, pool []any, names []string) {
	// Descend to a random container; set puts a changed array back.
	var cur any = v
	set := func(any) {}
	for {
		type child struct {
			v   any
			set func(any)
		}
		var children []child
		switch x := cur.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				switch x[k].(type) {
				case map[string]any, []any:
					children = append(children, child{x[k], func(n any) { x[k] = n }})
				}
			}
		case []any:
			for i, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					children = append(children, child{e, func(n any) { x[i] = n }})
				}
			}
		}
		if len(children) == 0 || !rapid.Bool().Draw(t, "descend") {
			break
		}
		c := children[rapid.IntRange(0, len(children)-1).Draw(t, "child")]
		cur, set = c.v, c.set
	}
	value := func() any { return deepCopy(rapid.SampledFrom(pool).Draw(t, "value")) }
	switch x := cur.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
		case op == 0 && len(keys) > 0:
			delete(x, rapid.SampledFrom(keys).Draw(t, "drop"))
		case op == 1 && len(keys) > 0:
			x[rapid.SampledFrom(keys).Draw(t, "replace")] = value()
		default:
			x[rapid.SampledFrom(names).Draw(t, "add")] = value()
		}
	case []any:
		switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
		case op == 0 && len(x) > 0:
			x[rapid.IntRange(0, len(x)-1).Draw(t, "replace")] = value()
		case op == 1 && len(x) > 0:
			// Duplicate an element: a set-like array must refuse it.
			set(append(x, deepCopy(x[rapid.IntRange(0, len(x)-1).Draw(t, "dup")])))
		case op == 2 && len(x) > 0:
			set(x[:len(x)-1])
		default:
			set(append(x, value()))
		}
	}
}

func TestFastMatchesSchemaOnMutations(t *testing.T) {
	seeds := wireSeeds(repoJSON(t))
	pool := mutationPool()
	names := memberNames()
	rapid.Check(t, func(t *rapid.T) {
		v := deepCopy(rapid.SampledFrom(seeds).Draw(t, "seed")).(map[string]any)
		for n := rapid.IntRange(1, 3).Draw(t, "mutations"); n > 0; n-- {
			mutate(t, v, pool, names)
		}
		checkSame(t, v)
	})
}

// Values outside the cjson model reach ValidateValue from Go callers; the
// fast check leaves them to the full sequence.
func TestFastRefusesValuesOutsideTheModel(t *testing.T) {
	for _, odd := range []any{3, 1.5, int32(1), []string{"a"}, map[string]string{"a": "b"}} {
		for _, member := range []string{"approval_required", "preconditions", "versions", "logical_time"} {
			v := validEffectIntent()
			v[member] = odd
			for _, k := range schemaKinds {
				if fastAccepts(t, k, v) {
					t.Errorf("fast check accepts %T in %s as %s", odd, member, k)
				}
			}
			if got, want := ValidateValue(KindEffectIntent, v), validateValue(KindEffectIntent, v, 0); !reflect.DeepEqual(got, want) {
				t.Errorf("ValidateValue = %v, want %v", got, want)
			}
		}
	}
}

// Bytes the canonical reader refuses, or reads into a value with a
// duplicate in a set, get the same verdict with and without shortcuts.
func TestValidateTextMatchesReference(t *testing.T) {
	intent := string(mustRead("valid", "effect-intent"))
	deep := strings.Repeat(`{"a":`, 126) + "1" + strings.Repeat("}", 126)
	deeper := strings.Repeat(`{"a":`, 127) + "1" + strings.Repeat("}", 127)
	cases := []string{
		intent,
		strings.Replace(intent, `"kind"`, `"kind": "EffectIntent", "kind"`, 1),
		strings.Replace(intent, `"approval:1"`, `"approval:1", "approval:1"`, 1),
		strings.Replace(intent, `"approval:1"`, `"frontier:7"`, 1),
		strings.Replace(intent, `"approval:1"`, `"approval:1", 1.5`, 1),
		strings.Replace(intent, `"approval:1"`, `"appro\u0076al:1", "approval:1"`, 1),
		strings.Replace(intent, `"goal:1"`, `"A\u030a"`, 1),
		strings.Replace(intent, `"goal:1"`, `"Å"`, 1),
		strings.Replace(intent, "\n", "\r\n\t ", -1),
		"\ufeff" + intent,
		intent + " x",
		`{"kind":"AcceptedEvent","payload":` + deep + `}`,
		`{"kind":"AcceptedEvent","payload":` + deeper + `}`,
		`[]`, `null`, `"EffectIntent"`, `{}`,
		strings.Replace(intent, "{", "{\f", 1),
		strings.Replace(intent, `"goal:1"`, `"goal:1\u0000"`, 1),
		strings.Replace(intent, `"goal:1"`, "\"goal:1\x7f\"", 1),
		strings.Replace(intent, `"goal:1"`, "\"goal:1\x01\"", 1),
		strings.Replace(intent, `"approval_required": true`, `"approval_required": 1`, 1),
		strings.Replace(intent, `"approval_required": true`, `"approval_required": tru`, 1),
		strings.Replace(intent, `"approval_required": true`, `"approval_required": truex`, 1),
		strings.Replace(intent, "]", ",]", 1),
		strings.Replace(intent, "}\n}", "},\n}", 1),
		strings.Replace(intent, "\n}", "\n", 1),
		strings.Replace(intent, `"versions"`, `"versions" `, 1),
		strings.Replace(intent, `"versions": {`, `"versions": {"workflow": "x",`, 1),
	}
	event := func(payload string) string {
		return `{"kind":"AcceptedEvent","event_id":"e:1","payload":` + payload +
			`,"occurred_at":"2026-08-08T01:00:00Z","received_at":"2026-08-08T01:00:00Z","logical_time":1,` +
			`"correlation_id":"run:1","causation_id":null,"idempotency_key":"k:1","versions":` +
			`{"workflow":"w","state_schema":"s","event_schema":"e","graph_schema":"g","rule_set":"r","dataflow":"d",` +
			`"canonicalization":"c","tool":"t","model":"m","oracle":"o","gate":"g","resolver":"r","composition_profile":"c"}}`
	}
	var many []string
	for i := range 40 {
		many = append(many, `"k`+strings.Repeat("x", i)+`":1`)
	}
	for _, p := range []string{
		`{}`, `{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`, `{"a":[1,2,{"c":[]}]}`, `{"a":-0}`,
		`{"a":01}`, `{"a":-1}`, `{"a":123456789012345678}`, `{"a":1234567890123456789}`,
		`{"a":9223372036854775808}`, `{"a":-9223372036854775808}`, `{"a":1.0}`, `{"a":1e3}`, `{"a":"\u00e9"}`,
		`{"a":"é"}`, `{"a":[]}`, `{"a":[,]}`, `{"a":{}}`, `{"a":{,}}`, `{"a" : [ "x" , null , true ] }`,
		"{" + strings.Join(many, ",") + "}", "{" + strings.Join(many[:31], ",") + "}",
		strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70), `[]`, `"x"`, `{"a":1}}`, `{"a":1`,
	} {
		cases = append(cases, event(p))
	}
	for _, c := range cases {
		checkSameText(t, []byte(c))
	}
	for _, p := range []string{`{"a" : [ "x" , null , true ] }`, `{"a":[1,2,{"c":[]}]}`, "{" + strings.Join(many[:32], ",") + "}"} {
		if !acceptsText(KindAcceptedEvent, []byte(event(p))) {
			t.Errorf("text path does not take the event with payload %s", p)
		}
	}
}

func FuzzFastMatchesSchema(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		entries, err := os.ReadDir("testdata/m0/" + dir)
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range entries {
			f.Add(mustRead(dir, strings.TrimSuffix(e.Name(), ".json")))
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		checkSameText(t, text)
		checkTextReaders(t, text)
		if v, err := cjson.Decode(text); err == nil {
			checkSame(t, v)
		}
	})
}

// Several unknown members are reported the same way every time: the first
// in byte order, all of them listed in that order.
func TestUnknownMembersReportedInOrder(t *testing.T) {
	v := validEffectIntent()
	for _, k := range []string{"zeta", "alpha", "mu", "beta", "omega", "gamma"} {
		v[k] = int64(1)
	}
	want := &Error{Kind: KindEffectIntent, Code: CodeUnknownField, Pointer: "/alpha",
		Detail: "additional properties 'alpha', 'beta', 'gamma', 'mu', 'omega', 'zeta' not allowed"}
	for range 20 {
		if err := ValidateValue(KindEffectIntent, v); !reflect.DeepEqual(err, want) {
			t.Fatalf("got %#v, want %#v", err, want)
		}
	}
}

// The text path decides a kind alone only when the kind's schema gives its
// whole verdict; these are the structural conditions of that.
func TestTextKindsNeedOnlyTheSchema(t *testing.T) {
	resolve := func(n *fastNode) *fastNode {
		for n.ref != nil && n.types == 0 {
			n = n.ref
		}
		return n
	}
	for _, k := range textKinds {
		n := compiledFast()[k]
		if n == nil || !n.closed {
			t.Fatalf("%s: no closed fast check", k)
		}
		for _, f := range authorityOwned[k] {
			if _, ok := n.props[f]; ok {
				t.Errorf("%s declares the authority-owned %s", k, f)
			}
		}
		names := setMembers[k]
		if names == nil {
			t.Errorf("%s: set-like paths below the root", k)
		}
		for _, name := range names {
			p, ok := n.props[name]
			if !ok {
				t.Errorf("%s: set-like %s is not declared", k, name)
				continue
			}
			s := resolve(p.node)
			if !s.unique || s.types != tArray || s.items == nil || resolve(s.items).types != tString {
				t.Errorf("%s: set-like %s is not a uniqueItems array of strings", k, name)
			}
		}
	}
	for _, k := range []string{KindStableProposalBatch, KindResolvedCompositionReceipt} {
		if textKind(k) {
			t.Errorf("%s has a cross-field rule the text path does not check", k)
		}
	}
}

// The text path takes the valid wire objects of the repository, so that
// Validate of a stored intent or receipt does not decode it.
func TestTextPathAcceptsValidObjects(t *testing.T) {
	taken := 0
	for _, seed := range wireSeeds(repoJSON(t)) {
		k := seed["kind"].(string)
		text, err := cjson.Encode(seed)
		if err != nil {
			t.Fatal(err)
		}
		ascii := true
		for _, c := range text {
			if c >= 0x7f {
				ascii = false
			}
		}
		if got := acceptsText(k, text); got != (textKind(k) && ascii) {
			t.Errorf("acceptsText(%s) = %v for %s", k, got, text)
		}
		if textKind(k) && ascii {
			taken++
		}
	}
	if taken == 0 {
		t.Fatal("no object took the text path")
	}
	for _, e := range []string{"effect-missing-cause", "high-risk-without-approval", "required-approval-without-binding",
		"unrequired-approval-cannot-carry-binding", "high-risk-receipt-without-approval-binding"} {
		text := mustRead("invalid", e)
		k, _ := KindOf(text)
		if acceptsText(k, text) {
			t.Errorf("text path accepts invalid %s", e)
		}
	}
}

// scalarStringByBytes is scalarText's reading of a string not known to be
// inside the grammar, a byte at a time.
func scalarStringByBytes(src []byte, i int) (textValue, int, bool) {
	for j := i + 1; j < len(src); j++ {
		c := src[j]
		if c == '"' {
			return textValue{t: tString, str: src[i+1 : j]}, j + 1, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return textValue{}, 0, false
		}
	}
	return textValue{}, 0, false
}

// scalarText reads a string eight bytes at a time exactly as a byte at a
// time, over strings of plain bytes with every kind of byte that ends or
// refuses one placed anywhere, including in the last word.
func TestScalarTextStringsByWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		plain := rapid.ByteRange(0x20, 0x7e)
		special := rapid.SampledFrom([]byte{'"', '\\', 0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xff, ' ', '~', '!', '#', '[', ']'})
		body := rapid.SliceOfN(rapid.OneOf(plain, plain, plain, special), 0, 40).Draw(t, "body")
		src := append([]byte{'"'}, body...)
		if rapid.Bool().Draw(t, "closed") {
			src = append(src, '"')
		}
		wantV, wantEnd, wantOK := scalarStringByBytes(src, 0)
		v, end, ok := scalarText(src, 0, false)
		if ok != wantOK || end != wantEnd || string(v.str) != string(wantV.str) || v.t != wantV.t {
			t.Fatalf("%q: %v %d %q, a byte at a time %v %d %q", src, ok, end, v.str, wantOK, wantEnd, wantV.str)
		}
	})
	for b := 0; b < 256; b++ {
		for at := 0; at < 9; at++ {
			body := []byte("abcdefghijklmnop")
			body[at] = byte(b)
			src := append(append([]byte{'"'}, body...), '"')
			_, wantEnd, wantOK := scalarStringByBytes(src, 0)
			if _, end, ok := scalarText(src, 0, false); ok != wantOK || end != wantEnd {
				t.Fatalf("byte %#x at %d: %v %d, a byte at a time %v %d", b, at, ok, end, wantOK, wantEnd)
			}
		}
	}
}

// A node that looks at nothing inside a container, applied where the text
// is known to be inside the grammar, passes over the container when its
// caller reads on after it (here false), and need not when the caller
// applies it at the same place (here true).
func TestKnownContainerPassedOverOnlyWhereReadOn(t *testing.T) {
	for _, text := range []string{`{"a":[1,{"b":"c"}],"d":{}}`, `[{"x":["]"]},"}"]`, `{}`, `[]`} {
		src := []byte(text + `,"tail"`)
		end, ok := anyNode.acceptsTextAt(src, 0, 0, 0, true, false, nil)
		if !ok || end != len(text) {
			t.Errorf("%s: end %d ok %v, want %d true", text, end, ok, len(text))
		}
		if _, ok := anyNode.acceptsTextAt(src, 0, 0, 0, true, true, nil); !ok {
			t.Errorf("%s: refused where the caller does not read on", text)
		}
	}
	// The approval rules' conditions read an intent's members up to the
	// one they test; members written before it, containers among them,
	// are passed over (the text path does not need canonical order).
	v, err := cjson.Decode(mustRead("valid", "effect-intent"))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	var b strings.Builder
	b.WriteByte('{')
	first := []string{"preconditions", "versions"}
	rest := slices.DeleteFunc(slices.Sorted(maps.Keys(m)), func(k string) bool { return slices.Contains(first, k) })
	for i, k := range append(first, rest...) {
		if i > 0 {
			b.WriteByte(',')
		}
		val, err := cjson.Encode(m[k])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%q:%s", k, val)
	}
	b.WriteByte('}')
	if !acceptsText(KindEffectIntent, []byte(b.String())) {
		t.Errorf("text path refuses the valid intent with its containers first: %s", b.String())
	}
	checkSameText(t, []byte(b.String()))
}

// A schema that is only a $ref compiles to its target, so that a member
// declared by reference is read once; a schema with any other keyword
// beside $ref keeps its own node.
func TestOnlyRefCompilesToItsTarget(t *testing.T) {
	n := compiledFast()[KindEffectIntent]
	id := compiledFast()["VersionEnvelope"]
	if n == nil || id == nil {
		t.Fatal("no fast check of EffectIntent or VersionEnvelope")
	}
	if got := n.props["versions"].node; got != id {
		t.Errorf("versions compiles to %p, not the VersionEnvelope node %p", got, id)
	}
	if n.ref == nil || n.ref == n || !n.closed {
		t.Errorf("EffectIntent lost its own keywords beside $ref")
	}
	fc, err := newFastCompiler(Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []map[string]any{
		{"$ref": "#/$defs/id", "maxLength": json.Number("3")},
		{"$ref": "#/$defs/id", "type": "string"},
		{"$ref": "#/$defs/id", "enum": []any{"a"}},
		{"$ref": "#/$defs/id", "allOf": []any{true}},
	} {
		got, err := fc.node(s)
		if err != nil {
			t.Fatal(err)
		}
		if got == got.ref || got.ref == nil || got.onlyRef() {
			t.Errorf("%v compiled to its target alone", s)
		}
	}
	if got, err := fc.node(map[string]any{"$ref": "#/$defs/id", "description": "x"}); err != nil || got.ref != nil || got.pattern == nil {
		t.Errorf("a $ref with an annotation does not compile to its target: %+v %v", got, err)
	}
}

// Every proper prefix of every valid fixture, checked as every kind the
// text path reads, is refused with a typed error and never panics: text cut
// short inside an array, an object, a string or a number must not be read
// past its end.
func TestCutTextRefused(t *testing.T) {
	entries, err := os.ReadDir("testdata/m0/valid")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		text := bytes.TrimSpace(mustRead("valid", strings.TrimSuffix(e.Name(), ".json")))
		for _, kind := range textKinds {
			for n := range len(text) {
				err := Validate(kind, text[:n])
				var pe *Error
				var ce *cjson.Error
				if !errors.As(err, &pe) && !errors.As(err, &ce) {
					t.Fatalf("%s cut to %d bytes as %s: %v (%T), want an *Error or a *cjson.Error", e.Name(), n, kind, err, err)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no fixture was cut")
	}
}
