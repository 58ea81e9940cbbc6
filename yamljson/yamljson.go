// Package yamljson reads a YAML document as the canonical JSON value it
// spells (package cjson), so that a person may write a workflow bundle's
// JSON files in YAML, with comments, and flrh read exactly one value from
// them.
//
// YAML can spell far more than JSON can hold, and some of it silently
// means something a reader does not expect. Convert therefore takes the
// part of YAML 1.2 that maps one to one onto flrh-cjson and refuses the
// rest, saying where:
//
//   - one document; mappings, sequences and scalars;
//   - a mapping's keys are strings, each once (a key written twice is an
//     error, where YAML parsers commonly keep the last);
//   - plain scalars resolve by YAML 1.2's core schema: true and false are
//     booleans (yes, no, on and off are strings), null and ~ are null,
//     integers (decimal, 0x, 0o) are signed 64-bit integers; a date is the
//     string it is written as; quoted scalars are strings;
//   - floating-point numbers, NaN and infinities are refused, as flrh-cjson
//     refuses them (write a scaled integer);
//   - aliases, merge keys (<<) and tags other than the core schema's
//     (!!binary, !custom) are refused: a value is written out where it is
//     used;
//   - strings must be in Unicode NFC, as flrh-cjson requires.
//
// Every refusal is an *Error with the line and column of the value.
// Convert also returns where each value was written (Positions), so that a
// caller that finds something wrong with the JSON value at a JSON Pointer
// can say where in the YAML it was.
//
// The package is pure: it reads bytes and returns bytes.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"flrh.dev/flrh/cjson"
)

// Error is a YAML document that Convert refuses: where, and why.
type Error struct {
	Line, Column int    // 1-based; Column 0 when the parser gave only a line
	Pointer      string // the JSON Pointer of the value, when it has one
	Detail       string
}

func (e *Error) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Column > 0 {
		where += fmt.Sprintf(", column %d", e.Column)
	}
	if e.Pointer != "" {
		where += " (" + e.Pointer + ")"
	}
	return "yaml: " + where + ": " + e.Detail
}

// Named reports whether a file named name is written in YAML: its name
// ends in .yaml or .yml.
func Named(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// Pos is where a value was written: its first character's line and
// column, 1-based.
type Pos struct{ Line, Column int }

// Positions maps the JSON Pointer of every value of a document ("" for
// the whole) to where it was written.
type Positions map[string]Pos

// At returns where the value at JSON Pointer ptr was written, or, when
// the document did not write it (a member it lacks, say), its nearest
// ancestor that it did.
func (p Positions) At(ptr string) (Pos, bool) {
	if ptr == "/" {
		ptr = ""
	}
	for {
		if pos, ok := p[ptr]; ok {
			return pos, true
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return Pos{}, false
		}
		ptr = ptr[:i]
	}
}

// Convert reads src, one YAML document, and returns the canonical JSON
// bytes (cjson.Encode) of the value it spells, with where each of its
// values was written. A document Convert refuses is an *Error.
func Convert(src []byte) ([]byte, Positions, error) { return convert(src, false) }

// ConvertFloats is Convert for a document read as plain JSON rather than
// flrh-cjson, one that may hold floating-point numbers (an active
// inference model's probabilities, say): a float is taken (NaN and the
// infinities still refused), and the JSON is encoding/json's, its keys
// sorted, with no other rule of flrh-cjson applied.
func ConvertFloats(src []byte) ([]byte, Positions, error) { return convert(src, true) }

func convert(src []byte, floats bool) ([]byte, Positions, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &Error{Line: 1, Detail: "the document is empty"}
		}
		return nil, nil, parseError(err, lineCount(src))
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		return nil, nil, &Error{Line: min(more.Line, lineCount(src)), Column: more.Column, Detail: "a second document: a file holds one"}
	case !errors.Is(err, io.EOF):
		return nil, nil, parseError(err, lineCount(src))
	}
	c := converter{pos: Positions{}, floats: floats, lines: lineCount(src)}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	v, err := c.value(root, "", 0)
	if err != nil {
		return nil, nil, err
	}
	if floats {
		out, err := json.Marshal(v)
		if err != nil {
			return nil, nil, &Error{Line: root.Line, Column: root.Column, Detail: err.Error()}
		}
		return out, c.pos, nil
	}
	out, err := cjson.Encode(v)
	if err != nil {
		var ce *cjson.Error
		if errors.As(err, &ce) {
			e := &Error{Pointer: ce.Pointer, Detail: ce.Detail}
			if ce.Pointer == "/" {
				e.Pointer = ""
			}
			pos, _ := c.pos.At(ce.Pointer)
			e.Line, e.Column = pos.Line, pos.Column
			if e.Detail == "" {
				e.Detail = string(ce.Code)
			}
			return nil, nil, e
		}
		return nil, nil, err
	}
	return out, c.pos, nil
}

// parseError is the parser's refusal as an *Error: its message names the
// line ("yaml: line 3: …"), at most lines (an end the document lacks is
// placed on its last line).
func parseError(err error, lines int) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{Line: 1, Detail: msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, detail, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				e.Line, e.Detail = min(max(line, 1), lines), detail
			}
		}
	}
	return e
}

type converter struct {
	pos    Positions
	floats bool // floating-point numbers are taken (ConvertFloats)
	lines  int  // the document's lines (lineCount)
}

// lineCount is how many lines src has, broken where YAML breaks them: at
// \n, \r\n and a lone \r.
func lineCount(src []byte) int {
	return bytes.Count(src, []byte("\n")) + bytes.Count(src, []byte("\r")) - bytes.Count(src, []byte("\r\n")) + 1
}

// at is where node n was written. The parser places a value the document
// leaves empty after its last line break ("---" alone, "a:" at the end)
// on the line after it: such a value is placed at the end of the last
// line instead, so that every position is on one of the document's lines.
func (c *converter) at(n *yaml.Node) Pos {
	if n.Line > c.lines {
		return Pos{c.lines, 0}
	}
	return Pos{n.Line, n.Column}
}

func (c *converter) fail(n *yaml.Node, ptr, format string, args ...any) *Error {
	p := c.at(n)
	return &Error{Line: p.Line, Column: p.Column, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}

// value converts node n, at JSON Pointer ptr and nesting depth depth, to
// cjson's value model.
func (c *converter) value(n *yaml.Node, ptr string, depth int) (any, error) {
	c.pos[ptr] = c.at(n)
	if depth > cjson.MaxDepth {
		return nil, c.fail(n, ptr, "containers nest more than %d deep", cjson.MaxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nil, c.fail(n, ptr, "an alias (*%s): write the value out where it is used", n.Value)
	case yaml.DocumentNode:
		return nil, c.fail(n, ptr, "the document is empty")
	case yaml.MappingNode:
		if n.Tag != "!!map" {
			return nil, c.fail(n, ptr, "tag %s is not supported", n.Tag)
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return nil, c.fail(k, ptr, "a key must be a string (a merge key << or a complex key is not)")
			}
			if k.Tag != "!!str" {
				return nil, c.fail(k, ptr, "key %s is a %s, not a string: quote it", k.Value, strings.TrimPrefix(k.Tag, "!!"))
			}
			if _, dup := m[k.Value]; dup {
				return nil, c.fail(k, ptr, "key %q is written twice", k.Value)
			}
			child, err := c.value(v, ptr+"/"+cjson.EscapePointer(k.Value), depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = child
		}
		return m, nil
	case yaml.SequenceNode:
		if n.Tag != "!!seq" {
			return nil, c.fail(n, ptr, "tag %s is not supported", n.Tag)
		}
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			child, err := c.value(e, ptr+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			s[i] = child
		}
		return s, nil
	case yaml.ScalarNode:
		return c.scalar(n, ptr)
	}
	return nil, c.fail(n, ptr, "a node of kind %d is not supported", n.Kind)
}

// scalar converts scalar n by its resolved tag.
func (c *converter) scalar(n *yaml.Node, ptr string) (any, error) {
	switch n.Tag {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.fail(n, ptr, "%q is not a boolean", n.Value)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, c.fail(n, ptr, "%s is not a signed 64-bit integer", n.Value)
		}
		return i, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); c.floats && err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
		if c.floats {
			return nil, c.fail(n, ptr, "%s is not a finite number JSON can hold", n.Value)
		}
		return nil, c.fail(n, ptr, "%s is a floating-point number; flrh takes integers only (use a scaled integer, or quote it for a string)", n.Value)
	}
	return nil, c.fail(n, ptr, "tag %s is not supported (quote the value for a string)", n.Tag)
}

// FromJSON writes the JSON document text as YAML in block style, its
// members in the order the text has them, each string quoted where plain
// YAML would read it as something else: Convert (or ConvertFloats, for a
// document with floats) reads it back as the value text holds, but for
// the strings replace names by JSON Pointer, which it holds instead (a
// pointer that names no string is an *Error). The comment, when not "",
// heads the document. Text that is not one JSON value is an *Error.
func FromJSON(text []byte, comment string, replace map[string]string) ([]byte, error) {
	if !json.Valid(text) {
		return nil, &Error{Line: 1, Detail: "not a JSON document"}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, parseError(err, lineCount(text))
	}
	block(&doc)
	if len(doc.Content) == 1 {
		left := len(replace)
		replaceAt(doc.Content[0], "", replace, &left)
		if left > 0 {
			return nil, &Error{Line: 1, Detail: fmt.Sprintf("%d of the pointers to replace name no string", left)}
		}
	}
	if comment != "" && len(doc.Content) == 1 {
		doc.Content[0].HeadComment = comment
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, &Error{Line: 1, Detail: err.Error()}
	}
	if err := enc.Close(); err != nil {
		return nil, &Error{Line: 1, Detail: err.Error()}
	}
	return b.Bytes(), nil
}

// replaceAt sets the value of each string scalar at or below n (at JSON
// Pointer ptr) that replace names, counting down left.
func replaceAt(n *yaml.Node, ptr string, replace map[string]string, left *int) {
	switch n.Kind {
	case yaml.ScalarNode:
		if v, ok := replace[ptr]; ok && n.Tag == "!!str" {
			n.Value = v
			*left--
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			replaceAt(n.Content[i+1], ptr+"/"+cjson.EscapePointer(n.Content[i].Value), replace, left)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			replaceAt(c, ptr+"/"+strconv.Itoa(i), replace, left)
		}
	}
}

// block clears the flow and quoting styles JSON's syntax gave n and
// every node below it, so that the encoder writes block style and quotes
// only what needs it.
func block(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		block(c)
	}
}
