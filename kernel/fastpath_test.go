package kernel

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// The step writes its own objects as bytes and skips round trips for values
// already in the cjson model. These tests hold every such fast path to the
// slow path it stands beside (or to the map-building code it replaced),
// byte for byte, on drawn values that include the awkward cases: kinds
// with set-like members, non-NFC text, non-ASCII keys, Go values outside
// the model, and nesting near the depth limit.

var awkwardStrings = []string{"", "a", "order:1", "kind", "EffectProposal", "FStateSnapshot", "é", "e\u0301", "Straße",
	"東京", "line\nbreak", "q\"uote", "back\\slash", "\x01", "\xff", "b/c", "m~n", "sha256:" + string(bytes.Repeat([]byte("ab"), 32))}

var awkwardKeys = []string{"a", "b", "kind", "preconditions", "proposal_ids", "output_digests", "z", "b/c", "m~n", "é", ""}

// genValue draws a value that is usually in the cjson model and sometimes
// a Go value beside it.
func genValue(t *rapid.T, depth int, label string) any {
	n := rapid.IntRange(0, 13).Draw(t, label)
	if depth > 3 && n >= 8 {
		n %= 8
	}
	switch n {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, label+"b")
	case 2:
		return rapid.Int64().Draw(t, label+"i")
	case 3, 4:
		return rapid.SampledFrom(awkwardStrings).Draw(t, label+"s")
	case 5:
		return int(rapid.IntRange(-5, 5).Draw(t, label+"int"))
	case 6:
		return rapid.SampledFrom([]any{1.5, []string{"x", "y"}, int32(4), struct{ A int64 }{3}, protocol.IDSet{"b", "a"},
			map[string]any(nil), []any(nil), protocol.Object(nil), protocol.Object{}, map[string]any{}, []any{}}).Draw(t, label+"go")
	case 7:
		return deepNest(rapid.IntRange(120, 130).Draw(t, label+"depth"))
	case 8, 9, 10:
		m := map[string]any{}
		for i := rapid.IntRange(0, 4).Draw(t, label+"n"); i > 0; i-- {
			m[rapid.SampledFrom(awkwardKeys).Draw(t, label+"k")] = genValue(t, depth+1, label+"m")
		}
		if rapid.IntRange(0, 5).Draw(t, label+"obj") == 0 {
			return protocol.Object(m)
		}
		return m
	default:
		a := []any{}
		for i := rapid.IntRange(0, 4).Draw(t, label+"n"); i > 0; i-- {
			a = append(a, genValue(t, depth+1, label+"a"))
		}
		return a
	}
}

func deepNest(depth int) any {
	v := any("leaf")
	for i := 0; i < depth; i++ {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"n": v}
		}
	}
	return v
}

func genObject(t *rapid.T, label string) protocol.Object {
	o := protocol.Object{}
	for i := rapid.IntRange(0, 4).Draw(t, label+"n"); i > 0; i-- {
		o[rapid.SampledFrom(awkwardKeys).Draw(t, label+"k")] = genValue(t, 1, label+"v")
	}
	if rapid.IntRange(0, 4).Draw(t, label+"kinded") == 0 {
		o["kind"] = rapid.SampledFrom([]string{"EffectProposal", "StableProposalBatch", "ActionReceipt", "FactDelta"}).Draw(t, label+"kind")
		o["preconditions"] = []any{"z", "a", rapid.SampledFrom([]string{"a", "m", "e\u0301"}).Draw(t, label+"pre")}
	}
	return o
}

func genEvent(t *rapid.T) Event {
	return Event{
		ID:            rapid.SampledFrom([]string{"evt:1", "e", "x.y_z:/-9"}).Draw(t, "id"),
		LogicalTime:   rapid.Int64Min(0).Draw(t, "lt"),
		CorrelationID: rapid.SampledFrom([]string{"run:1", "c"}).Draw(t, "corr"),
		Versions: protocol.VersionEnvelope{
			Workflow: "w/1", StateSchema: "s/1", EventSchema: "e/1", GraphSchema: "g/0", RuleSet: rapid.SampledFrom([]string{"rules/0", "r+1"}).Draw(t, "rules"),
			Dataflow: "dataflow/0", Canonicalization: Canonicalization, Tool: "t/0", Model: "m/0", Oracle: "o/1", Gate: "g/1",
			Resolver: "r/0", CompositionProfile: "c/0",
		},
	}
}

func TestCanonCopyMatchesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0, "v")
		c, ok := canonCopy(v, 0, false)
		if !ok {
			return
		}
		rt, err := toValue(v)
		if m, isMap := c.(map[string]any); isMap && !rootSetFree(m) {
			return // the round trip sorts set-like members; canonCopy's callers never take that case
		}
		if err != nil {
			t.Fatalf("canonCopy accepted a value the round trip refuses: %v", err)
		}
		if !reflect.DeepEqual(c, rt) {
			t.Fatalf("canonCopy %#v, round trip %#v", c, rt)
		}
		a, err1 := cjson.Encode(c)
		b, err2 := cjson.Encode(v)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("encodings differ: %s %v / %s %v", a, err1, b, err2)
		}
	})
}

// genStable draws values mostly inside the exact types canonCopy makes,
// with the awkward strings and keys, a nil container or a Go int now and
// then: the values canonStable must sort.
func genStable(t *rapid.T, depth int, label string) any {
	n := rapid.IntRange(0, 9).Draw(t, label)
	if depth > 3 && n >= 5 {
		n %= 5
	}
	switch n {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, label+"b")
	case 2:
		return rapid.Int64().Draw(t, label+"i")
	case 3:
		return rapid.SampledFrom(awkwardStrings).Draw(t, label+"s")
	case 4:
		return rapid.SampledFrom([]any{1, map[string]any(nil), []any(nil), protocol.Object{}, "plain", int64(7)}).Draw(t, label+"odd")
	case 5, 6, 7:
		m := map[string]any{}
		for i := rapid.IntRange(0, 4).Draw(t, label+"n"); i > 0; i-- {
			m[rapid.SampledFrom(awkwardKeys).Draw(t, label+"k")] = genStable(t, depth+1, label+"m")
		}
		return m
	default:
		a := []any{}
		for i := rapid.IntRange(0, 4).Draw(t, label+"n"); i > 0; i-- {
			a = append(a, genStable(t, depth+1, label+"a"))
		}
		return a
	}
}

// TestCanonStableIsItsOwnCopy: a value canonStable accepts is one canonCopy
// accepts and returns unchanged, types and nil-ness included; one it
// refuses is one canonCopy refuses or changes.
func TestCanonStableIsItsOwnCopy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var v any
		if rapid.Bool().Draw(t, "any") {
			v = genValue(t, 0, "v")
		} else {
			v = genStable(t, 0, "v")
		}
		if rapid.IntRange(0, 9).Draw(t, "deep") == 0 {
			v = deepNest(rapid.IntRange(120, 130).Draw(t, "depth"))
		}
		depth := rapid.IntRange(0, 3).Draw(t, "at")
		reflected := rapid.Bool().Draw(t, "reflected")
		c, ok := canonCopy(v, depth, reflected)
		same := ok && reflect.DeepEqual(c, v) && reflect.TypeOf(c) == reflect.TypeOf(v)
		if stable := canonStable(v, depth, reflected); stable != same {
			t.Fatalf("canonStable %v, canonCopy %v and %#v from %#v", stable, ok, c, v)
		}
		if m, isMap := v.(map[string]any); isMap && m != nil {
			cm, ok := canonCopyMap(m, depth, reflected)
			if canonStableMap(m, depth, reflected) != (ok && reflect.DeepEqual(cm, m)) {
				t.Fatalf("canonStableMap disagrees with canonCopyMap on %#v", m)
			}
		}
	})
}

func TestBuildFactMatchesSlowPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Observation{}.Profile()
		p.FactIdentity = rapid.SampledFrom([]string{"observation-fact-value", "déclaré", "e\u0301"}).Draw(t, "identity")
		e := genEvent(t)
		f := Fact{Tuple: genObject(t, "tuple"), Provenance: genObject(t, "prov"), Diff: rapid.SampledFrom([]int64{1, -1, 0}).Draw(t, "diff")}
		fd, b, ok := buildFact(p, e, f, rapid.Bool().Draw(t, "own"), drawStepStrings(t), drawCanonRoom(t))
		var sfd protocol.FactDelta
		var sb []byte
		var sok bool
		if (f.Diff == 1 || f.Diff == -1) && len(f.Tuple) > 0 && len(f.Provenance) > 0 {
			sfd, sb, sok = buildFactSlow(p, e, f)
		}
		if ok != sok || !bytes.Equal(b, sb) || !reflect.DeepEqual(fd, sfd) {
			t.Fatalf("fast %v %s %#v\nslow %v %s %#v", ok, b, fd, sok, sb, sfd)
		}
		if ok {
			if err := protocol.ValidateValue(protocol.KindFactDelta, mustValue(t, fd)); err != nil {
				t.Fatalf("fact fails its schema: %v", err)
			}
		}
	})
}

func TestBuildProposalMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := genEvent(t)
		pr := Proposal{
			EffectType:   rapid.SampledFrom([]string{"mail.send", "x", "not an id"}).Draw(t, "type"),
			Action:       genObject(t, "action"),
			Destination:  genObject(t, "dest"),
			GoalID:       rapid.SampledFrom([]string{"goal:1", "g"}).Draw(t, "goal"),
			ObligationID: rapid.SampledFrom([]string{"obligation:1", "o"}).Draw(t, "obl"),
			RiskHint:     rapid.SampledFrom([]string{"reversible", "unknown", "read_only", "high_risk_external", "bogus"}).Draw(t, "risk"),
		}
		for i := rapid.IntRange(-1, 5).Draw(t, "npre"); i >= 0; i-- {
			if pr.Preconditions == nil {
				pr.Preconditions = []string{}
			}
			pr.Preconditions = append(pr.Preconditions, rapid.SampledFrom([]string{"a", "b", "a:1", "a-1", "a.b", "B", "9", "a_b", "a/b", "ab", "x y"}).Draw(t, "pre"))
		}
		ep, b, ok := buildProposal(e, pr, drawChecked(t, e.Versions), drawStepStrings(t), drawCanonRoom(t))
		rep, rb, rok := referenceBuildProposal(e, pr)
		if ok != rok || !bytes.Equal(b, rb) || !reflect.DeepEqual(ep, rep) {
			t.Fatalf("fast %v %s %#v\nreference %v %s %#v", ok, b, ep, rok, rb, rep)
		}
	})
}

func TestTransitionDigestMatchesValue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := func(label string) string { return rapid.SampledFrom(awkwardStrings).Draw(t, label) }
		var facts, props [][]byte
		for i := rapid.IntRange(0, 3).Draw(t, "nf"); i > 0; i-- {
			facts = append(facts, []byte(str("f")))
		}
		for i := rapid.IntRange(0, 3).Draw(t, "np"); i > 0; i-- {
			props = append(props, []byte(str("p")))
		}
		id, prior, next := str("id"), str("prior"), str("next")
		got, err1 := transitionDigest(drawStepStrings(t), id, prior, next, facts, props)
		want, err2 := transitionDigestValue(id, prior, next, facts, props)
		if got != want || (err1 == nil) != (err2 == nil) {
			t.Fatalf("fast %s %v, value %s %v", got, err1, want, err2)
		}
	})
}

func TestEventValueMatchesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := protocol.AcceptedEvent{
			Kind:    rapid.SampledFrom([]string{protocol.KindAcceptedEvent, "EffectProposal", "é"}).Draw(t, "kind"),
			EventID: rapid.SampledFrom(awkwardStrings).Draw(t, "id"), Payload: genObject(t, "payload"),
			OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: rapid.SampledFrom(awkwardStrings).Draw(t, "received"),
			LogicalTime: rapid.Int64().Draw(t, "lt"), CorrelationID: "run:1", IdempotencyKey: "k",
			Versions: genEvent(t).Versions,
		}
		if rapid.Bool().Draw(t, "nilPayload") {
			e.Payload = nil
		}
		if rapid.Bool().Draw(t, "cause") {
			c := rapid.SampledFrom(awkwardStrings).Draw(t, "causation")
			e.CausationID = &c
		}
		v, ok := eventValue(e)
		if !ok {
			return
		}
		rt, err := toValue(e)
		if err != nil || !reflect.DeepEqual(any(v), rt) {
			t.Fatalf("eventValue %#v, round trip %#v %v", v, rt, err)
		}
		if _, err := cjson.Encode(v); err != nil {
			t.Fatalf("eventValue accepted an event that does not encode: %v", err)
		}
	})
}

// genSnapshot draws a snapshot that is often valid for the observation
// domain and often not.
func genSnapshot(t *rapid.T) Snapshot {
	s := Snapshot{
		AggregateID: rapid.SampledFrom([]string{"agg:1", "work:1", "e\u0301", "not an id"}).Draw(t, "agg"),
		Revision:    rapid.Int64Range(-1, 1<<62).Draw(t, "rev"),
		Phase:       rapid.SampledFrom([]string{PhaseOpen, PhaseClosed, "ajar"}).Draw(t, "phase"),
		Versions:    genEvent(t).Versions,
		State: protocol.Object{"observation_count": rapid.SampledFrom([]any{int64(0), int64(7), int(3), int64(-1), "x"}).Draw(t, "count"),
			"last_observation_digest": rapid.SampledFrom([]any{nil, "sha256:" + string(bytes.Repeat([]byte("ab"), 32)), "e\u0301"}).Draw(t, "digest")},
	}
	if rapid.Bool().Draw(t, "seen") {
		lt := rapid.Int64Range(-1, 100).Draw(t, "lt")
		id := rapid.SampledFrom([]string{"evt:0", "bad id"}).Draw(t, "last")
		s.LastLogicalTime, s.LastEventID = &lt, &id
	}
	if rapid.IntRange(0, 3).Draw(t, "odd") == 0 {
		s.Versions.Tool = rapid.SampledFrom([]string{"é", "-x", ""}).Draw(t, "tool")
	}
	for k, v := range genObject(t, "extra") {
		if rapid.Bool().Draw(t, "keep") {
			s.State[k] = v
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "drop") == 0 {
		delete(s.State, "last_observation_digest")
	}
	return s
}

func TestAppendSnapshotMatchesEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t)
		want, werr := cjson.Encode(s.Wire())
		got, ok := appendSnapshot(nil, &s, false, drawChecked(t, s.Versions))
		if ok && (werr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("appendSnapshot %s\nEncode        %s %v", got, want, werr)
		}
		mj, err := s.MarshalJSON()
		if !bytes.Equal(mj, want) || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("MarshalJSON %s %v, Encode %s %v", mj, err, want, werr)
		}
	})
}

func TestCanonCheckAgreesWithCanonCopy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0, "v")
		depth := rapid.IntRange(0, 3).Draw(t, "depth")
		reflected := rapid.Bool().Draw(t, "reflected")
		_, ok := canonCopy(v, depth, reflected)
		if canonCheck(v, depth, reflected) != ok {
			t.Fatalf("canonCheck %v, canonCopy %v", !ok, ok)
		}
	})
}

// TestNextSnapshotMatchesSlowPath: apply builds a next snapshot's kernel
// members from checked values, so only its state varies here.
func TestNextSnapshotMatchesSlowPath(tt *testing.T) {
	shop := loadShop(tt)
	rapid.Check(tt, func(t *rapid.T) {
		next := genSnapshot(t)
		lt, id := rapid.Int64Min(0).Draw(t, "lt"), "evt:1"
		next.AggregateID, next.Revision, next.LastLogicalTime, next.LastEventID = "agg:1", rapid.Int64Min(1).Draw(t, "rev"), &lt, &id
		next.Phase = rapid.SampledFrom([]string{PhaseOpen, PhaseClosed}).Draw(t, "phase")
		next.Versions = genEvent(t).Versions
		for k, v := range genObject(t, "state") {
			next.State[k] = v
		}
		var d Domain = Observation{}
		if rapid.Bool().Draw(t, "declarative") {
			d = shop
			next.State = protocol.Object{"state": genValue(t, 1, "shopState")}
			if rapid.Bool().Draw(t, "shopValid") {
				next.State["state"] = map[string]any{"orders": genValue(t, 2, "orders"), "last_order": genValue(t, 2, "last")}
			}
		}
		p := d.Profile()
		st, b, verdict, _ := nextSnapshot(d, p, next)
		sst, sb, sverdict := nextSnapshotSlow(d, p, next)
		if verdict != sverdict || !bytes.Equal(b, sb) || !reflect.DeepEqual(st, sst) {
			t.Fatalf("fast %q %s %#v\nslow %q %s %#v", verdict, b, st, sverdict, sb, sst)
		}
	})
}

// TestTypedStepMatchesValueStep holds Step's typed fast path to the value
// path it stands beside (the snapshot's wire map and the event's value
// form), result bytes and next state included.
func TestTypedStepMatchesValueStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t)
		if rapid.Bool().Draw(t, "validBase") {
			s = NewSnapshot(Observation{}, "agg:1", genEvent(t).Versions)
			s.Versions.Workflow, s.Versions.StateSchema, s.Versions.EventSchema = ObservationWorkflow, ObservationStateSchema, ObservationEventSchema
		}
		obs := genObject(t, "obs")
		if len(obs) == 0 {
			obs["n"] = int64(1)
		}
		var req any
		if rapid.Bool().Draw(t, "effect") {
			req = map[string]any{"effect_type": "mail.send", "action": genObject(t, "action"), "destination": map[string]any{"a": "b"},
				"goal_id": "g:1", "obligation_id": "o:1", "declared_risk_hint": "unknown", "preconditions": []any{"b", "a"}}
		}
		e := protocol.AcceptedEvent{
			Kind: protocol.KindAcceptedEvent, EventID: rapid.SampledFrom([]string{"evt:1", "é"}).Draw(t, "id"),
			Payload: protocol.Object{"event_type": ObservationEventType, "aggregate_id": s.AggregateID, "expected_revision": s.Revision,
				"observation": obs, "mark_complete": rapid.Bool().Draw(t, "close"), "effect_request": req},
			OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: "2026-01-01T00:00:00Z", LogicalTime: rapid.Int64Range(-1, 200).Draw(t, "lt"),
			CorrelationID: "run:1", IdempotencyKey: "k", Versions: s.Versions,
		}
		if rapid.IntRange(0, 3).Draw(t, "mutate") == 0 {
			e.Payload[rapid.SampledFrom([]string{"observation", "extra", "expected_revision", "event_type"}).Draw(t, "member")] = genValue(t, 1, "mutation")
		}
		var d Domain = Observation{}
		if rapid.Bool().Draw(t, "odd") {
			d = misbehaving{mode: rapid.SampledFrom([]string{"extra-state", "bad-state", "twin-facts", "retract", "float-tuple"}).Draw(t, "mode")}
		}
		got, gerr := Step(d, s, e)
		want, werr := stepWire(d, s, e)
		if gb, wb := resultBytes(t, got, gerr), resultBytes(t, want, werr); !bytes.Equal(gb, wb) {
			t.Fatalf("typed %s\nvalue %s", gb, wb)
		}
		if got != nil && !reflect.DeepEqual(got.NextSnapshot.State, want.NextSnapshot.State) {
			t.Fatalf("next state %#v / %#v", got.NextSnapshot.State, want.NextSnapshot.State)
		}
	})
}

func resultBytes(t interface {
	Fatalf(string, ...any)
	Fatal(...any)
}, tr *Transition, err error) []byte {
	if err != nil {
		r, ok := err.(*Rejection)
		if !ok {
			t.Fatalf("not a rejection: %v", err)
		}
		b, err := r.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, err := tr.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProfileValidAgreesWithCheckProfile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		member := rapid.SampledFrom([]string{"a", "b", "kind", "revision", "event_type", "aggregate_id", "c"})
		p := Profile{
			Workflow:     rapid.SampledFrom([]string{"w/1", "", "-bad"}).Draw(t, "wf"),
			StateSchema:  "s/1",
			EventSchema:  rapid.SampledFrom([]string{"e/1", "e 1"}).Draw(t, "es"),
			EventTypes:   map[string][]string{},
			StateMembers: rapid.SliceOfN(member, 0, 4).Draw(t, "state"),
			FactIdentity: rapid.SampledFrom([]string{"f", ""}).Draw(t, "fi"),
			MinFacts:     rapid.IntRange(-1, 2).Draw(t, "min"),
			MaxFacts:     rapid.IntRange(-1, 2).Draw(t, "max"),
			MaxProposals: rapid.IntRange(-1, 2).Draw(t, "props"),
		}
		for i := rapid.IntRange(0, 3).Draw(t, "ntypes"); i > 0; i-- {
			p.EventTypes[rapid.SampledFrom([]string{"t/1", "u/1", "not id"}).Draw(t, "type")] = rapid.SliceOfN(member, 0, 4).Draw(t, "payload")
		}
		if profileValid(p) != (CheckProfile(p) == nil) {
			t.Fatalf("profileValid %v, CheckProfile %v", profileValid(p), CheckProfile(p))
		}
	})
}

func mustValue(t *rapid.T, v any) any {
	b, err := cjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cjson.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// referenceBuildProposal is buildProposal as it was before it wrote bytes
// directly: a value map, two identity encodings, the protocol schema and a
// final encoding.
func referenceBuildProposal(e Event, pr Proposal) (protocol.EffectProposal, []byte, bool) {
	if !cjson.ValidID(pr.EffectType) || !cjson.ValidID(pr.GoalID) || !cjson.ValidID(pr.ObligationID) ||
		!riskHints[pr.RiskHint] || len(pr.Action) == 0 || len(pr.Destination) == 0 {
		return protocol.EffectProposal{}, nil, false
	}
	type item struct {
		b []byte
		s string
	}
	items := make([]item, len(pr.Preconditions))
	for i, s := range pr.Preconditions {
		if !cjson.ValidID(s) {
			return protocol.EffectProposal{}, nil, false
		}
		items[i] = item{cjson.AppendString(nil, s), s}
	}
	sort.Slice(items, func(i, j int) bool { return bytes.Compare(items[i].b, items[j].b) < 0 })
	pre := make([]string, len(items))
	for i, it := range items {
		if i > 0 && it.s == items[i-1].s {
			return protocol.EffectProposal{}, nil, false
		}
		pre[i] = it.s
	}
	action, err1 := ValueDigest(ValueEffectAction, pr.Action)
	dest, err2 := ValueDigest(ValueEffectDestination, pr.Destination)
	if err1 != nil || err2 != nil {
		return protocol.EffectProposal{}, nil, false
	}
	preValues := make([]any, len(pre))
	for i, s := range pre {
		preValues[i] = s
	}
	value := map[string]any{
		"kind":               protocol.KindEffectProposal,
		"effect_type":        pr.EffectType,
		"action_digest":      action,
		"cause_id":           e.ID,
		"correlation_id":     e.CorrelationID,
		"destination_digest": dest,
		"goal_id":            pr.GoalID,
		"obligation_id":      pr.ObligationID,
		"declared_risk_hint": pr.RiskHint,
		"preconditions":      preValues,
		"versions":           versionsValue(e.Versions),
	}
	id, err1 := identity("proposal", identityProposal, value)
	dedup, err2 := identity("proposal-dedup", identityProposalDedup, value)
	if err1 != nil || err2 != nil {
		return protocol.EffectProposal{}, nil, false
	}
	value["proposal_id"] = id
	value["proposal_dedup_key"] = dedup
	if protocol.ValidateValue(protocol.KindEffectProposal, value) != nil {
		return protocol.EffectProposal{}, nil, false
	}
	canon, err := cjson.Encode(value)
	if err != nil {
		return protocol.EffectProposal{}, nil, false
	}
	return protocol.EffectProposal{
		Kind: protocol.KindEffectProposal, ProposalID: id, EffectType: pr.EffectType, ActionDigest: action,
		CauseID: e.ID, CorrelationID: e.CorrelationID, ProposalDedupKey: dedup, DestinationDigest: dest,
		GoalID: pr.GoalID, ObligationID: pr.ObligationID, DeclaredRiskHint: pr.RiskHint,
		Preconditions: protocol.IDSet(slices.Clip(pre)), Versions: e.Versions,
	}, canon, true
}

// TestLateRejectionsNameEventAndRevision: a rejection found after both
// inputs parsed — a domain fault, a compatibility check, an output
// invariant — names the event and the snapshot revision, on every path.
func TestLateRejectionsNameEventAndRevision(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	tr, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, false)))
	if err != nil {
		t.Fatal(err)
	}
	s = tr.NextSnapshot
	noEmail := order("order:2", 5, true)
	noEmail["customer"] = map[string]any{}
	stale := shopEvent(s, "evt:2", 2, "order.placed/1", order("order:2", 5, true))
	stale.Payload["expected_revision"] = int64(0)
	cases := map[string]protocol.AcceptedEvent{
		"guard":          shopEvent(s, "evt:2", 2, "order.placed/1", order("order:2", 0, true)),
		"missing ref":    shopEvent(s, "evt:2", 2, "order.placed/1", noEmail),
		"stale":          stale,
		"time regressed": shopEvent(s, "evt:2", 0, "order.placed/1", order("order:2", 5, true)),
	}
	for name, ev := range cases {
		_, err := Step(d, s, ev)
		r, ok := err.(*Rejection)
		if !ok {
			t.Fatalf("%s: %v", name, err)
		}
		if r.EventID == nil || *r.EventID != "evt:2" || r.SnapshotRevision == nil || *r.SnapshotRevision != 1 {
			t.Errorf("%s: rejection names event %v, revision %v", name, r.EventID, r.SnapshotRevision)
		}
		sv, _ := toValue(s.Wire())
		evv, _ := toValue(ev)
		_, err = StepValue(d, sv, evv)
		if r2, _ := err.(*Rejection); r2 == nil || !reflect.DeepEqual(r, r2) {
			t.Errorf("%s: typed %v, value %v", name, r, err)
		}
	}
	_, err = Step(misbehaving{mode: "twin-facts"}, NewSnapshot(Observation{}, "agg:1", shopVersions), protocol.AcceptedEvent{})
	if r, ok := err.(*Rejection); !ok || r.EventID != nil {
		t.Errorf("unparsed event: %v", err)
	}
}

func TestValueDigestMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		domain := rapid.SampledFrom([]string{ValueObservation, ValueEffectAction, ValueEffectDestination, "é", "e\u0301"}).Draw(t, "domain")
		v := genObject(t, "value")
		if rapid.IntRange(0, 9).Draw(t, "nil") == 0 {
			v = nil
		}
		got, err1 := ValueDigest(domain, v)
		want, err2 := valueDigestMap(domain, v)
		if got != want || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("ValueDigest %s %v, map %s %v", got, err1, want, err2)
		}
	})
}

// TestDestinationDigestMemo holds the kept destination digest
// (destinationMemo) to the map path over a run of destinations drawn from a
// pool of two, so that a destination comes back after another and the same
// one follows itself: a digest served for the wrong bytes fails here.
func TestDestinationDigestMemo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := []protocol.Object{genObject(t, "a"), genObject(t, "b")}
		for i, n := 0, rapid.IntRange(1, 12).Draw(t, "n"); i < n; i++ {
			v := pool[rapid.IntRange(0, 1).Draw(t, "pick")]
			got, err1 := ValueDigest(ValueEffectDestination, v)
			want, err2 := valueDigestMap(ValueEffectDestination, v)
			if got != want || (err1 == nil) != (err2 == nil) {
				t.Fatalf("ValueDigest %s %v, map %s %v", got, err1, want, err2)
			}
		}
	})
}

func TestDigestMatchesCJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.Byte()).Draw(t, "b")
		if digest(b) != cjson.Digest(b) {
			t.Fatalf("digest %s, cjson %s", digest(b), cjson.Digest(b))
		}
	})
}

// TestDecodedTextEncodes holds the assumption that lets StepJSON and
// ParseSnapshot skip encoding what they decoded: decoded text always
// encodes, unless its root kind makes set-like arrays of it.
func TestDecodedTextEncodes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0, "v")
		text, err := cjson.Encode(v)
		if err != nil {
			text, _ = json.Marshal(v) // a value outside the model: any text will do
		}
		if rapid.Bool().Draw(t, "unsorted") {
			text = bytes.Replace(text, []byte(`"a"`), []byte(`"zz"`), 1)
		}
		if rapid.IntRange(0, 3).Draw(t, "tricky") == 0 {
			text = []byte(rapid.SampledFrom([]string{`{"kind":"EffectProposal","preconditions":["a","a"]}`,
				`{"kind":"X","preconditions":["a","a"]}`, `{"k":"e\u0301"}`, `{"k":"\u00e9"}`, `{"\u00e9":1}`,
				`{"k":"\ud800"}`, `[1.0]`, `{"a":1,"a":2}`, `9223372036854775808`, ` {"b":[],"a":{}} `,
				strings.Repeat("[", 128) + strings.Repeat("]", 128), strings.Repeat("[", 127) + strings.Repeat("]", 127)}).Draw(t, "text"))
		}
		decoded, err := cjson.Decode(text)
		if err != nil {
			return
		}
		if m, ok := decoded.(map[string]any); ok && !rootSetFree(m) {
			return
		}
		if _, err := cjson.Encode(decoded); err != nil {
			t.Fatalf("decoded %s, which does not encode: %v", text, err)
		}
	})
}

// copying wraps a domain so that the kernel no longer recognises it as one
// of its own: it then copies every argument it hands the domain.
type copying struct{ Domain }

// declaredReadOnly wraps a domain and implements ReadOnly.
type declaredReadOnly struct{ Domain }

func (declaredReadOnly) ReadsOnly() {}

func TestReadOnlyIsNotInherited(t *testing.T) {
	if !readsOnly(Observation{}) || !readsOnly(loadShop(t)) || !readsOnly(declaredReadOnly{Observation{}}) {
		t.Error("the package's domains and a declared ReadOnly domain are read-only")
	}
	if readsOnly(copying{Observation{}}) || readsOnly(copying{loadShop(t)}) || readsOnly(misbehaving{}) {
		t.Error("a type embedding one of the package's domains is not")
	}
}

// TestOwnDomainsNeedNoCopies: the package's own domains get the kernel's
// values uncopied; results must be those of the copying path, and no input
// may change.
func TestOwnDomainsNeedNoCopies(tt *testing.T) {
	shop := loadShop(tt)
	rapid.Check(tt, func(t *rapid.T) {
		var d Domain = Observation{}
		s := genSnapshot(t)
		if rapid.Bool().Draw(t, "validBase") {
			s = NewSnapshot(Observation{}, "agg:1", genEvent(t).Versions)
			s.Versions.Workflow, s.Versions.StateSchema, s.Versions.EventSchema = ObservationWorkflow, ObservationStateSchema, ObservationEventSchema
		}
		payload := protocol.Object{"event_type": ObservationEventType, "aggregate_id": s.AggregateID, "expected_revision": s.Revision,
			"observation": map[string]any{"n": genValue(t, 2, "obs")}, "mark_complete": rapid.Bool().Draw(t, "close"), "effect_request": nil}
		if rapid.Bool().Draw(t, "effect") {
			payload["effect_request"] = map[string]any{"effect_type": "mail.send", "action": map[string]any{"to": genValue(t, 3, "to")},
				"destination": map[string]any{"a": "b"}, "goal_id": "g:1", "obligation_id": "o:1", "declared_risk_hint": "unknown",
				"preconditions": []any{"b", "a"}}
		}
		if rapid.Bool().Draw(t, "declarative") {
			d = shop
			s = NewSnapshot(shop, "shop:1", shopVersions)
			if rapid.Bool().Draw(t, "oddState") {
				s.State["state"] = map[string]any{"orders": genValue(t, 2, "orders"), "last_order": genValue(t, 2, "last")}
			}
			payload = protocol.Object{"event_type": "order.placed/1", "aggregate_id": s.AggregateID, "expected_revision": s.Revision,
				"order_id": "order:1", "amount": genValue(t, 1, "amount"), "notify": rapid.Bool().Draw(t, "notify"),
				"customer": map[string]any{"email": genValue(t, 2, "email")}}
		}
		e := protocol.AcceptedEvent{Kind: protocol.KindAcceptedEvent, EventID: "evt:1", Payload: payload,
			OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: "2026-01-01T00:00:00Z", LogicalTime: rapid.Int64Range(0, 5).Draw(t, "lt"),
			CorrelationID: "run:1", IdempotencyKey: "k", Versions: s.Versions}
		sBefore, eBefore := fmtValue(s), fmtValue(e)
		if rapid.Bool().Draw(t, "declared") {
			d = declaredReadOnly{d} // a wrapper that says it only reads
		}
		got, gerr := Step(d, s, e)
		want, werr := Step(copying{d}, s, e)
		if gb, wb := resultBytes(t, got, gerr), resultBytes(t, want, werr); !bytes.Equal(gb, wb) {
			t.Fatalf("uncopied %s\ncopied   %s", gb, wb)
		}
		// The values, not only their bytes: the next snapshot is the next
		// step's input, and its Go types are read there.
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("uncopied %#v\ncopied   %#v", got, want)
		}
		if got != nil {
			// What the step returns shares nothing with its inputs.
			clobber(map[string]any(got.NextSnapshot.State))
			for _, f := range got.FactDeltas {
				clobber(map[string]any(f.Tuple))
				clobber(map[string]any(f.ProvenanceDelta))
			}
			if fmtValue(s) != sBefore || fmtValue(e) != eBefore {
				t.Fatal("a step's result shares its input")
			}
		}
		sv, ev := s.Wire(), any(nil)
		if v, err := toValue(e); err == nil {
			ev = v
		}
		if rapid.Bool().Draw(t, "rawEvent") {
			// Go values as a caller may pass them: typed objects, nil maps.
			ev = map[string]any{"kind": e.Kind, "event_id": e.EventID, "payload": map[string]any(e.Payload),
				"occurred_at": e.OccurredAt, "received_at": e.ReceivedAt, "logical_time": e.LogicalTime,
				"correlation_id": e.CorrelationID, "causation_id": nil, "idempotency_key": e.IdempotencyKey,
				"versions": versionsValue(e.Versions)}
		}
		svBefore, evBefore := fmtValue(sv), fmtValue(ev)
		got, gerr = StepValue(d, sv, ev)
		want, werr = StepValue(copying{d}, sv, ev)
		if gb, wb := resultBytes(t, got, gerr), resultBytes(t, want, werr); !bytes.Equal(gb, wb) {
			t.Fatalf("value path: uncopied %s\ncopied   %s", gb, wb)
		}
		if fmtValue(s) != sBefore || fmtValue(e) != eBefore || fmtValue(sv) != svBefore || fmtValue(ev) != evBefore {
			t.Fatal("a step changed its input")
		}
	})
}

// clobber changes every container below m in place.
func clobber(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case map[string]any:
			clobber(t)
		case []any:
			for i := range t {
				if c, ok := t[i].(map[string]any); ok {
					clobber(c)
				}
				t[i] = "clobbered"
			}
		}
		m[k] = "clobbered"
	}
}

func fmtValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestOwnDomainsSeeWhatCopiesShow: values a copy would change (nil maps and
// slices, which encode as null below a protocol.Object and as {} or [] once
// copied) reach the package's own domains as copies show them, on the value
// path where a caller may pass them.
func TestOwnDomainsSeeWhatCopiesShow(t *testing.T) {
	shop := loadShop(t)
	odd := []any{protocol.Object{"a": map[string]any(nil)}, protocol.Object{"a": []any(nil)},
		map[string]any{"b": protocol.Object{"c": []any{map[string]any(nil)}}}}
	obsVersions := shopVersions
	obsVersions.Workflow, obsVersions.StateSchema, obsVersions.EventSchema = ObservationWorkflow, ObservationStateSchema, ObservationEventSchema
	event := func(v protocol.VersionEnvelope, aggregate string, payload map[string]any) map[string]any {
		payload["aggregate_id"], payload["expected_revision"] = aggregate, int64(0)
		return map[string]any{"kind": protocol.KindAcceptedEvent, "event_id": "evt:1", "payload": payload,
			"occurred_at": "2026-01-01T00:00:00Z", "received_at": "2026-01-01T00:00:00Z", "logical_time": int64(1),
			"correlation_id": "run:1", "causation_id": nil, "idempotency_key": "k", "versions": versionsValue(v)}
	}
	for i, v := range odd {
		obs := NewSnapshot(Observation{}, "agg:1", obsVersions)
		shopSnap := NewSnapshot(shop, "shop:1", shopVersions)
		shopState := shopSnap.Wire()
		shopState["state"] = map[string]any{"orders": int64(0), "last_order": v}
		cases := []struct {
			d     Domain
			s, ev any
		}{
			{Observation{}, obs.Wire(), event(obsVersions, "agg:1", map[string]any{"event_type": ObservationEventType,
				"observation": map[string]any{"o": v}, "mark_complete": false, "effect_request": nil})},
			{Observation{}, obs.Wire(), event(obsVersions, "agg:1", map[string]any{"event_type": ObservationEventType,
				"observation": map[string]any{"n": int64(1)}, "mark_complete": false, "effect_request": map[string]any{
					"effect_type": "mail.send", "action": map[string]any{"x": v}, "destination": map[string]any{"a": "b"},
					"goal_id": "g:1", "obligation_id": "o:1", "declared_risk_hint": "unknown", "preconditions": []any{}}})},
			{shop, shopState, event(shopVersions, "shop:1", map[string]any{"event_type": "order.placed/1",
				"order_id": "order:1", "amount": int64(3), "notify": true, "customer": map[string]any{"email": v}})},
		}
		for j, c := range cases {
			if j%2 == 1 {
				c.d = declaredReadOnly{c.d}
			}
			got, gerr := StepValue(c.d, c.s, c.ev)
			want, werr := StepValue(copying{c.d}, c.s, c.ev)
			gb, wb := resultBytes(t, got, gerr), resultBytes(t, want, werr)
			if !bytes.Equal(gb, wb) {
				t.Errorf("value %d case %d: uncopied %s\ncopied   %s", i, j, gb, wb)
			}
		}
	}
}

// TestParsedSnapshotBytesMatchEncode: a snapshot value that passes
// canonCheck has its bytes written after it parses; they must be the
// encoding of the value itself.
func TestParsedSnapshotBytesMatchEncode(tt *testing.T) {
	shop := loadShop(tt)
	rapid.Check(tt, func(t *rapid.T) {
		var d Domain = Observation{}
		s := genSnapshot(t)
		if rapid.Bool().Draw(t, "valid") {
			s.AggregateID, s.Revision, s.Phase, s.LastLogicalTime, s.LastEventID = "agg:1", 3, PhaseOpen, nil, nil
			s.Versions = genEvent(t).Versions
			s.State = protocol.Object{"observation_count": int64(2), "last_observation_digest": nil}
		}
		if rapid.Bool().Draw(t, "declarative") {
			d = shop
			s.State = protocol.Object{"state": map[string]any{"orders": genValue(t, 2, "orders"), "last_order": genValue(t, 2, "last")}}
		}
		raw := s.Wire()
		if rapid.IntRange(0, 3).Draw(t, "mutate") == 0 {
			raw[rapid.SampledFrom([]string{"revision", "versions", "state", "phase", "extra"}).Draw(t, "member")] = genValue(t, 1, "m")
		}
		_, b, rej := parseSnapshot(d, d.Profile(), raw, nil, nil, false)
		if rej != nil {
			return
		}
		want, err := cjson.Encode(raw)
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("parsed bytes %s\nencoding     %s %v", b, want, err)
		}
	})
}

// drawChecked draws the checked envelope a step may be handed: none, the
// envelope v itself when its labels pass (the writers then copy its bytes),
// or another checked envelope (they then check and write v as before).
func drawChecked(t *rapid.T, v protocol.VersionEnvelope) *CheckedVersions {
	switch rapid.IntRange(0, 2).Draw(t, "checked") {
	case 1:
		cv, _ := CheckVersions(v)
		return cv
	case 2:
		o := v
		o.Tool = "other-tool/9"
		cv, _ := CheckVersions(o)
		return cv
	}
	return nil
}
