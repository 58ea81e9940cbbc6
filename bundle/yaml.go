package bundle

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/workflow"
	"flrh.dev/flrh/yamljson"
)

// jsonMembers are the manifest's members (JSON Pointers) that name a JSON
// document of the bundle: the files WriteYAML writes in YAML.
var jsonMembers = []string{"/domain", "/capabilities", "/controller/model"}

// WriteYAML writes the bundle in directory src, whose manifest is
// workflow.json, to the new directory dst with its JSON documents written
// in YAML (yamljson.FromJSON: block style, members in their order, each
// file headed by a comment naming the file it came from): workflow.yaml,
// and each file the manifest names as its domain, capabilities or
// controller model, renamed *.yaml in the manifest. Every other file is
// copied as it is. It returns the names it wrote, in order.
//
// The bundle written compiles to the same workflow as src's, under a
// digest of its own (the digest binds the files as written): WriteYAML
// loads both and refuses, removing dst, when their ids, versions, version
// envelopes or tools differ. dst must not exist; src must load.
func WriteYAML(src, dst string) ([]string, error) {
	sw, _, err := Load(src)
	if err != nil {
		return nil, err
	}
	files, err := readFiles(os.DirFS(src))
	if err != nil {
		return nil, err
	}
	if _, ok := files[workflow.ManifestFile]; !ok {
		return nil, fmt.Errorf("bundle: %s has no %s to write in YAML (it is written in YAML already)", src, workflow.ManifestFile)
	}
	manifest, err := cjson.Decode(files[workflow.ManifestFile])
	if err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", workflow.ManifestFile, err)
	}
	renamed := map[string]string{workflow.ManifestFile: workflow.ManifestYAML}
	replace := map[string]string{}
	for _, ptr := range jsonMembers {
		name, ok := at(manifest, ptr).(string)
		if !ok || !strings.HasSuffix(name, ".json") {
			continue
		}
		to := strings.TrimSuffix(name, ".json") + ".yaml"
		if _, taken := files[to]; taken {
			return nil, fmt.Errorf("bundle: %s holds %s already: %s cannot be written in YAML beside it", src, to, name)
		}
		renamed[name], replace[ptr] = to, to
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	var wrote []string
	fail := func(err error) ([]string, error) {
		os.RemoveAll(dst)
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b, out := files[name], name
		if to, ok := renamed[name]; ok {
			var rep map[string]string
			if name == workflow.ManifestFile {
				rep = replace
			}
			y, err := yamljson.FromJSON(b, name+", written in YAML (flrh bundle yaml)", rep)
			if err != nil {
				return fail(fmt.Errorf("bundle: %s: %w", name, err))
			}
			b, out = y, to
		}
		if err := os.WriteFile(filepath.Join(dst, out), b, 0o644); err != nil {
			return fail(fmt.Errorf("bundle: %w", err))
		}
		wrote = append(wrote, out)
	}
	dw, _, err := Load(dst)
	if err != nil {
		return fail(fmt.Errorf("bundle: the bundle written in YAML does not load: %w", err))
	}
	if dw.ID() != sw.ID() || dw.Version() != sw.Version() || dw.Versions() != sw.Versions() ||
		!slices.Equal(slices.Sorted(maps.Keys(dw.Manifests())), slices.Sorted(maps.Keys(sw.Manifests()))) {
		return fail(errors.New("bundle: the bundle written in YAML is not the same workflow"))
	}
	return wrote, nil
}

// at is the value at JSON Pointer ptr in v (of cjson's model), or nil.
func at(v any, ptr string) any {
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}
