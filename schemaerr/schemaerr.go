// Package schemaerr reads JSON Schema validation failures the way flrh
// reports them: one failing value, named by its JSON Pointer, chosen the
// same way whatever order the validator found the failures in.
package schemaerr

import (
	"github.com/santhosh-tekuri/jsonschema/v6"

	"flrh.dev/flrh/cjson"
)

// Deepest returns the most specific failing cause of a validation error and
// its instance location as a JSON Pointer ("" for the root). When several
// leaves fail, it picks the first in pointer order, so the report does not
// depend on the validator's internal ordering.
func Deepest(ve *jsonschema.ValidationError) (string, *jsonschema.ValidationError) {
	if len(ve.Causes) == 0 {
		p := ""
		for _, tok := range ve.InstanceLocation {
			p += "/" + cjson.EscapePointer(tok)
		}
		return p, ve
	}
	best, leaf := "", ve
	for i, c := range ve.Causes {
		if p, l := Deepest(c); i == 0 || p < best {
			best, leaf = p, l
		}
	}
	return best, leaf
}
