package schemaerr

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Of two failing members, the one first in pointer order is reported, with
// its own pointer, however the validator ordered them.
func TestDeepestPicksTheFirstPointer(t *testing.T) {
	schema, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"object","properties":{"x/y":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", schema); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"b":"no","a":{"x/y":3}}`))
	var ve *jsonschema.ValidationError
	if err := sch.Validate(inst); !errors.As(err, &ve) {
		t.Fatalf("validation did not fail: %v", err)
	}
	p, leaf := Deepest(ve)
	if p != "/a/x~1y" || len(leaf.Causes) != 0 {
		t.Fatalf("deepest = %q (%v)", p, leaf)
	}
	root := &jsonschema.ValidationError{}
	if p, l := Deepest(root); p != "" || l != root {
		t.Fatalf("root leaf = %q", p)
	}
}
