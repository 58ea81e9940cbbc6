package frontier

import (
	"bytes"
	"encoding/json"
)

// assertCanonical checks b against an independent canonicalizer: decode with
// encoding/json (numbers kept exact) and re-encode, which sorts object keys
// and drops whitespace. Set-like arrays are already ordered by the writers,
// which other tests check separately.
func assertCanonical(t tb, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := bytes.TrimSuffix(out.Bytes(), []byte("\n"))
	if !bytes.Equal(got, b) {
		t.Fatalf("writer output is not canonical\n got %s\nwant %s", b, got)
	}
}

// tb is the part of testing.TB the fixture helpers need; *rapid.T has it.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}
