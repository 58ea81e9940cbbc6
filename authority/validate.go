package authority

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/schemaerr"
)

//go:embed schema/authority.v1.json
var schemaFS embed.FS

// SchemaURL is the $id of the embedded authority schema; the schema of one
// kind is at SchemaURL + "#/$defs/<Kind>".
const SchemaURL = "https://flrh.dev/schema/authority.v1.json"

// SchemaKinds are the kinds Validate knows.
var SchemaKinds = []string{"ActionTicket", "HApprovalRequest", "HApproval", "Capability", "SignedCapability"}

// Schema returns the embedded JSON Schema (draft 2020-12).
func Schema() []byte {
	b, err := schemaFS.ReadFile("schema/authority.v1.json")
	if err != nil {
		panic("authority: embedded schema missing: " + err.Error()) // a build defect
	}
	return b
}

var compiledSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	out := make(map[string]*jsonschema.Schema, len(SchemaKinds))
	for _, k := range SchemaKinds {
		s, err := c.Compile(SchemaURL + "#/$defs/" + k)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
})

// Validate checks that jsonText is one valid object of the given kind:
// strict flrh-cjson/1 input first (no floats, NFC strings, unique keys),
// then the closed schema. Failures are *Rejection values with code
// CANONICALIZATION_VIOLATION or SCHEMA_VIOLATION and the JSON pointer of
// the offending value. Validation is not verification: digests and
// signatures are checked by the functions that use the objects.
func Validate(kind string, jsonText []byte) error {
	schemas, err := compiledSchemas()
	if err != nil {
		return err
	}
	s, ok := schemas[kind]
	if !ok {
		return &Rejection{Code: "SCHEMA_VIOLATION", Path: "/", Expected: "a known kind", Actual: kind}
	}
	v, err := cjson.Decode(jsonText)
	if err != nil {
		r := &Rejection{Code: "CANONICALIZATION_VIOLATION", Path: "/"}
		var ce *cjson.Error
		if errors.As(err, &ce) {
			r.Path, r.Actual = pathOrRoot(ce.Pointer), string(ce.Code)
		}
		return r
	}
	if err := s.Validate(schemaValue(v)); err != nil {
		r := &Rejection{Code: "SCHEMA_VIOLATION", Path: "/"}
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			p, leaf := schemaerr.Deepest(ve)
			r.Path, r.Actual = pathOrRoot(p), leaf.Error()
		}
		return r
	}
	return nil
}

// schemaValue converts the canonical value model (int64 numbers) into the
// one the schema validator expects (json.Number-like via int).
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

// DecodeTicket reads an Action Ticket from JSON text, as a store or an API
// hands it back: strict canonical input, the closed schema, then every
// derived member recomputed (Ticket.Verify). A ticket that does not verify
// is refused with the member that disagrees.
func DecodeTicket(jsonText []byte) (Ticket, error) {
	if err := Validate("ActionTicket", jsonText); err != nil {
		return Ticket{}, err
	}
	v, _ := cjson.Decode(jsonText) // Validate decoded it already
	m := v.(map[string]any)
	str := func(k string) string { s, _ := m[k].(string); return s }
	flag := func(k string) bool { b, _ := m[k].(bool); return b }
	strs := func(k string) []string {
		list, _ := m[k].([]any)
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	t := Ticket{
		Kind: str("kind"), TicketVersion: str("ticket_version"), TicketID: str("ticket_id"),
		Action: str("action"), Destination: str("destination"), Scope: str("scope"),
		ActionDigest: str("action_digest"), Preview: str("preview"), PreviewDigest: str("preview_digest"),
		DeclaredRisk: str("declared_risk"), AssessedRisk: str("assessed_risk"),
		Completeness: str("ticket_completeness"), MissingFields: strs("missing_fields"),
		PreviewRequired: flag("preview_required"), PreviewShown: flag("preview_shown"),
		ConfirmationRequired: flag("confirmation_required"), ConfirmationReceived: flag("confirmation_received"),
		Status: str("ticket_status"), TicketDigest: str("ticket_digest"),
		Constraints: []Constraint{},
	}
	t.Parameters, _ = m["parameters"].(map[string]any)
	for _, s := range strs("side_effects") {
		t.SideEffects = append(t.SideEffects, SideEffect(s))
	}
	cs, _ := m["constraints"].([]any)
	for _, c := range cs {
		cm, _ := c.(map[string]any)
		con := Constraint{Gate: cm["gate"].(string), Rule: cm["rule"].(string), Field: cm["field"].(string), Scope: cm["scope"].(string)}
		if n, ok := cm["max"].(int64); ok {
			con.Max = &n
		}
		t.Constraints = append(t.Constraints, con)
	}
	if err := ValidateSideEffects(t.SideEffects); err != nil {
		return Ticket{}, err
	}
	if want := sortedEffects(t.SideEffects); !slicesEqual(want, t.SideEffects) {
		return Ticket{}, &TicketError{"MALFORMED_TICKET", "/side_effects", "side effects are not in canonical order"}
	}
	if err := t.Verify(); err != nil {
		return Ticket{}, err
	}
	return t, nil
}

func slicesEqual(a, b []SideEffect) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
