package kernel

import (
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// checkTransitionShape asserts the output invariants of the contract on a
// transition: its members are protocol-valid, authority-free, ordered, and
// the next snapshot is itself a valid input.
func checkTransitionShape(t *testing.T, tr *Transition) {
	t.Helper()
	if tr.Kind != KindTransition || tr.SchemaVersion != ResultSchemaVersion || tr.ContractVersion != ContractVersion {
		t.Errorf("header %s/%s/%s", tr.Kind, tr.SchemaVersion, tr.ContractVersion)
	}
	for _, fd := range tr.FactDeltas {
		if err := protocol.Check(fd); err != nil {
			t.Errorf("fact delta invalid: %v", err)
		}
		if fd.CausationID != tr.EventID {
			t.Errorf("fact causation %s, want %s", fd.CausationID, tr.EventID)
		}
	}
	for _, ep := range tr.EffectProposals {
		if err := protocol.Check(ep); err != nil {
			t.Errorf("proposal invalid: %v", err)
		}
		if ep.CauseID != tr.EventID {
			t.Errorf("proposal cause %s, want %s", ep.CauseID, tr.EventID)
		}
		if !slices.IsSorted(ep.Preconditions) {
			t.Error("preconditions not in canonical order")
		}
	}
	b, err := tr.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for _, forbidden := range []string{`"EffectIntent"`, `"capability"`, `"approval_digest"`, `"assessed_risk"`, `"idempotency_key"`, `"authority_digest"`} {
		if strings.Contains(string(b), forbidden) {
			t.Errorf("transition carries %s", forbidden)
		}
	}
	next, err := tr.NextSnapshot.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := cjson.Decode(next)
	if _, _, rej := parseSnapshot(Observation{}, Observation{}.Profile(), v, nil, nil, false); rej != nil {
		t.Errorf("next snapshot is not a valid input: %v", rej)
	}
}

func checkRejectionShape(t *testing.T, r *Rejection) {
	t.Helper()
	if r.Kind != KindRejection || r.SchemaVersion != ResultSchemaVersion || r.ContractVersion != ContractVersion {
		t.Errorf("header %s/%s/%s", r.Kind, r.SchemaVersion, r.ContractVersion)
	}
	if !slices.Contains(Codes, r.Code) {
		t.Errorf("unknown code %s", r.Code)
	}
	if !strings.HasPrefix(r.Path, "/") {
		t.Errorf("path %q is not a pointer", r.Path)
	}
	for k, v := range r.Context {
		switch v.(type) {
		case string, int64, bool, nil:
		default:
			t.Errorf("context %s has a %T", k, v)
		}
	}
	if _, err := r.Canonical(); err != nil {
		t.Errorf("rejection has no canonical form: %v", err)
	}
}
