// Package schema ships the JSON Schema (draft 2020-12) of every canonical
// record the aif packages persist, and validates records at boundaries: a
// record read back from a store, or received from elsewhere, must be strict
// flrh-cjson/1 and match the closed schema of its kind before it is used.
package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"flrh.dev/flrh/cjson"
)

//go:embed aif.v1.json
var document []byte

// URL is the $id of the embedded schema.
const URL = "https://flrh.dev/schema/aif.v1.json"

// Kinds maps each record kind to its definition in the schema.
var Kinds = map[string]string{
	"flrh.aif.step":         "step",
	"flrh.aif.run":          "run",
	"flrh.aif.scorecard":    "scorecard",
	"flrh.aif.reduction":    "reduction",
	"flrh.aif.channel-tick": "channel_tick",
	"flrh.aif.belief-state": "belief_state",
	"flrh.aif.strategy":     "strategy",
	"flrh.aif.budget":       "budget",
	"flrh.aif.channel-step": "channel_step",
	"flrh.aif.channel-run":  "channel_run",
}

// Document returns the embedded schema.
func Document() []byte { return bytes.Clone(document) }

var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(URL, doc); err != nil {
		return nil, err
	}
	kinds := make([]string, 0, len(Kinds))
	for kind := range Kinds {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	out := map[string]*jsonschema.Schema{}
	for _, kind := range kinds {
		def := Kinds[kind]
		s, err := c.Compile(URL + "#/$defs/" + def)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", def, err)
		}
		out[kind] = s
	}
	return out, nil
})

// Error is a record that failed validation.
type Error struct {
	Code   string // RECORD_NOT_CANONICAL, RECORD_UNKNOWN_KIND, RECORD_SCHEMA
	Detail string
}

func (e *Error) Error() string { return "aif record: " + e.Code + ": " + e.Detail }

// Validate checks that text is strict flrh-cjson/1 and a valid record of
// its declared kind.
func Validate(text []byte) error {
	v, err := cjson.Decode(text)
	if err != nil {
		return &Error{"RECORD_NOT_CANONICAL", err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return &Error{"RECORD_UNKNOWN_KIND", "a record is an object"}
	}
	kind, _ := obj["kind"].(string)
	schemas, err := compiled()
	if err != nil {
		return &Error{"RECORD_SCHEMA", "embedded schema does not compile: " + err.Error()}
	}
	s, ok := schemas[kind]
	if !ok {
		return &Error{"RECORD_UNKNOWN_KIND", fmt.Sprintf("%q", kind)}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return &Error{"RECORD_NOT_CANONICAL", err.Error()}
	}
	if err := s.Validate(inst); err != nil {
		return &Error{"RECORD_SCHEMA", err.Error()}
	}
	return nil
}
