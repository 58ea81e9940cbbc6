package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMayHoldNeverMissesADecodedString holds mayHold to its promise: a
// text it says false of never decodes to a record naming one of the
// strings, however the text spells it (escaped letters, escaped
// underscores, other members around it).
func TestMayHoldNeverMissesADecodedString(t *testing.T) {
	names := []string{"RETRIES_EXHAUSTED", "TIMEOUT", "BUDGET_EXHAUSTED", "receipt"}
	rapid.Check(t, func(t *rapid.T) {
		value := rapid.OneOf(rapid.SampledFrom(names), rapid.SampledFrom([]string{"RETRIES", "TIMEOUTS", "receipts", "BUDGET", ""}), rapid.String()).Draw(t, "value")
		// Spell the value with some characters as \u escapes.
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range value {
			switch {
			case r < 0x20 || r == '"' || r == '\\' || rapid.IntRange(0, 5).Draw(t, "escape") == 0:
				if r > 0xffff {
					enc, _ := json.Marshal(string(r))
					b.Write(enc[1 : len(enc)-1])
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		key := rapid.SampledFrom([]string{"event", "kind"}).Draw(t, "key")
		text := []byte(`{"other":"x","` + key + `":` + b.String() + `,"n":1}`)
		var rec map[string]any
		if err := json.Unmarshal(text, &rec); err != nil {
			t.Fatalf("test text does not decode: %s: %v", text, err)
		}
		got, _ := rec[key].(string)
		for _, n := range names {
			if got == n && !mayHold(text, names...) {
				t.Fatalf("mayHold(%s) = false, but it decodes to %q", text, got)
			}
		}
	})
	if mayHold([]byte(`{"event":"EVENT_ACCEPTED","kind":"input"}`), names...) {
		t.Fatal("mayHold is true of a text naming none of the strings")
	}
}
