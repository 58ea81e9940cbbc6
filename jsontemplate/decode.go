package jsontemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds how deeply a document's arrays and objects nest.
const maxDepth = 64

// Decode reads data as one JSON value: objects as map[string]any with no
// member named twice (a document means one thing, whoever reads it),
// arrays as []any, numbers as json.Number (exact, whatever their size),
// nested at most 64 deep.
func Decode(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, at string, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= maxDepth {
		return nil, errors.New("nested more than " + strconv.Itoa(maxDepth) + " deep at " + pointerOrRoot(at))
	}
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if _, dup := obj[k]; dup {
				return nil, errors.New("member " + strconv.Quote(k) + " named twice in " + pointerOrRoot(at))
			}
			if obj[k], err = readValue(dec, at+"/"+escapeToken(k), depth+1); err != nil {
				return nil, err
			}
		}
		_, err = dec.Token()
		return obj, err
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := readValue(dec, at+"/"+strconv.Itoa(len(arr)), depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err = dec.Token()
		return arr, err
	}
	return nil, errors.New("unexpected " + d.String())
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the top"
	}
	return p
}
