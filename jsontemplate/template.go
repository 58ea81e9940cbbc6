package jsontemplate

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"flrh.dev/flrh/cjson"
)

// A Template makes a JSON value of a document and named values: a run's
// input of a webhook's delivery, a scheduled run's of its time. It is
// JSON whose strings may name parts of them in braces:
//
//	{/pointer}  the document's value at a JSON pointer (RFC 6901)
//	{$body}     the whole document
//	{$name}     a named value the template was compiled to take
//	            ({$delivery}, {$time}, …)
//
// A string that is one placeholder and nothing else becomes the value
// itself, whatever its type ("{/amount}" gives the number 900); a
// placeholder among other text is written into the string, and must then
// be a string, an integer or a boolean ("refund-{/order/id}"). "{{" and
// "}}" are literal braces. Numbers are integers: a document's number with
// a fraction or an exponent is refused where a template takes it, as
// flrh's inputs take none.
type Template struct {
	root tnode
}

// tnode is one value of a template: a literal, an object or an array of
// nodes, or a string of parts.
type tnode struct {
	lit   any              // a literal value (no placeholder below it)
	obj   map[string]tnode // an object with a placeholder below it
	arr   []tnode          // an array with a placeholder below it
	parts []part           // a string with a placeholder
	kind  byte             // 'l' literal, 'o' object, 'a' array, 's' string
	at    string           // where in the template
}

// part is a piece of a templated string: literal text, or a placeholder
// (ref set).
type part struct {
	text string
	ref  *ref
}

// ref is a placeholder: a body pointer's tokens, or a name ($delivery…).
type ref struct {
	name    string   // "$body", or a named value's name ("$delivery"); "" for a pointer
	pointer string   // the pointer as written
	tokens  []string // its unescaped tokens
}

// Compile reads a template from its JSON text; names are the named
// values ("$delivery", …) it may take besides {$body} and pointers.
func Compile(text []byte, names ...string) (*Template, error) {
	v, err := Decode(text)
	if err != nil {
		return nil, refuse("", "not JSON: %v", err)
	}
	root, err := compileNode(v, "", names)
	if err != nil {
		return nil, err
	}
	return &Template{root: root}, nil
}

// CompileString reads a template that is a string (a run's id, say): its
// text is the string's, braces and all, unquoted.
func CompileString(s string, names ...string) (*Template, error) {
	n, err := compileNode(s, "", names)
	if err != nil {
		return nil, err
	}
	return &Template{root: n}, nil
}

func compileNode(v any, at string, names []string) (tnode, error) {
	switch x := v.(type) {
	case string:
		parts, err := parseParts(x, at, names)
		if err != nil {
			return tnode{}, err
		}
		if len(parts) == 1 && parts[0].ref == nil {
			return tnode{kind: 'l', lit: parts[0].text, at: at}, nil
		}
		if len(parts) == 0 {
			return tnode{kind: 'l', lit: "", at: at}, nil
		}
		return tnode{kind: 's', parts: parts, at: at}, nil
	case json.Number:
		n, err := integer(x)
		if err != nil {
			return tnode{}, refuse(pointerAt(at), "%v", err)
		}
		return tnode{kind: 'l', lit: n, at: at}, nil
	case map[string]any:
		obj := make(map[string]tnode, len(x))
		templated := false
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n, err := compileNode(x[k], at+"/"+escapeToken(k), names)
			if err != nil {
				return tnode{}, err
			}
			obj[k] = n
			templated = templated || n.kind != 'l'
		}
		if !templated {
			return tnode{kind: 'l', lit: literal(obj), at: at}, nil
		}
		return tnode{kind: 'o', obj: obj, at: at}, nil
	case []any:
		arr := make([]tnode, len(x))
		templated := false
		for i, e := range x {
			n, err := compileNode(e, at+"/"+strconv.Itoa(i), names)
			if err != nil {
				return tnode{}, err
			}
			arr[i] = n
			templated = templated || n.kind != 'l'
		}
		if !templated {
			lits := make([]any, len(arr))
			for i, n := range arr {
				lits[i] = n.lit
			}
			return tnode{kind: 'l', lit: lits, at: at}, nil
		}
		return tnode{kind: 'a', arr: arr, at: at}, nil
	default: // bool, nil
		return tnode{kind: 'l', lit: v, at: at}, nil
	}
}

// literal is the value of an object whose members are all literals.
func literal(obj map[string]tnode) map[string]any {
	m := make(map[string]any, len(obj))
	for k, n := range obj {
		m[k] = n.lit
	}
	return m
}

// parseParts splits a template string into text and placeholders.
func parseParts(s, at string, names []string) ([]part, error) {
	var parts []part
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, part{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			text.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			text.WriteByte('}')
			i++
		case c == '}':
			return nil, refuse(pointerAt(at), "a lone } at byte %d (write }} for the brace itself)", i)
		case c == '{':
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] != '}' {
				return nil, refuse(pointerAt(at), "the { at byte %d is not closed (write {{ for the brace itself)", i)
			}
			r, err := parseRef(s[i+1:i+1+end], at, names)
			if err != nil {
				return nil, err
			}
			flush()
			parts = append(parts, part{ref: r})
			i += 1 + end
		default:
			text.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

func parseRef(s, at string, names []string) (*ref, error) {
	if strings.HasPrefix(s, "$") {
		if s != "$body" && !slices.Contains(names, s) {
			known := "{$body}"
			for _, n := range names {
				known += ", {" + n + "}"
			}
			return nil, refuse(pointerAt(at), "no placeholder {%s}: %s or a JSON pointer {/…}", s, known)
		}
		return &ref{name: s}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return nil, refuse(pointerAt(at), "{%s} is not a placeholder: a JSON pointer starts with /, a name with $", s)
	}
	tokens, err := unescapePointer(s)
	if err != nil {
		return nil, refuse(pointerAt(at), "{%s}: %v", s, err)
	}
	return &ref{pointer: s, tokens: tokens}, nil
}

// Values is what a template is rendered with: the document its pointers
// read (nil when none), and its named values by name ("$delivery").
type Values struct {
	Body  any
	Names map[string]string
}

// Render makes the template's value: a value of map[string]any, []any,
// string, int64, bool and nil.
func (t *Template) Render(in Values) (any, error) {
	return t.root.render(in)
}

// RenderString renders a template that makes a string (a run's id).
func (t *Template) RenderString(in Values) (string, error) {
	v, err := t.Render(in)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", refuse("/", "the template makes %s, not a string", kindOf(v))
	}
	return str, nil
}

// RenderCanonical renders the template and encodes its value in flrh's
// canonical JSON (package cjson): an input's bytes.
func (t *Template) RenderCanonical(in Values) ([]byte, error) {
	v, err := t.Render(in)
	if err != nil {
		return nil, err
	}
	return cjson.Marshal(v)
}

// ReadsBody reports whether the template names a part of the document.
func (t *Template) ReadsBody() bool { return t.root.readsBody() }

func (n tnode) readsBody() bool {
	for _, p := range n.parts {
		if p.ref != nil && (p.ref.name == "" || p.ref.name == "$body") {
			return true
		}
	}
	for _, e := range n.obj { //flrh:orderfree any member that reads the body answers true
		if e.readsBody() {
			return true
		}
	}
	return slices.ContainsFunc(n.arr, tnode.readsBody)
}

func (n tnode) render(in Values) (any, error) {
	switch n.kind {
	case 'o':
		m := make(map[string]any, len(n.obj))
		for _, k := range slices.Sorted(maps.Keys(n.obj)) {
			v, err := n.obj[k].render(in)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case 'a':
		a := make([]any, len(n.arr))
		for i, e := range n.arr {
			v, err := e.render(in)
			if err != nil {
				return nil, err
			}
			a[i] = v
		}
		return a, nil
	case 's':
		if len(n.parts) == 1 {
			return n.parts[0].ref.value(in, n.at)
		}
		var b strings.Builder
		for _, p := range n.parts {
			if p.ref == nil {
				b.WriteString(p.text)
				continue
			}
			v, err := p.ref.value(in, n.at)
			if err != nil {
				return nil, err
			}
			switch x := v.(type) {
			case string:
				b.WriteString(x)
			case int64:
				b.WriteString(strconv.FormatInt(x, 10))
			case bool:
				b.WriteString(strconv.FormatBool(x))
			default:
				return nil, refuse(pointerAt(n.at), "%s is %s, which cannot be written into a string", p.ref, kindOf(v))
			}
		}
		return b.String(), nil
	}
	return n.lit, nil
}

func (r *ref) String() string {
	if r.name != "" {
		return "{" + r.name + "}"
	}
	return "{" + r.pointer + "}"
}

// value is what the placeholder names in the delivery.
func (r *ref) value(in Values, at string) (any, error) {
	if r.name != "" && r.name != "$body" {
		return in.Names[r.name], nil
	}
	v, ok := resolve(in.Body, r.tokens)
	if !ok {
		return nil, refuse(pointerAt(at), "the body has nothing at %s", r)
	}
	out, err := plain(v)
	if err != nil {
		return nil, refuse(pointerAt(at), "%s: %v", r, err)
	}
	return out, nil
}

// plain is v with its numbers as int64: the value model of flrh's
// inputs.
func plain(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return integer(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p, err := plain(x[k])
			if err != nil {
				return nil, err
			}
			m[k] = p
		}
		return m, nil
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			p, err := plain(e)
			if err != nil {
				return nil, err
			}
			a[i] = p
		}
		return a, nil
	}
	return v, nil
}

// integer is n as an int64, or why it is not one.
func integer(n json.Number) (int64, error) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, &numberError{string(n)}
	}
	return i, nil
}

type numberError struct{ n string }

func (e *numberError) Error() string {
	return "the number " + e.n + " is not a 64-bit integer; flrh's inputs take integers only (a scaled integer for a fraction)"
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return "a value"
}

func pointerAt(at string) string {
	if at == "" {
		return "/"
	}
	return at
}
