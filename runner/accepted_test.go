package runner

import (
	"errors"
	"testing"
)

func TestDecodeAccepted(t *testing.T) {
	in, err := DecodeAccepted([]byte(`{"actor":"a","actor_role":"agent","body":{ "b":1, "a":"x" },"capability":"run.input","digest":"d","kind":"input","seq":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.Seq != 3 || in.Kind != "input" || in.Actor != "a" || in.ActorRole != "agent" || in.Capability != "run.input" ||
		in.Digest != "d" || string(in.Body) != `{"a":"x","b":1}` {
		t.Fatalf("decoded %+v (body %s)", in, in.Body)
	}
	if _, err := DecodeAccepted([]byte(`{"body":{"x":1.5},"seq":1}`)); !errors.Is(err, ErrInputNotCanonical) {
		t.Fatalf("a float input: %v", err)
	}
	if _, err := DecodeAccepted([]byte(`{"seq":"one"}`)); err == nil || errors.Is(err, ErrInputNotCanonical) {
		t.Fatalf("an unreadable record: %v", err)
	}
}
