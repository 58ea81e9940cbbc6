package cjson

import "slices"

// AppendPlain appends the canonical bytes of v, a value below a document
// root that has no kind and so no set-like members, written directly
// instead of through the encoder's reflection: objects' keys in
// byte order (the encoder's order for printable ASCII), lists in their
// order. ok is false for a value of another type, a string or key with
// anything to escape or normalize, a nil list or object, or nesting
// deeper than plainDepth.
func AppendPlain(b []byte, v any) ([]byte, bool) { return appendPlain(b, v, 0) }

func appendPlain(b []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case int64:
		return AppendInt(b, v), true
	case int:
		return AppendInt(b, int64(v)), true
	case string:
		if !Plain(v) {
			return b, false
		}
		return AppendString(b, v), true
	case []string:
		if v == nil {
			return b, false
		}
		b = append(b, '[')
		for i, s := range v {
			if !Plain(s) {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, s)
		}
		return append(b, ']'), true
	case []any:
		if v == nil || depth >= plainDepth {
			return b, false
		}
		b = append(b, '[')
		for i, item := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendPlain(b, item, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if v == nil || depth >= plainDepth || len(v) > 8 {
			return b, false
		}
		var kb [8]string
		keys := kb[:0]
		for k := range v { //flrh:orderfree the keys are sorted before anything is written
			if !Plain(k) {
				return b, false
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendPlain(b, v[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// plainDepth bounds how deep AppendPlain follows lists and
// objects; anything deeper goes through the encoder.
const plainDepth = 3
