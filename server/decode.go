package server

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/schemaerr"
)

//go:embed schema/*.json
var schemaFS embed.FS

// schemaBase is the $id prefix of the embedded request schemas.
const schemaBase = "https://flrh.dev/schema/server/"

// requestSchemas names every embedded schema, in a fixed order.
var requestSchemas = []string{"approve", "cancel", "choose", "deny", "mrp", "reconcile", "release", "start_run", "submit_input", "tokens", "identity", "login_token", "login_refresh", "webhooks", "backfill", "pause"}

var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, name := range requestSchemas {
		raw, err := schemaFS.ReadFile("schema/" + name + ".json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		if err := c.AddResource(schemaBase+name+".json", doc); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, name := range requestSchemas {
		s, err := c.Compile(schemaBase + name + ".json")
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
})

// DefaultMaxBody bounds a request body unless Config.MaxBody says otherwise.
const DefaultMaxBody = 1 << 20

// readBody enforces the content type and the size limit and returns the
// body's bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Error) {
	return readBodyOf(w, r, limit, "application/json")
}

// readBodyOf reads a body of one of the media types, the first being the
// one a refusal names.
func readBodyOf(w http.ResponseWriter, r *http.Request, limit int64, media ...string) ([]byte, *Error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(media, mt) {
		return nil, apiErr(http.StatusUnsupportedMediaType, TypeUnsupportedMedia, "", "the body must be %s", media[0])
	}
	if cs, ok := params["charset"]; ok && !(cs == "utf-8" || cs == "UTF-8") {
		return nil, apiErr(http.StatusUnsupportedMediaType, TypeUnsupportedMedia, "", "the body must be UTF-8")
	}
	if r.ContentLength > limit {
		return nil, apiErr(http.StatusRequestEntityTooLarge, TypeTooLarge, "", "the body is larger than %d bytes", limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, apiErr(http.StatusRequestEntityTooLarge, TypeTooLarge, "", "the body is larger than %d bytes", limit)
	} else if err != nil {
		return nil, apiErr(http.StatusBadRequest, TypeMalformed, "", "reading the body: %v", err)
	}
	return body, nil
}

// decodeStrict checks body as strict flrh-cjson/1 input, validates it
// against the named embedded schema and decodes it into dst, refusing any
// member dst does not declare. Errors are *Error values: 400 for bytes
// that are not acceptable JSON, 422 for JSON against the schema.
func decodeStrict(body []byte, schema string, dst any) error {
	v, err := cjson.Decode(body)
	if err != nil {
		var ce *cjson.Error
		if errors.As(err, &ce) {
			return apiErr(http.StatusBadRequest, TypeMalformed, pointerOrRoot(ce.Pointer), "%s", ce.Error())
		}
		return apiErr(http.StatusBadRequest, TypeMalformed, "", "%v", err)
	}
	schemas, err := compiled()
	if err != nil {
		return err // a build defect: the embedded schemas do not compile
	}
	if err := schemas[schema].Validate(schemaValue(v)); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			p, leaf := schemaerr.Deepest(ve)
			return apiErr(http.StatusUnprocessableEntity, TypeInvalid, pointerOrRoot(p), "%s", leafMessage(leaf))
		}
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/", "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		// The schema is closed, so this only fires if a schema and its Go
		// type disagree; refusing is still the right answer.
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/", "%v", err)
	}
	return nil
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// leafMessage is what a validation failure says about its own value,
// without the schema URL the validator's full report starts with.
func leafMessage(ve *jsonschema.ValidationError) string {
	if ve.ErrorKind != nil {
		return ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))
	}
	return ve.Error()
}

// schemaValue converts the canonical value model (int64 numbers) into
// one the validator's type checks accept.
func schemaValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		//flrh:orderfree a map is rebuilt entry by entry
		for k, e := range x {
			out[k] = schemaValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = schemaValue(e)
		}
		return out
	case int64:
		return int(x)
	}
	return v
}

// Schema returns the embedded JSON Schema of a request body by name
// ("approve", "start_run", ...), or nil.
func Schema(name string) []byte {
	b, err := schemaFS.ReadFile("schema/" + name + ".json")
	if err != nil {
		return nil
	}
	return b
}
