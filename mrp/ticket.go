package mrp

// TicketView is the reduced interface of an Action Ticket that MRP reads.
// MRP does not own the ticket schema; it only needs to know whether the
// ticket may be decided on.
type TicketView struct {
	TicketID             string   `json:"ticket_id"`
	TicketDigest         string   `json:"ticket_digest"`
	Complete             bool     `json:"complete"`
	MissingFields        []string `json:"missing_fields"`
	PreviewRequired      bool     `json:"preview_required"`
	PreviewShown         bool     `json:"preview_shown"`
	ConfirmationRequired bool     `json:"confirmation_required"`
	ConfirmationReceived bool     `json:"confirmation_received"`
	Status               string   `json:"status"`
	// VerificationOnly is true when the ticket's action declares
	// side_effects = [NONE]: it may run in TEST and in Degraded Safe Mode.
	VerificationOnly bool `json:"verification_only"`
}

// Decidable reports whether MRP may enter DECIDE for this ticket: it is
// complete, any required preview was shown and any required confirmation
// was received. Otherwise MRP stays in HOLD or OPTIONS. The second result
// names what is outstanding.
func (v TicketView) Decidable() (bool, string) {
	switch {
	case !v.Complete:
		return false, "ticket incomplete"
	case v.PreviewRequired && !v.PreviewShown:
		return false, "preview not shown"
	case v.ConfirmationRequired && !v.ConfirmationReceived:
		return false, "confirmation not received"
	}
	return true, ""
}
