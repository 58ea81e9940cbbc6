package authority

import (
	"bytes"
	"errors"
	"testing"

	"flrh.dev/flrh/cjson"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProducedObjectsValidate(t *testing.T) {
	in, _ := fixtureInput(t, "public")
	d, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	o := d.Outcomes[0]
	q := *o.ApprovalRequest
	a := Grant(q, 110)
	shaped, _ := DraftTicket(baseSpec())
	limit := int64(10)
	shaped, _ = Shape(shaped, Constraint{Gate: "G2", Rule: "r", Field: "parameters/amount", Max: &limit})
	sc := in.Capabilities[0][0]
	for kind, text := range map[string][]byte{
		"ActionTicket":     mustJSON(t, o.Ticket),
		"HApprovalRequest": mustJSON(t, q),
		"HApproval":        mustJSON(t, a.Wire()),
		"SignedCapability": mustJSON(t, sc),
		"Capability":       mustJSON(t, sc.Capability),
	} {
		if err := Validate(kind, text); err != nil {
			t.Errorf("%s: %v\n%s", kind, err, text)
		}
	}
	if err := Validate("ActionTicket", mustJSON(t, shaped)); err != nil {
		t.Errorf("shaped ticket: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	tk, _ := DraftTicket(baseSpec())
	good := mustJSON(t, tk)
	cases := []struct {
		name, kind string
		text       []byte
		code, path string
	}{
		{"extra member", "ActionTicket", bytes.Replace(good, []byte(`{"action"`), []byte(`{"extra":1,"action"`), 1), "SCHEMA_VIOLATION", "/"},
		{"NONE not alone", "ActionTicket", bytes.Replace(good, []byte(`"side_effects":["WRITE","EXTERNAL"]`), []byte(`"side_effects":["NONE","WRITE"]`), 1), "SCHEMA_VIOLATION", "/side_effects"},
		{"bad digest", "ActionTicket", bytes.Replace(good, []byte(`"ticket_digest":"sha256:`), []byte(`"ticket_digest":"sha1:`), 1), "SCHEMA_VIOLATION", "/ticket_digest"},
		{"float", "ActionTicket", bytes.Replace(good, []byte(`"amount":500`), []byte(`"amount":5.5`), 1), "CANONICALIZATION_VIOLATION", "/parameters/amount"},
		{"unknown kind", "Rocket", good, "SCHEMA_VIOLATION", "/"},
		{"bad signature", "SignedCapability", []byte(`{"capability":{"id":"c","effect_type":"e","destination":"d:*","scopes":["s"],"limits":null,"not_before":0,"expiry":1,"parent":""},"key_id":"ed25519:00","signature":"zz"}`), "SCHEMA_VIOLATION", "/key_id"},
	}
	for _, c := range cases {
		err := Validate(c.kind, c.text)
		var r *Rejection
		if !errors.As(err, &r) || r.Code != c.code || r.Path != c.path {
			t.Errorf("%s: %v (path %v), want %s at %s", c.name, err, func() string {
				if r != nil {
					return r.Path
				}
				return ""
			}(), c.code, c.path)
		}
	}
}

func TestDecodeTicketRoundTrip(t *testing.T) {
	tk, _ := DraftTicket(baseSpec())
	limit := int64(7)
	tk, _ = Shape(tk, Constraint{Gate: "G2", Rule: "r", Field: "parameters/amount", Max: &limit})
	tk, _ = Advance(tk, TicketShowPreview)
	text := mustJSON(t, tk)
	back, err := DecodeTicket(text)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustJSON(t, back), text) {
		t.Fatalf("round trip changed the ticket:\n%s\n%s", mustJSON(t, back), text)
	}
	// Forged content or status is caught.
	for _, forge := range [][2]string{{`"amount":7`, `"amount":8`}, {`"ticket_status":"AWAITING_CONFIRMATION"`, `"ticket_status":"READY"`}, {`"preview_shown":true`, `"preview_shown":false`}} {
		if _, err := DecodeTicket(bytes.Replace(text, []byte(forge[0]), []byte(forge[1]), 1)); err == nil {
			t.Errorf("forged %s accepted", forge[1])
		}
	}
}

// FuzzDecodeTicket: any bytes are either a verified ticket that re-encodes
// to the same bytes' canonical form, or a typed error; never a panic.
func FuzzDecodeTicket(f *testing.F) {
	tk, _ := DraftTicket(baseSpec())
	b, _ := cjson.Marshal(tk)
	f.Add(b)
	f.Add([]byte(`{"kind":"ActionTicket"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeTicket(data)
		if err != nil {
			return
		}
		canonical, cerr := cjson.Canonicalize(data)
		if cerr != nil {
			t.Fatalf("accepted non-canonicalizable input: %v", cerr)
		}
		if again, _ := cjson.Marshal(got); !bytes.Equal(again, canonical) {
			t.Fatalf("accepted ticket does not round-trip")
		}
	})
}
