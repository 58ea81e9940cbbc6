package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/workflow"
	"flrh.dev/flrh/yamljson"
)

// yamlExample is the example bundle name written in YAML (WriteYAML).
func yamlExample(tb testing.TB, name string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "yaml")
	if _, err := WriteYAML(filepath.Join("..", "examples", name), dst); err != nil {
		tb.Fatal(err)
	}
	return dst
}

// prevLink is a control record's link to the record before it.
var prevLink = regexp.MustCompile(`"prev":"sha256:[0-9a-f]{64}"`)

// An example bundle written in YAML is the same workflow as in JSON: the
// same versions and tools, and runs that decide alike, event for event,
// under a digest of its own (the digest binds the files as written).
func TestYAMLBundleDecidesAsItsJSON(t *testing.T) {
	for _, c := range []struct {
		example string
		inputs  []string
	}{
		{"refund-agent", []string{refund("r-1", 40, "alice", "damaged item"), refund("r-2", 900, "bob", "cancelled order")}},
		{"ops-agent", []string{ops("diagnostics.requested/1", "chk-1", "api", "probe", "health"), ops("restart.requested/1", "rst-1", "api", "reason", "memory leak")}},
		{"support-agent", nil},
	} {
		t.Run(c.example, func(t *testing.T) {
			jw, ja, err := Load(filepath.Join("..", "examples", c.example))
			if err != nil {
				t.Fatal(err)
			}
			dir := yamlExample(t, c.example)
			if !IsDir(dir) {
				t.Fatal("a directory with workflow.yaml is not a bundle")
			}
			yw, ya, err := Load(dir)
			if err != nil {
				t.Fatalf("the YAML bundle: %v", err)
			}
			if yw.ID() != jw.ID() || yw.Version() != jw.Version() || yw.Versions() != jw.Versions() {
				t.Fatalf("the YAML bundle is %s %s %+v, the JSON one %s %s %+v", yw.ID(), yw.Version(), yw.Versions(), jw.ID(), jw.Version(), jw.Versions())
			}
			if yw.Digest() == jw.Digest() {
				t.Fatal("the YAML bundle has the JSON bundle's digest")
			}
			if len(ya.Specs()) != len(ja.Specs()) || len(yw.Manifests()) != len(jw.Manifests()) {
				t.Fatalf("adapters %d vs %d, tools %d vs %d", len(ya.Specs()), len(ja.Specs()), len(yw.Manifests()), len(jw.Manifests()))
			}
			// One clock for both: a receipt carries the second it was
			// made in, and the two runs may fall on either side of one.
			at := time.Now().UTC().Truncate(time.Second)
			clock := func(c *runner.Config) { c.Clock = func() time.Time { return at } }
			hj, hy := newHarnessWith(t, jw, ja, clock), newHarnessWith(t, yw, ya, clock)
			for i, in := range c.inputs {
				id := c.example + "-" + string(rune('a'+i))
				hj.start(id, in)
				hy.start(id, in)
				sj, sy := hj.status(id), hy.status(id)
				if sj.State != sy.State || len(sj.Waiting) != len(sy.Waiting) {
					t.Fatalf("run %s: JSON %s waiting %d, YAML %s waiting %d", id, sj.State, len(sj.Waiting), sy.State, len(sy.Waiting))
				}
				ej, err := hj.st.Events(hj.ctx, id, 0)
				if err != nil {
					t.Fatal(err)
				}
				ey, err := hy.st.Events(hy.ctx, id, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(ej) != len(ey) || len(ej) == 0 {
					t.Fatalf("run %s: %d events in JSON, %d in YAML", id, len(ej), len(ey))
				}
				for k := range ej {
					// The workflow's digest, and so each record's link to
					// the one before it, are the YAML bundle's own.
					want := prevLink.ReplaceAllString(strings.ReplaceAll(string(ej[k].Body), jw.Digest(), yw.Digest()), "")
					if ej[k].Kind != ey[k].Kind || prevLink.ReplaceAllString(string(ey[k].Body), "") != want {
						t.Fatalf("run %s, event %d differs:\nJSON %s\nYAML %s", id, k, ej[k].Body, ey[k].Body)
					}
				}
				hy.checkRecord(id)
			}
		})
	}
}

// A bundle's YAML files are refused where they are wrong, by line and
// column: the YAML itself, and what the manifest's checks find in it.
func TestYAMLBundleErrors(t *testing.T) {
	for _, c := range []struct {
		name, file, find, replace string
		code                      string
		detail                    string
		// at is what the line the error names holds ("" for a syntax
		// error: the parser names where the construct it could not finish
		// began).
		at string
	}{
		{"a float in the manifest", "workflow.yaml", "ttl: ", "ttl: 1.5 #", workflow.CodeMalformed, "floating-point", "ttl: 1.5"},
		{"a key twice", "workflow.yaml", "\nid: ", "\nid: again\nid: ", workflow.CodeMalformed, "written twice", "id: refund-agent"},
		{"an alias", "workflow.yaml", "\nid: ", "\nid: &a refund-agent\nother: *a\nxid: ", workflow.CodeMalformed, "alias", "other: *a"},
		{"a member the manifest does not know", "workflow.yaml", "\nid: ", "\nsurprise: 1\nid: ", workflow.CodeMalformed, "unknown member", "surprise: 1"},
		{"a bad approval ttl", "workflow.yaml", "ttl: ", "ttl: -5 #", workflow.CodeMalformed, "2^40", "ttl: -5"},
		{"a syntax error in the domain", "domain.yaml", "\n", "\n: : [\n", workflow.CodeMalformed, "not YAML", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := yamlExample(t, "refund-agent")
			p := filepath.Join(dir, c.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.find) {
				t.Fatalf("%s holds no %q:\n%s", c.file, c.find, b)
			}
			changed := strings.Replace(string(b), c.find, c.replace, 1)
			if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			w, a, err := Load(dir)
			var we *workflow.Error
			if w != nil || a != nil || !errors.As(err, &we) {
				t.Fatalf("Load: %v", err)
			}
			if we.File != c.file || we.Code != c.code || !strings.Contains(we.Detail, c.detail) || we.Line == 0 {
				t.Fatalf("Load: %v (file %s, line %d, column %d)", err, we.File, we.Line, we.Column)
			}
			lines := strings.Split(changed, "\n")
			if we.Line > len(lines) {
				t.Fatalf("line %d of %d", we.Line, len(lines))
			}
			if at := lines[we.Line-1]; !strings.Contains(at, c.at) {
				t.Fatalf("Load: %v names line %d, %q; want the line with %q", err, we.Line, at, c.at)
			}
			if !strings.Contains(err.Error(), c.file+":") {
				t.Fatalf("the error does not say file:line: %v", err)
			}
		})
	}
	t.Run("two manifests", func(t *testing.T) {
		dir := yamlExample(t, "refund-agent")
		if err := os.WriteFile(filepath.Join(dir, workflow.ManifestFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(dir)
		var we *workflow.Error
		if !errors.As(err, &we) || we.Code != workflow.CodeMalformed || !strings.Contains(we.Detail, "one manifest") {
			t.Fatalf("Load: %v", err)
		}
	})
}

// BenchmarkLoadYAML loads the refund-agent bundle from its directory,
// written in JSON and in YAML, side by side.
func BenchmarkLoadYAML(b *testing.B) {
	dirs := map[string]string{"json": filepath.Join("..", "examples", "refund-agent")}
	dirs["yaml"] = yamlExample(b, "refund-agent")
	for _, name := range []string{"json", "yaml"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Load(dirs[name]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// WriteYAML writes each example's JSON documents in YAML that reads back
// as exactly the JSON value each held (the manifest's file names
// renamed), in the members' order, and copies every other file; it
// refuses a destination that exists, a bundle in YAML already, and a
// bundle with a file in the way, writing nothing.
func TestWriteYAML(t *testing.T) {
	for _, name := range []string{"refund-agent", "ops-agent", "support-agent"} {
		src := filepath.Join("..", "examples", name)
		dst := filepath.Join(t.TempDir(), "yaml")
		wrote, err := WriteYAML(src, dst)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entries, err := os.ReadDir(src)
		if err != nil || len(wrote) != len(entries) {
			t.Fatalf("%s: wrote %v of %d files (%v)", name, wrote, len(entries), err)
		}
		for _, e := range entries {
			from, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			to := e.Name()
			if strings.HasSuffix(to, ".json") {
				to = strings.TrimSuffix(to, ".json") + ".yaml"
			}
			got, err := os.ReadFile(filepath.Join(dst, to))
			if err != nil {
				t.Fatalf("%s: %s was not written: %v", name, to, err)
			}
			if to == e.Name() {
				if string(got) != string(from) {
					t.Fatalf("%s: %s was not copied as it was", name, to)
				}
				continue
			}
			if !strings.HasPrefix(string(got), "# "+e.Name()+", written in YAML") {
				t.Fatalf("%s: %s does not say where it came from:\n%.80s", name, to, got)
			}
			// The value it spells is the JSON's, the manifest's names renamed.
			want := string(from)
			if e.Name() == workflow.ManifestFile {
				for _, f := range []string{"domain", "capabilities", "controller"} {
					want = strings.ReplaceAll(want, `"`+f+`.json"`, `"`+f+`.yaml"`)
				}
				if !strings.HasPrefix(strings.SplitN(string(got), "\n", 2)[1], "schema_version: flrh-workflow/1\nid: "+name+"\n") {
					t.Fatalf("%s: the manifest's members are not in their order:\n%.120s", name, got)
				}
			}
			var wv, gv []byte
			if v, err := cjson.Decode([]byte(want)); err == nil {
				wv, _ = cjson.Encode(v)
				gv, _, err = yamljson.Convert(got)
				if err != nil {
					t.Fatalf("%s: %s: %v", name, to, err)
				}
			} else { // a model's floats: compared as plain JSON values
				var a, b any
				json.Unmarshal([]byte(want), &a)
				g, _, err := yamljson.ConvertFloats(got)
				if err != nil {
					t.Fatalf("%s: %s: %v", name, to, err)
				}
				json.Unmarshal(g, &b)
				wv, _ = json.Marshal(a)
				gv, _ = json.Marshal(b)
			}
			if string(gv) != string(wv) {
				t.Fatalf("%s: %s reads back as\n%s\nnot\n%s", name, to, gv, wv)
			}
		}
	}

	src := filepath.Join("..", "examples", "refund-agent")
	taken := t.TempDir()
	if _, err := WriteYAML(src, taken); err == nil {
		t.Fatal("WriteYAML wrote into a directory that exists")
	}
	yamlDir := yamlExample(t, "refund-agent")
	if _, err := WriteYAML(yamlDir, filepath.Join(t.TempDir(), "again")); err == nil || !strings.Contains(err.Error(), "written in YAML already") {
		t.Fatalf("WriteYAML of a YAML bundle: %v", err)
	}
	inTheWay := t.TempDir()
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(inTheWay, e.Name()), b, 0o644)
	}
	os.WriteFile(filepath.Join(inTheWay, "domain.yaml"), []byte("# notes\n"), 0o644)
	dst := filepath.Join(t.TempDir(), "yaml")
	if _, err := WriteYAML(inTheWay, dst); err == nil || !strings.Contains(err.Error(), "holds domain.yaml already") {
		t.Fatalf("WriteYAML with domain.yaml in the way: %v", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("a refused WriteYAML left its destination")
	}
}
