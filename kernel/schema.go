package kernel

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

//go:embed schema/kernel.v1.json
var schemaFS embed.FS

// SchemaURL is the $id of the embedded kernel schema; the shape of one
// object is at SchemaURL + "#/$defs/<Name>".
const SchemaURL = "https://flrh.dev/schema/kernel.v1.json"

// Schema names accepted by Validate.
const (
	SchemaSnapshot            = "FStateSnapshot"
	SchemaObservationSnapshot = "ObservationSnapshot"
	SchemaObservationEvent    = "ObservationEvent"
	SchemaObservationInput    = "ObservationInput"
	SchemaTransition          = "FTransition"
	SchemaRejection           = "FRejection"
)

var schemaNames = []string{SchemaSnapshot, SchemaObservationSnapshot, SchemaObservationEvent,
	SchemaObservationInput, SchemaTransition, SchemaRejection}

// Schema returns the embedded JSON Schema (draft 2020-12) of the kernel's
// inputs and results. It references the protocol schema (protocol.Schema).
func Schema() []byte {
	b, err := schemaFS.ReadFile("schema/kernel.v1.json")
	if err != nil {
		panic("kernel: embedded schema missing: " + err.Error())
	}
	return b
}

var compiledSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: func(v any) error {
		if s, ok := v.(string); ok && !protocol.ValidTimestamp(s) {
			return errors.New("not an RFC 3339 date-time")
		}
		return nil
	}})
	c.AssertFormat()
	for _, r := range []struct {
		url  string
		text []byte
	}{{SchemaURL, Schema()}, {protocol.SchemaURL, protocol.Schema()}} {
		url := r.url
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.text))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, name := range schemaNames {
		s, err := c.Compile(SchemaURL + "#/$defs/" + name)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
})

// Validate checks JSON text against one of the kernel's schemas (the
// Schema* names). It is for stores and verifiers reading persisted
// results; Step itself never needs it. The error, if any, is a
// *cjson.Error for non-canonical text, or describes the first schema
// failure.
func Validate(name string, jsonText []byte) error {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return err
	}
	schemas, err := compiledSchemas()
	if err != nil {
		panic("kernel: embedded schema does not compile: " + err.Error())
	}
	s, ok := schemas[name]
	if !ok {
		return fmt.Errorf("kernel: no schema named %q", name)
	}
	return s.Validate(v)
}
