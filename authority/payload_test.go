package authority

import (
	"bytes"
	"slices"
	"testing"
)

// TestPayloadNamesAreThePayloads decides the reference corpus's three
// cases (authorized, approval requested, approval granted) and holds the
// member-name list each control event's preimage was written from to the
// sorted keys of the payload it carries.
func TestPayloadNamesAreThePayloads(t *testing.T) {
	sortedKeys := func(m map[string]string) []string {
		return appendSortedKeys(nil, m)
	}
	check := func(name string, ce *ControlEvent, names []string) {
		t.Helper()
		if ce == nil {
			t.Fatalf("%s: no control event", name)
		}
		if got := sortedKeys(ce.Payload); !slices.Equal(got, names) {
			t.Errorf("%s: payload members %v, names %v", name, got, names)
		}
		if want := controlEventID(nil, ce.Type, eventAuthority[ce.Type], ce.Payload, nil); ce.EventID != want {
			t.Errorf("%s: event id %s, from the payload's own keys %s", name, ce.EventID, want)
		}
	}
	in, _ := fixtureInput(t, "internal")
	d, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	check("authorized", d.Outcomes[0].ControlEvent, authorizedPayloadNames)

	in, _ = fixtureInput(t, "public")
	d, err = Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	check("request", d.Outcomes[0].ControlEvent, requestPayloadNames)

	req := *d.Outcomes[0].ApprovalRequest
	in.Approvals = []PresentedApproval{{Request: req, Approval: Grant(req, 110), Approver: Approver{ID: "actor:fixture-approver", Kind: "human", Role: ApproverRole, Scopes: []string{"scope:artifact-publishers"}}}}
	in.Now = 120
	d, err = Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	check("granted", d.Outcomes[0].ControlEvent, grantedPayloadNames)
}

// TestControlEventPreimageIgnoresWrongNames writes a payload's preimage
// from its own keys, from the right list, and from lists that are not its
// members (a wrong name, a wrong count): every one is the same bytes.
func TestControlEventPreimageIgnoresWrongNames(t *testing.T) {
	payload := map[string]string{"b": "2", "a": "1", "c": "3"}
	auth := eventAuthority[EventEffectAuthorized]
	bytesOf := func(names []string) []byte {
		w := controlEventPreimage(EventEffectAuthorized, auth, payload, names)
		defer w.release()
		if w.err != nil {
			t.Fatal(w.err)
		}
		return append([]byte(nil), w.b...)
	}
	want := bytesOf(nil)
	if !bytes.Contains(want, []byte(`"payload":{"a":"1","b":"2","c":"3"}`)) {
		t.Fatalf("preimage %s", want)
	}
	for _, names := range [][]string{{"a", "b", "c"}, {"a", "b", "d"}, {"a", "b"}, {"a", "b", "c", "d"}} {
		if got := bytesOf(names); !bytes.Equal(got, want) {
			t.Errorf("names %v: %s, want %s", names, got, want)
		}
	}
}
