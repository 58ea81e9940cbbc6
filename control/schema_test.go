package control

import (
	"bytes"
	"sort"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

func compileSchema(t testing.TB, text []byte, url string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func schemaAccepts(s *jsonschema.Schema, text []byte) bool {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return false
	}
	return s.Validate(doc) == nil
}

func TestEmbeddedFilesMatchTheirSchemas(t *testing.T) {
	ts := compileSchema(t, TableSchema(), "https://flrh.dev/schema/control-fsm.v1.schema.json")
	cs := compileSchema(t, ContractSchema(), "https://flrh.dev/schema/loop-contract.v1.schema.json")
	if !schemaAccepts(ts, defaultTable) {
		t.Error("embedded table fails its schema")
	}
	if !schemaAccepts(cs, defaultContract) {
		t.Error("embedded contract fails its schema")
	}
}

// paths lists the JSON pointers of every value in v, sorted.
func paths(v any, ptr string, out *[]string) {
	*out = append(*out, ptr)
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			paths(c, child(ptr, k), out)
		}
	case []any:
		for i, c := range x {
			paths(c, index(ptr, i), out)
		}
	}
}

// mutateAt replaces (or, with del, removes) the value at ptr.
func mutateAt(v any, tokens []string, repl any, del bool) any {
	if len(tokens) == 0 {
		return repl
	}
	switch x := v.(type) {
	case map[string]any:
		k := tokens[0]
		if len(tokens) == 1 && del {
			delete(x, k)
			return x
		}
		x[k] = mutateAt(x[k], tokens[1:], repl, del)
	case []any:
		i := 0
		for _, c := range tokens[0] {
			i = i*10 + int(c-'0')
		}
		if len(tokens) == 1 && del {
			return append(x[:i:i], x[i+1:]...)
		}
		x[i] = mutateAt(x[i], tokens[1:], repl, del)
	}
	return v
}

// TestPropertySchemaImpliesLoader: whatever the schema refuses, the loader
// refuses too (the loader checks strictly more). Random single mutations of
// the embedded table and contract: delete a member or element, or replace a
// value with an integer, a string, a boolean or an empty array.
func TestPropertySchemaImpliesLoader(t *testing.T) {
	ts := compileSchema(t, TableSchema(), "https://flrh.dev/schema/control-fsm.v1.schema.json")
	cs := compileSchema(t, ContractSchema(), "https://flrh.dev/schema/loop-contract.v1.schema.json")
	for _, target := range []struct {
		name   string
		text   []byte
		schema *jsonschema.Schema
		load   func([]byte) error
	}{
		{"table", defaultTable, ts, func(b []byte) error { _, err := Load(b); return err }},
		{"contract", defaultContract, cs, func(b []byte) error { _, err := LoadContract(b, Default()); return err }},
	} {
		t.Run(target.name, func(t *testing.T) {
			base, err := cjson.Decode(target.text)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			paths(base, "", &all)
			sort.Strings(all)
			all = all[1:] // not the root
			rapid.Check(t, func(rt *rapid.T) {
				v, _ := cjson.Decode(target.text)
				p := rapid.SampledFrom(all).Draw(rt, "pointer")
				tokens := splitPointer(p)
				kind := rapid.IntRange(0, 4).Draw(rt, "mutation")
				repl := []any{nil, int64(7), "X", true, []any{}}[kind]
				v = mutateAt(v, tokens, repl, kind == 0)
				text, err := cjson.Encode(v)
				if err != nil {
					rt.Skip("mutation has no canonical form")
				}
				if !schemaAccepts(target.schema, text) && target.load(text) == nil {
					rt.Fatalf("schema refuses but loader accepts a mutation at %s", p)
				}
			})
		})
	}
}

func splitPointer(p string) []string {
	var out []string
	for _, tok := range bytes.Split([]byte(p)[1:], []byte("/")) {
		out = append(out, string(bytes.ReplaceAll(bytes.ReplaceAll(tok, []byte("~1"), []byte("/")), []byte("~0"), []byte("~"))))
	}
	return out
}
