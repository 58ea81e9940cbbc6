package jsontemplate_test

import (
	"testing"

	"flrh.dev/flrh/jsontemplate"
)

// FuzzTemplate: no template and document panic compiling or rendering, and a
// rendered value holds only the input value model.
func FuzzTemplate(f *testing.F) {
	f.Add(`{"type":"t/1","payload":{"a":"{/a}","b":"x-{/b/0}-{$delivery}"}}`, `{"a":1,"b":["q"]}`)
	f.Add(`"{{{/a}}}"`, `{"a":"z"}`)
	f.Add(`"{$body}"`, `[1,2.5]`)
	f.Fuzz(func(t *testing.T, tmpl, b string) {
		tp, err := jsontemplate.Compile([]byte(tmpl), names...)
		if err != nil {
			return
		}
		doc, err := jsontemplate.Decode([]byte(b))
		if err != nil {
			return
		}
		v, err := tp.Render(jsontemplate.Values{Body: doc, Names: map[string]string{"$delivery": "d"}})
		if err != nil {
			return
		}
		if bad := numbersAsFloat(v); hasStruct(bad) {
			t.Fatalf("rendered a value outside the model: %#v", v)
		}
	})
}

func hasStruct(v any) bool {
	switch x := v.(type) {
	case struct{}:
		return true
	case map[string]any:
		for _, e := range x {
			if hasStruct(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasStruct(e) {
				return true
			}
		}
	}
	return false
}
