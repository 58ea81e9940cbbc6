package workflow

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// edit returns a copy of the refund bundle with its workflow.json changed
// by f (on the decoded document) and other files replaced or removed.
func editBundle(t testing.TB, f func(m map[string]any), files map[string]string, drop ...string) map[string][]byte {
	t.Helper()
	b := maps.Clone(readBundle(t, "../examples/refund-agent"))
	if f != nil {
		v, err := cjson.Decode(b[ManifestFile])
		if err != nil {
			t.Fatal(err)
		}
		f(v.(map[string]any))
		out, err := cjson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b[ManifestFile] = out
	}
	for k, v := range files {
		b[k] = []byte(v)
	}
	for _, k := range drop {
		delete(b, k)
	}
	return b
}

func TestCompileExamples(t *testing.T) {
	for _, name := range []string{"refund-agent", "ops-agent"} {
		w := compileExample(t, name)
		if w.ID() != name || w.Version() != "1" || !cjson.ValidDigest(w.Digest()) {
			t.Errorf("%s: %s %s %s", name, w.ID(), w.Version(), w.Digest())
		}
		// The digest binds content: the same files give the same digest,
		// a changed rule file another.
		files := readBundle(t, "../examples/"+name)
		again, _ := Compile(files)
		files["rules.dl"] = append(files["rules.dl"], []byte("\n// changed\n")...)
		changed, err := Compile(files)
		if err != nil {
			t.Fatal(err)
		}
		if again.Digest() != w.Digest() || changed.Digest() == w.Digest() {
			t.Errorf("%s: digest does not bind the bundle's content", name)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	del := func(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }
	sub := func(k, kk string, v any) func(map[string]any) {
		return func(m map[string]any) { m[k].(map[string]any)[kk] = v }
	}
	cases := []struct {
		name          string
		edit          func(map[string]any)
		files         map[string]string
		drop          []string
		code, file    string
		pointer, text string
	}{
		{"no manifest", nil, nil, []string{ManifestFile}, CodeMissingFile, ManifestFile, "", ""},
		{"manifest not JSON", nil, map[string]string{ManifestFile: `{"id":`}, nil, CodeMalformed, ManifestFile, "", "not flrh-cjson"},
		{"manifest not an object", nil, map[string]string{ManifestFile: `[]`}, nil, CodeMalformed, ManifestFile, "/", ""},
		{"unknown member", set("extra", 1), nil, nil, CodeMalformed, ManifestFile, "/extra", "unknown member"},
		{"missing member", del("gates"), nil, nil, CodeMalformed, ManifestFile, "/gates", "missing"},
		{"schema version", set("schema_version", "flrh-workflow/9"), nil, nil, CodeMalformed, ManifestFile, "/schema_version", ""},
		{"bad id", set("id", "not an id"), nil, nil, CodeMalformed, ManifestFile, "/id", ""},
		{"envelope label", sub("versions", "model", ""), nil, nil, CodeMalformed, ManifestFile, "/versions/model", ""},
		{"envelope canonicalization", sub("versions", "canonicalization", "json/1"), nil, nil, CodeVersionMismatch, ManifestFile, "/versions/canonicalization", ""},
		{"envelope disagrees with domain", sub("versions", "workflow", "refund-agent/2"), nil, nil, CodeVersionMismatch, "domain.json", "/workflow", ""},
		{"missing domain file", nil, nil, []string{"domain.json"}, CodeMissingFile, "domain.json", "", "/domain"},
		{"path escapes bundle", set("domain", "../domain.json"), nil, nil, CodeMalformed, ManifestFile, "/domain", "plain relative path"},
		{"bad domain", nil, map[string]string{"domain.json": `{"schema_version":"flrh-domain/1"}`}, nil, CodeBadDomain, "domain.json", "/workflow", ""},
		{"rules syntax", nil, map[string]string{"rules.dl": ".decl p(x: symbol)\np(x :- q(x).\n"}, nil, CodeBadRules, "rules.dl", "2:", ""},
		{"fact relation undeclared", sub("facts", "nope", []any{"a"}), nil, nil, CodeBadBinding, ManifestFile, "/facts/nope", "not declared"},
		{"fact relation not input", sub("facts", "requested", []any{"refund"}), nil, nil, CodeBadBinding, ManifestFile, "/facts/requested", ".input"},
		{"fact arity", sub("facts", "refund_requested", []any{"refund"}), nil, nil, CodeBadBinding, ManifestFile, "/facts/refund_requested", "columns"},
		{"fact column repeated", sub("facts", "refund_settled", []any{"a", "a"}), nil, nil, CodeMalformed, ManifestFile, "/facts/refund_settled/1", ""},
		{"eligibility relation", sub("eligibility", "x:y", map[string]any{"relation": "nope", "args": []any{}}), nil, nil, CodeBadBinding, ManifestFile, "/eligibility/x:y/relation", ""},
		{"eligibility arity", sub("eligibility", "x:y", map[string]any{"relation": "requested", "args": []any{}}), nil, nil, CodeBadBinding, ManifestFile, "/eligibility/x:y/args", ""},
		{"eligibility type", sub("eligibility", "x:y", map[string]any{"relation": "requested", "args": []any{int64(3)}}), nil, nil, CodeBadBinding, ManifestFile, "/eligibility/x:y/args/0", "symbol"},
		{"eligibility reference", sub("eligibility", "x:y", map[string]any{"relation": "requested", "args": []any{"$payload.x"}}), nil, nil, CodeMalformed, ManifestFile, "/eligibility/x:y/args/0", "$action"},
		{"eligibility polarity", sub("eligibility", "x:y", map[string]any{"relation": "requested", "args": []any{"a"}, "polarity": "maybe"}), nil, nil, CodeMalformed, ManifestFile, "/eligibility/x:y/polarity", ""},
		{"complete_when undeclared", set("complete_when", `nope("x")`), nil, nil, CodeBadBinding, ManifestFile, "/complete_when", ""},
		{"fail_when negative", set("fail_when", `-failed("refund")`), nil, nil, CodeBadBinding, ManifestFile, "/fail_when", "positive"},
		{"gates do not compile", nil, map[string]string{"gates.dl": `decision("G2", "ALLOW") :- ticket(t).`}, nil, CodeBadGates, "gates.dl", "", ""},
		{"no tools", set("tools", []any{}), nil, nil, CodeMalformed, ManifestFile, "/tools", ""},
		{"tool member", set("tools", []any{map[string]any{"effect_type": "refund.pay", "side_effects": []any{"WRITE"}, "colour": "red"}}), nil, nil, CodeMalformed, ManifestFile, "/tools/0", "unknown field"},
		{"NONE not alone", set("tools", []any{map[string]any{"effect_type": "refund.pay", "side_effects": []any{"NONE", "WRITE"}}}), nil, nil, CodeMalformed, ManifestFile, "/tools/0/side_effects", ""},
		{"operator key", set("operator_key", "abcd"), nil, nil, CodeMalformed, ManifestFile, "/operator_key", "Ed25519"},
		{"wrong operator key", set("operator_key", strings.Repeat("ab", 32)), nil, nil, CodeBadCapability, "capabilities.json", "/chains/0", ""},
		{"capabilities shape", nil, map[string]string{"capabilities.json": `{"chains":[[]]}`}, nil, CodeMalformed, "capabilities.json", "/chains/0", ""},
		{"tampered capability", nil, nil, nil, CodeBadCapability, "capabilities.json", "/chains/0", ""},
		{"approval ttl", sub("approval", "ttl", int64(0)), nil, nil, CodeMalformed, ManifestFile, "/approval/ttl", ""},
		{"approval member", sub("approval", "who", "x"), nil, nil, CodeMalformed, ManifestFile, "/approval", "unknown field"},
		{"approver group empty", sub("approval", "members", []any{}), nil, nil, CodeMalformed, ManifestFile, "/approval/members", "from 1 to 100 people"},
		{"approver group member not an id", sub("approval", "members", []any{"alice", "not an id"}), nil, nil, CodeMalformed, ManifestFile, "/approval/members/1", "not an id"},
		{"approver group member twice", sub("approval", "members", []any{"alice", "bob", "alice"}), nil, nil, CodeMalformed, ManifestFile, "/approval/members/2", "listed twice"},
		{"approver group names itself", sub("approval", "members", []any{"alice", "finance-lead"}), nil, nil, CodeMalformed, ManifestFile, "/approval/members/1", "the group's own name"},
		{"approver group too large", sub("approval", "members", func() []any {
			var ms []any
			for i := range 101 {
				ms = append(ms, "person-"+string(rune('a'+i/26))+string(rune('a'+i%26)))
			}
			return ms
		}()), nil, nil, CodeMalformed, ManifestFile, "/approval/members", "from 1 to 100 people"},
		{"quorum of one person", sub("approval", "quorum", int64(2)), nil, nil, CodeMalformed, ManifestFile, "/approval/quorum", `2 people's approvals need members: approver "finance-lead" is one person`},
		{"quorum past the group", func(m map[string]any) {
			m["approval"].(map[string]any)["members"] = []any{"alice", "bob"}
			m["approval"].(map[string]any)["quorum"] = int64(3)
		}, nil, nil, CodeMalformed, ManifestFile, "/approval/quorum", `3 people's approvals, but "finance-lead" has 2 members`},
		{"negative quorum", func(m map[string]any) {
			m["approval"].(map[string]any)["members"] = []any{"alice", "bob"}
			m["approval"].(map[string]any)["quorum"] = int64(-1)
		}, nil, nil, CodeMalformed, ManifestFile, "/approval/quorum", "from 1 to the number of members"},
		{"separate duties not a boolean", sub("approval", "separate_duties", "yes"), nil, nil, CodeMalformed, ManifestFile, "/approval", ""},
		{"approver group not a list", sub("approval", "members", "alice"), nil, nil, CodeMalformed, ManifestFile, "/approval", ""},
		{"adapter for unknown effect", sub("adapters", "mail.send", map[string]any{"kind": "http", "url_env": "X"}), nil, nil, CodeBadBinding, ManifestFile, "/adapters/mail.send", ""},
		{"adapter kind", sub("adapters", "refund.pay", map[string]any{"kind": "smtp", "url_env": "X"}), nil, nil, CodeMalformed, ManifestFile, "/adapters/refund.pay/kind", ""},
		{"tool without adapter", set("adapters", map[string]any{}), nil, nil, CodeBadBinding, ManifestFile, "/adapters", "no adapter"},
		{"receipt members", nil, map[string]string{"domain.json": strings.Replace(string(readBundle(t, "../examples/refund-agent")["domain.json"]),
			`"payload": {"proposal_id": "id", "outcome": "string"}`, `"payload": {"proposal_id": "id", "outcome": "string", "secret": "string"}`, 1)}, nil,
			CodeBadDomain, "domain.json", "/events/flrh.receipt~11/payload/secret", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := editBundle(t, c.edit, c.files, c.drop...)
			if c.name == "tampered capability" {
				files["capabilities.json"] = []byte(strings.Replace(string(files["capabilities.json"]), `"amount":10000`, `"amount":99999`, 1))
			}
			w, err := Compile(files)
			if w != nil {
				t.Fatal("a bad bundle compiled")
			}
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a *workflow.Error", err)
			}
			if be.Code != c.code || be.File != c.file || !strings.HasPrefix(be.Pointer, c.pointer) || !strings.Contains(be.Error(), c.text) {
				t.Fatalf("got %s %s %q: %v\nwant %s %s %q %q", be.Code, be.File, be.Pointer, be, c.code, c.file, c.pointer, c.text)
			}
		})
	}
}
