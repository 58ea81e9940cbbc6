package protocol

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"flrh.dev/flrh/cjson"
)

//go:embed schema/protocol.v1.json
var schemaFS embed.FS

// SchemaURL is the $id of the embedded protocol schema. The schema of one
// kind is at SchemaURL + "#/$defs/<Kind>".
const SchemaURL = "https://flrh.dev/schema/protocol.v1.json"

// Schema returns the embedded JSON Schema document (draft 2020-12) that
// closes every wire kind.
func Schema() []byte {
	b, err := schemaFS.ReadFile("schema/protocol.v1.json")
	if err != nil {
		// The file is embedded at build time; its absence is a build defect.
		panic("protocol: embedded schema missing: " + err.Error())
	}
	return b
}

var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: func(v any) error {
		if s, ok := v.(string); ok && !ValidTimestamp(s) {
			return errors.New("not an RFC 3339 date-time")
		}
		return nil
	}})
	c.AssertFormat()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	out := make(map[string]*jsonschema.Schema, len(Kinds)+1)
	for _, k := range append(slices.Clone(Kinds), "VersionEnvelope") {
		s, err := c.Compile(SchemaURL + "#/$defs/" + k)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
})

// KnownKind reports whether kind names a wire object of this protocol.
func KnownKind(kind string) bool { return slices.Contains(Kinds, kind) }

// Validate checks that jsonText is one valid wire object of the given kind.
// It checks, in order, and reports the first failure as an *Error (or a
// *cjson.Error for canonical-encoding failures):
//
//  1. the text is strict flrh-cjson/1 input (no floats, no out-of-range
//     integers, NFC strings, unique keys, no duplicate set elements);
//  2. it is an object whose kind member is the kind asked for;
//  3. an object produced below the authority carries no authority-owned member;
//  4. the cross-field rules (approval binding, equivalence claims, batch
//     stability), with their own codes;
//  5. the closed JSON Schema of the kind.
//
// Validate never mutates its input and never panics.
func Validate(kind string, jsonText []byte) error {
	if acceptsText(kind, jsonText) {
		// Canonical input the kind's schema accepts, and nothing else to
		// check: see fasttext.go. Anything else takes the full path.
		return nil
	}
	return validateFull(kind, jsonText)
}

// validateFull is Validate for a text the text path does not accept.
func validateFull(kind string, jsonText []byte) error {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return err
	}
	return validateValue(kind, v, fastSchema|decoded)
}

// ValidateValue is Validate for an already decoded value of the cjson value
// model (map[string]any, []any, string, int64, bool, nil).
func ValidateValue(kind string, v any) error {
	return validateValue(kind, v, fastSchema)
}

// shortcut selects the checks validateValue may answer more cheaply. Each
// one only ever skips work whose outcome it has established; every
// verdict, and every error, is the one the full sequence gives.
type shortcut uint8

const (
	// fastSchema: a value the compiled fast check accepts is not given to
	// the JSON Schema validator (see fast.go).
	fastSchema shortcut = 1 << iota
	// decoded: the value came from cjson.Decode, so it already has a
	// canonical form except, possibly, for duplicates in its set-like
	// arrays; when those hold distinct strings it is not encoded again.
	decoded
)

func validateValue(kind string, v any, sc shortcut) error {
	if !KnownKind(kind) {
		return errorf(kind, CodeUnknownKind, "/", "%q is not a wire kind of protocol v1", kind)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return errorf(kind, CodeNotObject, "/", "a %s must be a JSON object", kind)
	}
	if got, present := obj["kind"]; !present {
		return errorf(kind, CodeMissingField, "/kind", "the kind member is required")
	} else if got != kind {
		return errorf(kind, CodeKindMismatch, "/kind", "expected kind %q, got %s", kind, describe(got))
	}
	// Canonical form: set-like arrays of this kind must have no duplicates.
	if sc&decoded == 0 || !distinctSets(kind, obj) {
		if _, err := cjson.Encode(v); err != nil {
			return err
		}
	}
	if err := checkAuthorityFields(kind, obj); err != nil {
		return err
	}
	if err := checkRules(kind, obj); err != nil {
		return err
	}
	if f := compiledFast()[kind]; sc&fastSchema != 0 && f != nil && f.accepts(v, 0) {
		// The fast check accepts only what the schema accepts; a value it
		// does not accept gets the schema validator's verdict and error.
		return nil
	}
	return schemaCheck(kind, v)
}

// schemaCheck is step 5 of Validate by the general JSON Schema validator,
// which produces the error of an invalid value.
func schemaCheck(kind string, v any) error {
	schemas, err := compiled()
	if err != nil {
		// The embedded schema failed to compile: a build defect, not input.
		panic("protocol: embedded schema does not compile: " + err.Error())
	}
	if err := schemas[kind].Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fromSchemaError(kind, ve)
		}
		return errorf(kind, CodeSchema, "/", "%v", err)
	}
	return nil
}

// setMembers names, per kind, the root members whose arrays are sets in
// the canonical form (cjson's set-like paths, which are all root members).
var setMembers = func() map[string][]string {
	out := map[string][]string{}
	for _, k := range Kinds {
		out[k] = []string{}
		for _, p := range cjson.SetLikePaths(k) {
			name, ok := strings.CutPrefix(p, "/")
			if !ok || strings.Contains(name, "/") {
				// Not a root member: leave such a kind to the encoder.
				out[k] = nil
				break
			}
			out[k] = append(out[k], name)
		}
	}
	return out
}()

// distinctSets reports whether every set-like member of obj, a decoded
// object of kind, is absent or an array of pairwise different strings —
// the one canonical-form rule cjson.Decode does not already enforce. It
// answers false whenever the encoder has to decide.
func distinctSets(kind string, obj map[string]any) bool {
	names := setMembers[kind]
	if names == nil {
		return false
	}
	for _, name := range names {
		x, present := obj[name]
		if !present {
			continue
		}
		a, isArray := x.([]any)
		if !isArray || !uniqueStrings(a) {
			return false
		}
	}
	return true
}

// authorityOwned lists, per kind produced below the authority, the members
// that only H may set. A proposal that carried one would smuggle authority
// past the gate; a closed schema rejects it anyway, but this code says why.
var authorityOwned = map[string][]string{
	KindFactDelta:           authorityFields,
	KindEffectProposal:      authorityFields,
	KindEligibilityVerdict:  authorityFields,
	KindStableProposalBatch: authorityFields,
}

var authorityFields = []string{
	"adapter_version", "approval", "approval_digest", "approval_required",
	"assessed_risk", "authority_digest", "capability", "idempotency_key",
	"intent_id", "risk",
}

func checkAuthorityFields(kind string, obj map[string]any) error {
	for _, f := range authorityOwned[kind] {
		if _, ok := obj[f]; ok {
			return errorf(kind, CodeAuthorityField, "/"+f,
				"%s is set only by the authority; a %s must not carry it", f, kind)
		}
	}
	return nil
}

// checkRules applies the cross-field rules. It reads members defensively:
// a member of the wrong type is left for the schema to report.
func checkRules(kind string, obj map[string]any) error {
	switch kind {
	case KindEffectIntent, KindActionReceipt:
		risk, _ := obj["assessed_risk"].(string)
		required, isBool := obj["approval_required"].(bool)
		digest, hasDigest := obj["approval_digest"]
		if risk == RiskHighRiskExternal && isBool && !required {
			return errorf(kind, CodeHighRiskNeedsApproval, "/approval_required",
				"an assessed %s effect always requires approval", RiskHighRiskExternal)
		}
		if isBool && required && hasDigest && digest == nil {
			return errorf(kind, CodeApprovalNeedsDigest, "/approval_digest",
				"approval is required, so the approval digest must be bound")
		}
		if isBool && !required && hasDigest && digest != nil {
			return errorf(kind, CodeUnrequiredApprovalBind, "/approval_digest",
				"approval is not required, so no approval digest may be bound")
		}
	case KindResolvedCompositionReceipt:
		if obj["equivalence_status"] == EquivalenceEquivalent {
			if n, ok := obj["forbidden_delta_count"].(int64); ok && n != 0 {
				return errorf(kind, CodeFalseEquivalence, "/forbidden_delta_count",
					"an equivalent composition has no forbidden deltas, found %d", n)
			}
			if r, ok := obj["production_root_reachable"].(bool); ok && !r {
				return errorf(kind, CodeFalseEquivalence, "/production_root_reachable",
					"an equivalent composition reaches its production root")
			}
		}
	case KindStableProposalBatch:
		lt, ok1 := obj["logical_time"].(int64)
		wm, ok2 := obj["low_watermark"].(int64)
		if ok1 && ok2 && wm <= lt {
			return errorf(kind, CodeBatchNotStable, "/low_watermark",
				"a batch is stable only once the low watermark (%d) is strictly greater than its logical time (%d)", wm, lt)
		}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// fromSchemaError turns the validator's error tree into one *Error: the
// first leaf in (pointer, keyword) order, so the report is deterministic.
func fromSchemaError(k string, ve *jsonschema.ValidationError) *Error {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	var errs []*Error
	for _, l := range leaves {
		errs = append(errs, leafError(k, l))
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Code, b.Code)
	})
	return errs[0]
}

func leafError(k string, e *jsonschema.ValidationError) *Error {
	ptr := ""
	for _, tok := range e.InstanceLocation {
		ptr += "/" + cjson.EscapePointer(tok)
	}
	if ek, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		// The validator lists unknown members in map order; sorted, the
		// pointer and the detail are the same on every run.
		slices.Sort(ek.Properties)
	}
	detail := e.ErrorKind.LocalizedString(printer)
	switch ek := e.ErrorKind.(type) {
	case *kind.Required:
		return errorf(k, CodeMissingField, ptr+"/"+cjson.EscapePointer(ek.Missing[0]), "%s", detail)
	case *kind.AdditionalProperties:
		return errorf(k, CodeUnknownField, ptr+"/"+cjson.EscapePointer(ek.Properties[0]), "%s", detail)
	case *kind.Type:
		return errorf(k, CodeWrongType, ptr, "%s", detail)
	case *kind.Enum, *kind.Const:
		return errorf(k, CodeNotAllowed, ptr, "%s", detail)
	case *kind.Pattern, *kind.MinLength, *kind.MaxLength, *kind.Format:
		return errorf(k, CodeMalformed, ptr, "%s", detail)
	case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum:
		return errorf(k, CodeOutOfRange, ptr, "%s", detail)
	case *kind.MinProperties:
		return errorf(k, CodeEmptyObject, ptr, "%s", detail)
	case *kind.UniqueItems:
		return errorf(k, CodeDuplicate, ptr, "%s", detail)
	}
	return errorf(k, CodeSchema, ptr, "%s", detail)
}

func describe(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("%q", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}
