package yamljson_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/yamljson"
)

func TestConvert(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"block mapping with comments", "# a refund workflow\nid: refund   # its id\nversion: '1'\n", `{"id":"refund","version":"1"}`},
		{"nested", "a:\n  b: [1, -2, 0x10, 0o17]\n  c:\n    - x\n    - {d: true}\n", `{"a":{"b":[1,-2,16,15],"c":["x",{"d":true}]}}`},
		{"yes and no stay strings", "a: yes\nb: no\nc: on\nd: off\ne: y\n", `{"a":"yes","b":"no","c":"on","d":"off","e":"y"}`},
		{"booleans and null", "a: true\nb: False\nc: null\nd: ~\ne:\n", `{"a":true,"b":false,"c":null,"d":null,"e":null}`},
		{"quoted scalars are strings", "a: '12'\nb: \"true\"\nc: 'null'\nd: \"1.5\"\n", `{"a":"12","b":"true","c":"null","d":"1.5"}`},
		{"a date is its text", "at: 2026-12-05\n", `{"at":"2026-12-05"}`},
		{"block scalars", "a: |\n  line one\n  line two\nb: >\n  folded\n  text\n", `{"a":"line one\nline two\n","b":"folded text\n"}`},
		{"the largest integers", "a: 9223372036854775807\nb: -9223372036854775808\n", `{"a":9223372036854775807,"b":-9223372036854775808}`},
		{"explicit core tags", "a: !!str 12\nb: !!int '7'\n", `{"a":"12","b":7}`},
		{"keys sorted, unicode values kept", "z: 1\ny: \"é\"\na: 日本\n", `{"a":"日本","y":"é","z":1}`},
		{"a top-level sequence", "- 1\n- two\n", `[1,"two"]`},
		{"a scalar document", "42\n", `42`},
		{"JSON is YAML", `{"b": [1, {"c": null}], "a": "x"}`, `{"a":"x","b":[1,{"c":null}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := yamljson.Convert([]byte(c.src))
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			if string(got) != c.want {
				t.Fatalf("Convert = %s, want %s", got, c.want)
			}
		})
	}
}

func TestConvertRefuses(t *testing.T) {
	for _, c := range []struct {
		name, src    string
		line, column int
		ptr, detail  string
	}{
		{"empty", "", 1, 0, "", "empty"},
		{"comments only", "# nothing\n", 1, 0, "", "empty"},
		{"two documents", "a: 1\n---\nb: 2\n", 2, 1, "", "a second document"},
		{"a key twice", "a: 1\nb: 2\na: 3\n", 3, 1, "", `key "a" is written twice`},
		{"a key twice, nested", "x:\n  - a: 1\n    a: 2\n", 3, 5, "/x/0", `key "a" is written twice`},
		{"a float", "a:\n  b: 1.5\n", 2, 6, "/a/b", "floating-point"},
		{"an exponent", "a: 1e3\n", 1, 4, "/a", "floating-point"},
		{"NaN", "a: .nan\n", 1, 4, "/a", "floating-point"},
		{"infinity", "a: -.inf\n", 1, 4, "/a", "floating-point"},
		{"an alias", "a: &x {b: 1}\nc: *x\n", 2, 4, "/c", "alias"},
		{"a merge key", "a: &x {b: 1}\nc:\n  <<: *x\n", 3, 3, "/c", "merge key"},
		{"an integer key", "1: one\n", 1, 1, "", "key 1 is a int"},
		{"a null key", "~: nothing\n", 1, 1, "", "not a string"},
		{"a complex key", "? [a, b]\n: c\n", 1, 3, "", "complex key"},
		{"binary", "a: !!binary aGk=\n", 1, 4, "/a", "tag !!binary"},
		{"a custom tag", "a: !money 12\n", 1, 4, "/a", "tag !money"},
		{"a custom mapping tag", "a: !thing {b: 1}\n", 1, 4, "/a", "tag !thing"},
		{"too large", "a: 9223372036854775808\n", 1, 4, "/a", "not a signed 64-bit integer"},
		{"not NFC", "a: \"e\u0301\"\n", 1, 4, "/a", "NFC"},
		{"a syntax error", "a: [1, 2\nb: 3\n", 0, 0, "", "did not find expected"},
		{"a tab indent", "a:\n\tb: 1\n", 2, 0, "", "cannot start any token"},
		{"a key not ASCII", "a: 1\n\"é\": 2\n", 2, 6, "/é", "ASCII"},
		{"too deep", strings.Repeat("[", cjson.MaxDepth+2) + strings.Repeat("]", cjson.MaxDepth+2), 1, cjson.MaxDepth + 2, "", "nest more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, pos, err := yamljson.Convert([]byte(c.src))
			var e *yamljson.Error
			if !errors.As(err, &e) {
				t.Fatalf("Convert = %s, %v, %v; want an *Error", out, pos, err)
			}
			if out != nil || pos != nil {
				t.Fatalf("a refusal returned %s, %v", out, pos)
			}
			if (c.line != 0 && e.Line != c.line) || e.Column != c.column && c.line != 0 || !strings.Contains(e.Detail, c.detail) {
				t.Fatalf("Convert: %v (line %d, column %d); want line %d, column %d, %q", err, e.Line, e.Column, c.line, c.column, c.detail)
			}
			if !strings.HasPrefix(e.Pointer, c.ptr) {
				t.Fatalf("Convert: %v; want pointer %q", err, c.ptr)
			}
		})
	}
}

func TestConvertFloats(t *testing.T) {
	got, _, err := yamljson.ConvertFloats([]byte("b: [0.25, 1e-3, 2]\na: {c: 'x'}\n"))
	if err != nil || string(got) != `{"a":{"c":"x"},"b":[0.25,0.001,2]}` {
		t.Fatalf("ConvertFloats = %s, %v", got, err)
	}
	for _, src := range []string{"a: .nan\n", "a: -.inf\n", "a: &x 1\nb: *x\n", "a: 1\na: 2\n"} {
		var e *yamljson.Error
		if _, _, err := yamljson.ConvertFloats([]byte(src)); !errors.As(err, &e) || e.Line == 0 {
			t.Errorf("ConvertFloats(%q): %v", src, err)
		}
	}
}

func TestPositions(t *testing.T) {
	src := "id: refund\napproval:\n  ttl: 10\n  approver: finance-lead\nsteps:\n  - one\n  - two\n"
	_, pos, err := yamljson.Convert([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, want := range map[string]yamljson.Pos{
		"":                  {1, 1},
		"/":                 {1, 1},
		"/id":               {1, 5},
		"/approval":         {3, 3},
		"/approval/ttl":     {3, 8},
		"/approval/missing": {3, 3}, // its nearest ancestor
		"/steps/1":          {7, 5},
		"/nothing/at/all":   {1, 1},
	} {
		if got, ok := pos.At(ptr); !ok || got != want {
			t.Errorf("At(%q) = %v, %v; want %v", ptr, got, ok, want)
		}
	}
}

// genValue draws a value of cjson's model: objects, arrays, strings
// (among them ones YAML would read as something else unquoted), integers,
// booleans and null.
func genValue(t *rapid.T, depth int) any {
	kinds := 6
	if depth > 3 {
		kinds = 4
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
	case 0:
		return rapid.OneOf(
			rapid.SampledFrom([]string{"", "yes", "no", "on", "null", "~", "true", "1.5", "0x10", "1e3", ".nan", "2026-12-05", "- a", "a: b", "#c", "'q'", "\"d\"", "\n", " lead", "trail ", "é", "日本", "<<", "*x", "&y", "!t", "|", ">"}),
			rapid.StringMatching(`[ -~]{0,12}`),
		).Draw(t, "string")
	case 1:
		return rapid.Int64().Draw(t, "int")
	case 2:
		return rapid.Bool().Draw(t, "bool")
	case 3:
		return nil
	case 4:
		n := rapid.IntRange(0, 4).Draw(t, "len")
		s := make([]any, n)
		for i := range s {
			s[i] = genValue(t, depth+1)
		}
		return s
	}
	n := rapid.IntRange(0, 4).Draw(t, "members")
	m := map[string]any{}
	for range n {
		k := rapid.OneOf(rapid.StringMatching(`[a-z_]{1,8}`), rapid.SampledFrom([]string{"yes", "null", "1", "a b", "x:y", "#", "<<<", "~"})).Draw(t, "key")
		m[k] = genValue(t, depth+1)
	}
	return m
}

// Any value, written as canonical JSON (which is YAML), by a YAML encoder
// in block style, or by FromJSON, converts to its canonical JSON bytes:
// the oracle is cjson.Encode.
func TestConvertAgreesWithCJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		want, err := cjson.Encode(v)
		if err != nil {
			t.Fatalf("cjson.Encode: %v", err)
		}
		block, err := yaml.Marshal(v)
		if err != nil {
			t.Fatalf("yaml.Marshal: %v", err)
		}
		fromJSON, err := yamljson.FromJSON(want, "", nil)
		if err != nil {
			t.Fatalf("FromJSON(%s): %v", want, err)
		}
		for name, src := range map[string][]byte{"json": want, "block": block, "FromJSON": fromJSON} {
			got, _, err := yamljson.Convert(src)
			if err != nil {
				t.Fatalf("%s %q: %v", name, src, err)
			}
			if string(got) != string(want) {
				t.Fatalf("%s %q converts to %s, want %s", name, src, got, want)
			}
		}
	})
}

// Convert never panics, and what it returns is canonical JSON.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{"---", "\r0", "a:", "a: 1\n", "- [x, {y: z}]\n", "a: &x 1\nb: *x\n", "? a\n: b\n", "a: !!binary aGk=\n", "{\"a\": [1, null]}", "a: |\n  x\n", "---\na: 1\n---\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := strings.Count(string(src), "\n") + strings.Count(string(src), "\r") - strings.Count(string(src), "\r\n") + 1
		out, pos, err := yamljson.Convert(src)
		if err != nil {
			var e *yamljson.Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: %T %v is not an *Error", src, err, err)
			}
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("%q: %v names line %d of %d", src, err, e.Line, lines)
			}
			return
		}
		for ptr, p := range pos {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("%q: the value at %q is placed on line %d of %d", src, ptr, p.Line, lines)
			}
		}
		v, err := cjson.Decode(out)
		if err != nil {
			t.Fatalf("%q converts to %s, which cjson refuses: %v", src, out, err)
		}
		again, err := cjson.Encode(v)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%q converts to %s, not canonical (%s, %v)", src, out, again, err)
		}
		if _, ok := pos.At(""); !ok {
			t.Fatalf("%q: no position of the document", src)
		}
	})
}

func ExampleConvert() {
	out, _, err := yamljson.Convert([]byte("# a comment\nversion: '1'\namounts: [5, 9]\n"))
	fmt.Println(string(out), err)
	_, _, err = yamljson.Convert([]byte("a: 1\nb:\n  c: 2.5\n"))
	fmt.Println(err)
	// Output:
	// {"amounts":[5,9],"version":"1"} <nil>
	// yaml: line 3, column 6 (/b/c): 2.5 is a floating-point number; flrh takes integers only (use a scaled integer, or quote it for a string)
}

// BenchmarkConvert reads the refund-agent example's manifest written in
// YAML (block style, as yaml.Marshal writes it): what loading a bundle
// written in YAML adds, per file, to loading it in JSON.
func BenchmarkConvert(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "refund-agent", "workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := cjson.Decode(src)
	if err != nil {
		b.Fatal(err)
	}
	y, err := yaml.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("yaml", func(b *testing.B) {
		b.SetBytes(int64(len(y)))
		for b.Loop() {
			if _, _, err := yamljson.Convert(y); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same value read from its JSON, as a bundle written in JSON is.
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := cjson.Decode(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestFromJSON(t *testing.T) {
	src := []byte(`{"version": "1", "id": "refund-agent", "flags": ["yes", "no", "2026-12-05", "1.5", "null", ""], "ttl": 10, "on": true, "nested": {"b": [], "a": {}}, "text": "two\nlines"}`)
	y, err := yamljson.FromJSON(src, "a comment", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "# a comment\nversion: \"1\"\nid: refund-agent\nflags:\n  - \"yes\"\n"
	if !strings.HasPrefix(string(y), "# a comment\nversion: \"1\"\nid: refund-agent\nflags:\n") {
		t.Fatalf("FromJSON does not keep the members' order in block style:\n%s\nwant a start like\n%s", y, want)
	}
	back, _, err := yamljson.Convert(y)
	if err != nil {
		t.Fatalf("Convert(FromJSON): %v\n%s", err, y)
	}
	v, err := cjson.Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := cjson.Encode(v)
	if err != nil || string(back) != string(canon) {
		t.Fatalf("Convert(FromJSON) = %s, want %s (%v)\n%s", back, canon, err, y)
	}
	if _, err := yamljson.FromJSON([]byte(`{"a": 1`), "", nil); err == nil {
		t.Fatal("FromJSON took text that is not JSON")
	}
	// Strings replaced by pointer; a pointer that names no string is refused.
	y, err = yamljson.FromJSON([]byte(`{"domain": "domain.json", "n": 1, "c": {"model": "m.json"}, "s": ["domain.json"]}`), "", map[string]string{"/domain": "domain.yaml", "/c/model": "m.yaml"})
	if back, _, cerr := yamljson.Convert(y); err != nil || cerr != nil || string(back) != `{"c":{"model":"m.yaml"},"domain":"domain.yaml","n":1,"s":["domain.json"]}` {
		t.Fatalf("FromJSON with replacements: %s, %v, %v", back, err, cerr)
	}
	for _, ptr := range []string{"/n", "/absent", "/c"} {
		if _, err := yamljson.FromJSON([]byte(`{"n": 1, "c": {}}`), "", map[string]string{ptr: "x"}); err == nil {
			t.Fatalf("FromJSON replaced %s, which is no string", ptr)
		}
	}
}
