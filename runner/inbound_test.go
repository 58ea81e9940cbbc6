package runner

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// inboundID spells what fmt.Sprintf and HexDigest spelled.
func TestInboundIDMatchesSprintf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String()
		runID, kind := s.Draw(t, "run"), s.Draw(t, "kind")
		by := Actor{Name: s.Draw(t, "name"), Role: s.Draw(t, "role"), Capability: s.Draw(t, "capability")}
		nanos := rapid.Int64().Draw(t, "nanos")
		b := []byte(s.Draw(t, "body"))
		want := fmt.Sprintf("%s:%s", kind, cjson.HexDigest([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%s",
			runID, by.Name, by.Role, by.Capability, nanos, b)))[:32])
		if got := inboundID(runID, kind, by, nanos, b); got != want {
			t.Fatalf("id %q, want %q", got, want)
		}
	})
}

// An input's bytes are those of encoding its value, whether it came
// canonical or not.
func TestInputBytesMatchMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := []byte(rapid.SampledFrom([]string{
			`{"amount":1250,"payee":"acct:7"}`, `{"payee":"acct:7","amount":1250}`, `{"a":"\u0041"}`, `{"a":[3,1,2]}`,
			`{"kind":"EffectIntent","preconditions":["b","a"]}`, `{"kind":"EffectIntent","preconditions":["a","b"]}`, `[1,2]`, `"x"`, ` {"a":1}`,
		}).Draw(t, "text"))
		if rapid.Bool().Draw(t, "generated") {
			v := map[string]any{rapid.StringMatching(`[a-z"\\]{0,4}`).Draw(t, "key"): rapid.Int64().Draw(t, "n")}
			var err error
			if text, err = cjson.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		v, err := cjson.Decode(text)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := cjson.Marshal(v)
		got, err := inputBytes(text, v)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s: %s %v, want %s %v", text, got, err, want, wantErr)
		}
		if len(got) > 0 && &got[0] == &text[0] {
			t.Fatal("the input's bytes are shared with the caller")
		}
	})
}
