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
		act := rapid.Uint64().Draw(t, "act")
		b := []byte(s.Draw(t, "body"))
		want := fmt.Sprintf("%s:%s", kind, cjson.HexDigest([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%s",
			runID, by.Name, by.Role, by.Capability, nanos, act, b)))[:32])
		if got := inboundID(runID, kind, by, nanos, act, b); got != want {
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

// Alike acts one runner makes at one clock reading are each an act: each
// reaches the run's inbox, none is taken for another's resubmission. (A
// person answering again after a refusal, within one tick of a coarse
// clock, was told the act was taken while it never reached the run.) One
// act submitted twice is still taken once.
func TestAlikeActsAtOneInstantAreEachTaken(t *testing.T) {
	h := newHarness(t)
	h.start("waits", large)
	for range 3 {
		if err := h.r.Submit(ctx, "waits", []byte(small), inputter); err != nil {
			t.Fatal(err)
		}
	}
	in, err := h.store.Inbox(ctx, "waits", true)
	if err != nil || len(in) != 3 {
		t.Fatalf("pending inbox %d entries (%v), want the three acts", len(in), err)
	}
	if in[0].ID == in[1].ID || in[1].ID == in[2].ID || in[0].ID == in[2].ID {
		t.Fatalf("acts share ids: %s %s %s", in[0].ID, in[1].ID, in[2].ID)
	}
	again := in[0]
	again.Consumed, again.Seq = false, 0
	if err := h.store.Submit(ctx, again); err != nil {
		t.Fatal(err)
	}
	if in, _ := h.store.Inbox(ctx, "waits", true); len(in) != 3 {
		t.Fatalf("an act submitted again made %d entries, want 3", len(in))
	}
}
