package control

import (
	"errors"
	"reflect"
	"testing"
)

func TestConfigurationRoundTrip(t *testing.T) {
	m := Default()
	c := run(t, m, ev("START", "a"), ev("EVENT_ACCEPTED", "b"), ev("EPOCH_STABLE", "c"), ev("EFFECT_AUTHORIZED", "d"), ev("CANCEL", "e"))
	c.Context = map[string]bool{"intent_durable": true}
	b, err := EncodeConfiguration(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeConfiguration(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, c)
	}
	if err := m.Validate(got); err != nil {
		t.Fatal(err)
	}
	// The decoded configuration steps exactly like the original.
	e := ev("INTENT_COMMITTED", "f")
	if a, b := m.Step(c, e), m.Step(got, e); !reflect.DeepEqual(a, b) {
		t.Error("decoded configuration steps differently")
	}
}

func TestDecodeConfigurationRejects(t *testing.T) {
	cases := []struct {
		name, text string
		code       Code
		pointer    string
	}{
		{"not json", `{`, CodeSyntax, ""},
		{"missing state", `{"pending_interrupts":[],"seq":0}`, CodeSchema, "/state"},
		{"lowercase state", `{"state":"ingest","pending_interrupts":[],"seq":0}`, CodeSchema, "/state"},
		{"duplicate pending", `{"state":"EXECUTE","pending_interrupts":["CANCEL","CANCEL"],"seq":3}`, CodeDuplicate, "/pending_interrupts/1"},
		{"negative seq", `{"state":"INIT","pending_interrupts":[],"seq":-1}`, CodeSchema, "/seq"},
		{"context not bool", `{"state":"INIT","pending_interrupts":[],"seq":0,"context":{"intent_durable":1}}`, CodeSchema, "/context/intent_durable"},
		{"bad head", `{"state":"INIT","pending_interrupts":[],"seq":0,"head":"sha256:xyz"}`, CodeSchema, "/head"},
		{"unknown member", `{"state":"INIT","pending_interrupts":[],"seq":0,"mood":"ok"}`, CodeSchema, "/mood"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeConfiguration([]byte(tc.text))
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || (tc.pointer != "" && e.Pointer != tc.pointer) {
				t.Errorf("got %v, want %s at %q", err, tc.code, tc.pointer)
			}
		})
	}
	// Well-formed but impossible for the table: Validate refuses it.
	c, err := DecodeConfiguration([]byte(`{"state":"PLAN_EFFECTS","pending_interrupts":["CANCEL"],"seq":4}`))
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := Default().Validate(c); !errors.As(err, &e) || e.Pointer != "/pending_interrupts" {
		t.Errorf("validate: %v", err)
	}
}
