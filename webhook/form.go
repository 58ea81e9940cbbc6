package webhook

import (
	"maps"
	"net/url"
	"slices"
	"unicode/utf8"
)

// readForm reads a form body (application/x-www-form-urlencoded) as an
// object of its fields' strings: each field named once, in UTF-8, so
// that a form means one thing whoever reads it.
func readForm(body []byte) (map[string]any, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, refuse(ReasonMalformed, "", "the body is not a form: %v", err)
	}
	fields := make(map[string]any, len(form))
	// In order, so that of several fields at fault the same is named.
	for _, k := range slices.Sorted(maps.Keys(form)) {
		vs := form[k]
		if len(vs) != 1 {
			return nil, refuse(ReasonMalformed, "", "the form names %q %d times", k, len(vs))
		}
		if !utf8.ValidString(k) || !utf8.ValidString(vs[0]) {
			return nil, refuse(ReasonMalformed, "", "the form's field %q is not UTF-8", k)
		}
		fields[k] = vs[0]
	}
	return fields, nil
}
