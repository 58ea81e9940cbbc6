package main

import (
	"errors"
	"os"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/logic"
)

// FuzzTicketSpec reads arbitrary TICKET.json text as `flrh authority
// gates` does, drafts the ticket, evaluates a gate policy over it and
// resolves the signals: nothing panics, a ticket the spec does not make
// is refused with a *authority.TicketError, and every drafted ticket
// resolves.
func FuzzTicketSpec(f *testing.F) {
	src, err := os.ReadFile("../../authority/testdata/gates.dl")
	if err != nil {
		f.Fatal(err)
	}
	p, err := authority.CompilePolicy("cli/1", "gates.dl", src, logic.Limits{MaxFirings: 1_000_000})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"ticket_id":"ticket:1","action":"payment.send","destination":"dest:shop","scope":"scope:s",` +
		`"parameters":{"amount":50,"currency":"EUR"},"side_effects":["external"],"assessed_risk":"reversible",` +
		`"required_parameters":["amount","iban"]}`))
	f.Add([]byte(`{"ticket_id":"t","side_effects":["bogus"]}`))
	f.Add([]byte(`{"ticket_id":"t","parameters":{"a":[1,{"b":null}],"c":1e400}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, err := readTicketSpec(raw)
		if err != nil {
			return
		}
		tk, err := authority.DraftTicket(spec)
		if err != nil {
			var te *authority.TicketError
			if !errors.As(err, &te) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		ev := p.Evaluate(tk, authority.CapabilityFact(tk.TicketID, "c"))
		if _, err := authority.Resolve(ev.Signals); err != nil {
			t.Fatalf("gates produced a malformed signal: %v", err)
		}
	})
}
