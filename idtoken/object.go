package idtoken

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// object reads data as one JSON object and returns its members, refusing
// a member named twice and anything after the object. encoding/json alone
// keeps the last of two same-named members where another parser may keep
// the first: a header with two "alg" members, or claims with two "sub",
// would mean one thing here and another elsewhere.
func object(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, errors.New("not JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("not JSON")
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errors.New("not JSON")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not JSON")
		}
		if _, dup := m[name]; dup {
			return nil, errors.New("the member " + quote(name) + " is named twice")
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, errors.New("not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return m, nil
}

// quote shows a name from a token or key set in an error, cut short so
// that a hostile value cannot flood a log.
func quote(s string) string {
	const most = 64
	if len(s) > most {
		s = s[:most] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// stringMember reads m[name] as a string; ok is false when it is absent,
// err set when it is there and not a string.
func stringMember(m map[string]json.RawMessage, name string) (s string, ok bool, err error) {
	raw, ok := m[name]
	if !ok {
		return "", false, nil
	}
	// null would unmarshal into "" without complaint.
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", true, errors.New(quote(name) + " is not a string")
	}
	return s, true, nil
}
