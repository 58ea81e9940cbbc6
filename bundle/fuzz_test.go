package bundle

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/workflow"
)

// FuzzLoadFS loads an example bundle with one of its files (the manifest,
// a rule file, the domain or the capabilities) replaced by arbitrary
// bytes, or an extra file added: LoadFS never panics, returns a workflow
// or an error but not both, and a refusal is a *workflow.Error (or names
// a missing manifest, when the name makes workflow.json a directory).
func FuzzLoadFS(f *testing.F) {
	names := examples.Names()
	bundles := make([]fstest.MapFS, len(names))
	for i, name := range names {
		fsys, err := examples.Bundle(name)
		if err != nil {
			f.Fatal(err)
		}
		m := fstest.MapFS{}
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := fs.ReadFile(fsys, e.Name())
			if err != nil {
				f.Fatal(err)
			}
			m[e.Name()] = &fstest.MapFile{Data: b}
			f.Add(uint8(i), e.Name(), b)
		}
		bundles[i] = m
	}
	// The refund agent's manifest with an adapter's tls and limits set,
	// so that the fuzzer starts from them too.
	for i, name := range names {
		if name != "refund-agent" {
			continue
		}
		manifest := bundles[i][workflow.ManifestFile].Data
		with := bytes.Replace(manifest, []byte(`"url_env"`), []byte(`"tls": {"ca_env": "PAY_CA", "cert_env": "PAY_CERT", "key_env": "PAY_KEY", "server_name": "payments.internal"},
      "limits": {"max_in_flight": 4, "per_second": 20, "wait_ms": 2000},
      "url_env"`), 1)
		if bytes.Equal(with, manifest) {
			f.Fatal("the refund agent's manifest names no url_env")
		}
		m := maps.Clone(bundles[i])
		m[workflow.ManifestFile] = &fstest.MapFile{Data: with}
		if _, a, err := LoadFS(m); err != nil || a.Specs()["refund.pay"].Limits == nil {
			f.Fatalf("the seed with tls and limits does not load: %v", err)
		}
		f.Add(uint8(i), workflow.ManifestFile, with)
	}
	f.Add(uint8(0), "extra.dl", []byte("p(X) :- q(X).\n"))
	f.Add(uint8(0), workflow.ManifestFile, []byte(`{}`))
	f.Fuzz(func(t *testing.T, which uint8, name string, data []byte) {
		if !fs.ValidPath(name) || name == "." || len(data) > MaxFileSize {
			return
		}
		src := bundles[int(which)%len(bundles)]
		_, err := loadsOrRefuses(t, src, name, data)
		if err == nil {
			return
		}
		var ce *workflow.Error
		if !errors.As(err, &ce) && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}

// loadsOrRefuses loads src with file name holding data instead: a
// workflow and its adapters, or an error and neither (anything else fails
// t). It returns the files loaded and the error.
func loadsOrRefuses(t *testing.T, src fstest.MapFS, name string, data []byte) (fstest.MapFS, error) {
	t.Helper()
	m := maps.Clone(src)
	m[name] = &fstest.MapFile{Data: data}
	w, a, err := LoadFS(m)
	if (w == nil) != (err != nil) || (a == nil) != (err != nil) {
		t.Fatalf("workflow %v, adapters %v, error %v", w, a, err)
	}
	return m, err
}

// FuzzLoadYAML loads the refund-agent bundle written in YAML with its
// manifest or its domain replaced by arbitrary bytes: LoadFS never
// panics, and a refusal is a *workflow.Error whose line, in a YAML file,
// is one of the file's lines.
func FuzzLoadYAML(f *testing.F) {
	dir := yamlExample(f, "refund-agent")
	src := fstest.MapFS{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		src[e.Name()] = &fstest.MapFile{Data: b}
	}
	f.Add(false, src[workflow.ManifestYAML].Data)
	f.Add(true, src["domain.yaml"].Data)
	f.Add(false, []byte("id: [\n"))
	f.Add(true, []byte("a: &x 1\nb: *x\n"))
	f.Fuzz(func(t *testing.T, domain bool, data []byte) {
		name := workflow.ManifestYAML
		if domain {
			name = "domain.yaml"
		}
		m, err := loadsOrRefuses(t, src, name, data)
		if err == nil {
			return
		}
		var ce *workflow.Error
		if !errors.As(err, &ce) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if f, ok := m[ce.File]; ok && strings.HasSuffix(ce.File, ".yaml") {
			// YAML breaks lines at \n, \r\n and a lone \r.
			lines := bytes.Count(f.Data, []byte("\n")) + bytes.Count(f.Data, []byte("\r")) - bytes.Count(f.Data, []byte("\r\n")) + 1
			if ce.Line > lines {
				t.Fatalf("%v: line %d of a file of %d lines", err, ce.Line, lines)
			}
		}
	})
}
