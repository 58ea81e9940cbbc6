package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/protocol"
)

func loadShop(t testing.TB) *Declarative {
	t.Helper()
	b, err := os.ReadFile("testdata/declarative/shop.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var shopVersions = protocol.VersionEnvelope{
	Workflow: "shop/1", StateSchema: "shop-state/1", EventSchema: "shop-event/1",
	GraphSchema: "graph/0", RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: Canonicalization,
	Tool: "none/0", Model: "none/0", Oracle: "o/1", Gate: "g/1", Resolver: "r/0", CompositionProfile: "c/0",
}

func shopEvent(s Snapshot, id string, lt int64, typ string, members protocol.Object) protocol.AcceptedEvent {
	p := protocol.Object{"event_type": typ, "aggregate_id": s.AggregateID, "expected_revision": s.Revision}
	for k, v := range members {
		p[k] = v
	}
	return protocol.AcceptedEvent{
		Kind: protocol.KindAcceptedEvent, EventID: id, Payload: p,
		OccurredAt: "2026-02-01T10:00:00Z", ReceivedAt: "2026-02-01T10:00:00Z", LogicalTime: lt,
		CorrelationID: "run:shop", IdempotencyKey: "in:" + id, Versions: shopVersions,
	}
}

func order(id string, amount int64, notify bool) protocol.Object {
	return protocol.Object{"order_id": id, "amount": amount, "notify": notify,
		"customer": map[string]any{"email": "ada@example.org"}}
}

func TestDeclarativeShop(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)

	tr, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true)))
	if err != nil {
		t.Fatal(err)
	}
	checkTransitionShapeFor(t, d, tr)
	st := tr.NextSnapshot.State["state"].(map[string]any)
	if st["orders"] != int64(1) || st["last_order"] != "order:1" {
		t.Errorf("state %v", st)
	}
	if len(tr.FactDeltas) != 1 || len(tr.EffectProposals) != 1 {
		t.Fatalf("%d facts, %d proposals", len(tr.FactDeltas), len(tr.EffectProposals))
	}
	tuple := tr.FactDeltas[0].Tuple
	if tuple["order"] != "order:1" || tuple["subject"] != "shop:1" || tuple["amount"] != int64(30) {
		t.Errorf("tuple %v", tuple)
	}
	if got := tr.FactDeltas[0].ProvenanceDelta["at"]; got != int64(1) {
		t.Errorf("provenance at = %v", got)
	}
	// The action digest binds the rendered action, "$$" included literally.
	want, _ := ValueDigest(ValueEffectAction, protocol.Object{"template": "order-confirmation", "order": "order:1",
		"to": "ada@example.org", "note": "$literal"})
	if tr.EffectProposals[0].ActionDigest != want {
		t.Errorf("action digest %s, want %s", tr.EffectProposals[0].ActionDigest, want)
	}
	s = tr.NextSnapshot

	// No notification, no proposal.
	tr, err = Step(d, s, shopEvent(s, "evt:2", 2, "order.placed/1", order("order:2", 5, false)))
	if err != nil || len(tr.EffectProposals) != 0 {
		t.Fatalf("quiet order: %v, %v", err, tr)
	}
	s = tr.NextSnapshot

	// A guard refuses an empty order and names its reason.
	_, err = Step(d, s, shopEvent(s, "evt:3", 3, "order.placed/1", order("order:3", 0, false)))
	r := rejectionOf(t, err)
	if r.Code != CodeDomainRejected || r.Context["reason"] != "empty order" {
		t.Errorf("guard: %v", r)
	}
	// A payload of the wrong type is malformed, with the expected type.
	bad := order("order:3", 3, false)
	bad["notify"] = "yes"
	r = rejectionOf(t, second(Step(d, s, shopEvent(s, "evt:3", 3, "order.placed/1", bad))))
	if r.Code != CodeMalformedAcceptedEvent || r.Path != "/accepted_event/payload/notify" || r.Context["expected_type"] != "bool" {
		t.Errorf("type: %v", r)
	}

	// Closing reads the state and closes the aggregate.
	tr, err = Step(d, s, shopEvent(s, "evt:4", 4, "shop.closed/1", protocol.Object{"reason": "end of season"}))
	if err != nil {
		t.Fatal(err)
	}
	if tr.NextSnapshot.Phase != PhaseClosed || tr.FactDeltas[0].Tuple["orders"] != int64(2) {
		t.Errorf("close: %s %v", tr.NextSnapshot.Phase, tr.FactDeltas[0].Tuple)
	}
	s = tr.NextSnapshot
	r = rejectionOf(t, second(Step(d, s, shopEvent(s, "evt:5", 5, "order.placed/1", order("order:5", 1, false)))))
	if r.Code != CodeDomainRejected || r.Path != "/snapshot/phase" {
		t.Errorf("closed: %v", r)
	}
}

func checkTransitionShapeFor(t *testing.T, d Domain, tr *Transition) {
	t.Helper()
	for _, fd := range tr.FactDeltas {
		if err := protocol.Check(fd); err != nil {
			t.Error(err)
		}
	}
	for _, ep := range tr.EffectProposals {
		if err := protocol.Check(ep); err != nil {
			t.Error(err)
		}
	}
	b, _ := tr.NextSnapshot.MarshalJSON()
	v, _ := cjson.Decode(b)
	if _, _, rej := parseSnapshot(d, d.Profile(), v, nil, nil, false); rej != nil {
		t.Errorf("next snapshot invalid: %v", rej)
	}
}

func TestDeclarativeDecide(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	cmd := Command{"type": "order.placed/1", "order_id": "order:9", "amount": int64(2), "notify": true,
		"customer": map[string]any{"email": "x@example.org"}}
	payloads, f := d.Decide(s, cmd)
	if f != nil || len(payloads) != 1 {
		t.Fatalf("decide: %v", f)
	}
	if _, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", payloads[0])); err != nil {
		t.Fatalf("decided payload rejected: %v", err)
	}
	for name, c := range map[string]Command{
		"unknown type":   {"type": "nope/1"},
		"extra member":   {"type": "shop.closed/1", "reason": "x", "extra": true},
		"missing member": {"type": "shop.closed/1"},
		"guard":          {"type": "order.placed/1", "order_id": "o:1", "amount": int64(0), "notify": false, "customer": map[string]any{}},
	} {
		if _, f := d.Decide(s, c); f == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDeclarativeConfigErrors(t *testing.T) {
	base, _ := os.ReadFile("testdata/declarative/shop.json")
	cases := []struct {
		name, from, to, pointer string
	}{
		{"schema version", `"flrh-domain/1"`, `"flrh-domain/2"`, "/schema_version"},
		{"unknown root member", `"max_facts": 2`, `"max_facts": 2, "extra": 1`, "/extra"},
		{"payload type", `"amount": "nonneg_int"`, `"amount": "float"`, "/events/order.placed~11/payload/amount"},
		{"kernel member", `"reason": "string"`, `"aggregate_id": "id"`, "/events/shop.closed~11/payload/aggregate_id"},
		{"unknown payload ref", `"$payload.order_id"}`, `"$payload.nope"}`, "/events/order.placed~11/state/last_order/set"},
		{"unknown state ref", `"$state.orders"`, `"$state.nope"`, "/events/shop.closed~11/facts/0/tuple/orders"},
		{"unknown reference", `"$logical_time"`, `"$wallclock"`, "/events/order.placed~11/facts/0/provenance/at"},
		{"state not initial", `"orders": {"add": 1}`, `"revenue": {"add": 1}`, "/events/order.placed~11/state/revenue"},
		{"bad risk", `"risk_hint": "reversible"`, `"risk_hint": "safe"`, "/events/order.placed~11/proposals/0/risk_hint"},
		{"bad condition", `"close": true`, `"close": "yes"`, "/events/shop.closed~11/close"},
		{"empty tuple", `"tuple": {"predicate": "shop_closed", "subject": "$aggregate_id", "orders": "$state.orders"}`, `"tuple": {}`, "/events/shop.closed~11/facts/0/tuple"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(string(base), c.from, c.to, 1)
			if text == string(base) {
				t.Fatalf("substitution %q did not apply", c.from)
			}
			_, err := Load([]byte(text))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Pointer != c.pointer {
				t.Fatalf("got %v, want a ConfigError at %s", err, c.pointer)
			}
		})
	}
	if _, err := Load([]byte(`{"schema_version": 1.5}`)); err == nil {
		t.Error("float accepted")
	}
}

// misbehaving is a Go domain that breaks output invariants on purpose: the
// kernel must refuse each breach with INVARIANT_VIOLATION.
type misbehaving struct {
	Observation
	mode string
}

func (m misbehaving) Evolve(s Snapshot, e Event) (Evolution, *Fault) {
	ev, f := m.Observation.Evolve(s, e)
	if m.mode == "extra-state" {
		ev.State["smuggled"] = true
	}
	if m.mode == "bad-state" {
		ev.State["observation_count"] = "many"
	}
	return ev, f
}

func (m misbehaving) Emit(s Snapshot, e Event) (Emission, *Fault) {
	em, f := m.Observation.Emit(s, e)
	switch m.mode {
	case "twin-facts":
		em.Facts = append(em.Facts, em.Facts[0])
	case "zero-diff":
		em.Facts[0].Diff = 0
	case "retract":
		em.Facts[0].Diff = -1
	case "no-facts":
		em.Facts = nil
	case "bad-precondition":
		em.Proposals = []Proposal{{EffectType: "x", Action: protocol.Object{"a": int64(1)}, Destination: protocol.Object{"d": int64(1)},
			GoalID: "g", ObligationID: "o", RiskHint: "unknown", Preconditions: []string{"ok", "not an id"}}}
	case "float-tuple":
		em.Facts[0].Tuple["score"] = 0.5
	}
	return em, f
}

func TestDomainCannotBreakInvariants(t *testing.T) {
	s, e := loadInput(t, "observe-no-effect")
	for mode, want := range map[string]string{
		"extra-state":      "next_snapshot_valid",
		"bad-state":        "next_snapshot_valid",
		"no-facts":         "fact_count_within_profile",
		"zero-diff":        "insert_only_facts",
		"retract":          "insert_only_facts",
		"bad-precondition": "proposal_well_formed",
		"float-tuple":      "fact_well_formed",
	} {
		_, err := StepJSON(misbehaving{mode: mode}, s, e)
		r := rejectionOf(t, err)
		if r.Code != CodeInvariantViolation || r.Context["invariant"] != want {
			t.Errorf("%s: got %v, want invariant %s", mode, r, want)
		}
	}
	// Two identical facts: the profile allows one, so the count fires
	// first; with room for two, their shared identity fires.
	r := rejectionOf(t, second(StepJSON(roomy{misbehaving{mode: "twin-facts"}}, s, e)))
	if r.Context["invariant"] != "unique_derivation_ids" {
		t.Errorf("twin facts: %v", r)
	}
}

type roomy struct{ misbehaving }

func (r roomy) Profile() Profile {
	p := r.misbehaving.Profile()
	p.MaxFacts = 2
	return p
}

func TestDeclarativeReplayProperty(tt *testing.T) {
	d := loadShop(tt)
	rapid.Check(tt, func(t *rapid.T) {
		start := NewSnapshot(d, "shop:1", shopVersions)
		s := start
		var events []protocol.AcceptedEvent
		var digests []string
		for i := range rapid.IntRange(1, 10).Draw(t, "n") {
			var ev protocol.AcceptedEvent
			if rapid.IntRange(0, 7).Draw(t, "kind") == 0 {
				ev = shopEvent(s, fmt.Sprintf("evt:%d", i), int64(i), "shop.closed/1", protocol.Object{"reason": "r"})
			} else {
				ev = shopEvent(s, fmt.Sprintf("evt:%d", i), int64(i), "order.placed/1",
					order(fmt.Sprintf("order:%d", i), rapid.Int64Range(0, 3).Draw(t, "amount"), rapid.Bool().Draw(t, "notify")))
			}
			before, _ := s.Digest()
			tr, err := Step(d, s, ev)
			if after, _ := s.Digest(); after != before {
				t.Fatal("input snapshot changed")
			}
			if err != nil {
				continue
			}
			events, digests, s = append(events, ev), append(digests, tr.TransitionDigest), tr.NextSnapshot
		}
		r := start
		for i, ev := range events {
			tr := determinism.Check2(tt, r, ev, func(a Snapshot, b protocol.AcceptedEvent) *Transition {
				tr, err := Step(d, a, b)
				if err != nil {
					t.Fatalf("replay %d: %v", i, err)
				}
				return tr
			})
			if tr.TransitionDigest != digests[i] {
				t.Fatalf("replay %d digest differs", i)
			}
			r = tr.NextSnapshot
		}
	})
}

type badProfile struct {
	Observation
	edit func(p *Profile)
}

func (b badProfile) Profile() Profile {
	p := b.Observation.Profile()
	b.edit(&p)
	return p
}

func TestInconsistentProfileRefused(t *testing.T) {
	s, e := loadInput(t, "observe-no-effect")
	for name, edit := range map[string]func(p *Profile){
		"state shadows kernel":   func(p *Profile) { p.StateMembers = append(p.StateMembers, "revision") },
		"repeated state member":  func(p *Profile) { p.StateMembers = append(p.StateMembers, "observation_count") },
		"payload shadows kernel": func(p *Profile) { p.EventTypes[ObservationEventType] = []string{"aggregate_id"} },
		"no event types":         func(p *Profile) { p.EventTypes = nil },
		"bounds":                 func(p *Profile) { p.MinFacts = 2 },
		"workflow":               func(p *Profile) { p.Workflow = "" },
		"identity domain":        func(p *Profile) { p.FactIdentity = "" },
	} {
		r := rejectionOf(t, second(StepJSON(badProfile{edit: edit}, s, e)))
		if r.Code != CodeInvariantViolation || r.Context["invariant"] != "domain_profile_valid" {
			t.Errorf("%s: %v", name, r)
		}
	}
	if err := CheckProfile(Observation{}.Profile()); err != nil {
		t.Error(err)
	}
	if err := CheckProfile(loadShop(t).Profile()); err != nil {
		t.Error(err)
	}
}
