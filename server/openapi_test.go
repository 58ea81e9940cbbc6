package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

func loadDoc(t *testing.T) map[string]any {
	t.Helper()
	raw, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	return doc
}

// The OpenAPI document and the router describe the same API: every route
// the server answers is documented, every documented operation is routed,
// with the same body schema, the same roles and the error answers it can give.
func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadDoc(t)
	paths := doc["paths"].(map[string]any)
	f := newFixture(t, tokenFileText)

	documented := map[string]bool{}
	for path, item := range paths {
		for _, m := range httpMethods {
			if _, ok := item.(map[string]any)[m]; ok {
				documented[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	routed := map[string]bool{}
	for _, rt := range routes {
		routed[rt.Method+" "+rt.Pattern] = true
	}
	for k := range routed {
		if !documented[k] {
			t.Errorf("route %s is not in the OpenAPI document", k)
		}
	}
	for k := range documented {
		if !routed[k] {
			t.Errorf("the OpenAPI document has %s, which no route serves", k)
		}
	}
	// Walk the live router: each documented operation reaches exactly its
	// own pattern, not a fallback.
	for k := range documented {
		method, path, _ := strings.Cut(k, " ")
		req := httptest.NewRequest(method, strings.ReplaceAll(path, "{id}", "some-run"), nil)
		if _, pattern := f.server.mux.Handler(req); pattern != k {
			t.Errorf("%s is routed to %q", k, pattern)
		}
	}

	for _, rt := range routes {
		item, _ := paths[rt.Pattern].(map[string]any)
		op, ok := item[strings.ToLower(rt.Method)].(map[string]any)
		if !ok {
			continue
		}
		name := rt.Method + " " + rt.Pattern
		// Request body: exactly the schema the handler validates against.
		rb, hasBody := op["requestBody"].(map[string]any)
		if (rt.Body != "") != hasBody {
			t.Errorf("%s: route body %q, documented body %v", name, rt.Body, hasBody)
		}
		if hasBody && rt.Body != foreignBody {
			ref := rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"]
			if want := "#/components/schemas/" + bodySchemaNames[rt.Body]; ref != want {
				t.Errorf("%s: body $ref %v, want %s", name, ref, want)
			}
		}
		// Roles and security.
		var want []string
		if rt.Perm != permPublic {
			for _, role := range Roles {
				if slices.Contains(grants[role], rt.Perm) {
					want = append(want, role)
				}
			}
		}
		var got []string
		for _, r := range op["x-flrh-roles"].([]any) {
			got = append(got, r.(string))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: documented roles %v, route grants %v", name, got, want)
		}
		sec, _ := op["security"].([]any)
		if (rt.Perm == permPublic) != (len(sec) == 0) {
			t.Errorf("%s: security %v for permission %s", name, sec, rt.Perm)
		}
		// The error answers the route can give are documented.
		resp := op["responses"].(map[string]any)
		need := []string{}
		if rt.Perm != permPublic {
			need = append(need, "401", "403")
		}
		if rt.Body != "" {
			need = append(need, "400", "413", "415", "422", "409")
		}
		if strings.Contains(rt.Pattern, "{id}") {
			need = append(need, "404")
		}
		for _, code := range need {
			if _, ok := resp[code]; !ok {
				t.Errorf("%s: response %s is not documented", name, code)
			}
		}
	}
}

// The body schemas in the document are the validation schemas themselves,
// and every $ref in the document resolves.
func TestOpenAPISchemasAndRefs(t *testing.T) {
	doc := loadDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for file, name := range bodySchemaNames {
		var s map[string]any
		if err := json.Unmarshal(Schema(file), &s); err != nil {
			t.Fatal(err)
		}
		delete(s, "$schema")
		delete(s, "$id")
		if !reflect.DeepEqual(s, schemas[name]) {
			t.Errorf("components.schemas.%s differs from schema/%s.json", name, file)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#/") {
					t.Errorf("external $ref %s", ref)
					return
				}
				var cur any = doc
				for _, tok := range strings.Split(ref[2:], "/") {
					m, _ := cur.(map[string]any)
					cur = m[tok]
				}
				if cur == nil {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
}

// The document is served as it is built.
func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t, tokenFileText)
	a := f.get("/v1/openapi.json", "")
	want, _ := OpenAPI()
	if a.status != 200 || string(a.body) != string(want) {
		t.Fatalf("GET /v1/openapi.json: %d", a.status)
	}
}

// The document is a valid OpenAPI 3.1 document, checked against the
// OpenAPI Initiative's own schema for 3.1 documents (testdata).
func TestOpenAPIValidAgainstTheOpenAPISchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "openapi-3.1.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://spec.openapis.org/oas/3.1/schema/test"
	if err := c.AddResource(url, meta); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := OpenAPI()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("not a valid OpenAPI 3.1 document: %v", err)
	}
	// And the check has teeth: a document with an unknown member fails.
	bad := map[string]any{}
	json.Unmarshal(doc, &bad)
	bad["paths"].(map[string]any)["/v1/workflows"].(map[string]any)["get"].(map[string]any)["responz"] = map[string]any{}
	if err := sch.Validate(bad); err == nil {
		t.Fatal("the OpenAPI schema accepted an operation with an unknown member")
	}
}
