package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/protocol"
)

func rejectionOf(t *testing.T, err error) *Rejection {
	t.Helper()
	var r *Rejection
	if !errors.As(err, &r) {
		t.Fatalf("want a *Rejection, got %v", err)
	}
	return r
}

// TestEveryRejectionCode reaches each of the fourteen codes (several ways
// for some) and checks the code, path and context.
func TestEveryRejectionCode(t *testing.T) {
	cases := []struct {
		name, ref string
		ops       []op
		code      string
		path      string
		ctx       string
	}{
		{"snapshot-kind", "observe-no-effect", []op{rep("/snapshot/kind", `"Snapshot"`)}, CodeMalformedSnapshot, "/snapshot/kind", `{}`},
		{"snapshot-negative-revision", "observe-no-effect", []op{rep("/snapshot/revision", `-1`)}, CodeMalformedSnapshot, "/snapshot/revision", `{}`},
		{"snapshot-count-type", "observe-no-effect", []op{rep("/snapshot/observation_count", `"1"`)}, CodeMalformedSnapshot, "/snapshot/observation_count", `{}`},
		{"snapshot-digest", "observe-no-effect", []op{rep("/snapshot/last_observation_digest", `"sha256:00"`)}, CodeMalformedSnapshot, "/snapshot/last_observation_digest", `{}`},
		{"snapshot-phase", "observe-no-effect", []op{rep("/snapshot/phase", `"paused"`)}, CodeMalformedSnapshot, "/snapshot/phase", `{}`},
		{"snapshot-versions", "observe-no-effect", []op{{"remove", "/snapshot/versions/tool", ""}}, CodeMalformedSnapshot, "/snapshot/versions", `{}`},
		{"event-kind", "observe-no-effect", []op{rep("/accepted_event/kind", `"Event"`)}, CodeMalformedAcceptedEvent, "/accepted_event/kind", `{}`},
		{"event-causation", "observe-no-effect", []op{rep("/accepted_event/causation_id", `""`)}, CodeMalformedAcceptedEvent, "/accepted_event/causation_id", `{}`},
		{"event-negative-time", "observe-no-effect", []op{rep("/accepted_event/logical_time", `-1`)}, CodeMalformedAcceptedEvent, "/accepted_event/logical_time", `{}`},
		{"payload-member-missing", "observe-no-effect", []op{{"remove", "/accepted_event/payload/mark_complete", ""}}, CodeMalformedAcceptedEvent, "/accepted_event/payload", `{}`},
		{"payload-mark-complete", "observe-no-effect", []op{rep("/accepted_event/payload/mark_complete", `"yes"`)}, CodeMalformedAcceptedEvent, "/accepted_event/payload/mark_complete", `{}`},
		{"payload-empty-observation", "observe-no-effect", []op{rep("/accepted_event/payload/observation", `{}`)}, CodeMalformedAcceptedEvent, "/accepted_event/payload/observation", `{}`},
		{"payload-risk", "observe-with-effect", []op{rep("/accepted_event/payload/effect_request/declared_risk_hint", `"harmless"`)}, CodeMalformedAcceptedEvent, "/accepted_event/payload/effect_request/declared_risk_hint", `{}`},
		{"payload-unknown-type-and-shape", "observe-no-effect", []op{
			rep("/accepted_event/payload/event_type", `"other/1"`), {"add", "/accepted_event/payload/extra", `1`}},
			CodeMalformedAcceptedEvent, "/accepted_event/payload", `{}`},
		{"duplicate-key", "observe-no-effect", []op{rep("/accepted_event/payload/observation", `{"a":1,"a":2}`)}, CodeCanonicalizationViolation, "/accepted_event/payload/observation/a", `{"canonical_code":"DUPLICATE_OBJECT_KEY"}`},
		{"snapshot-schema-version", "observe-no-effect", []op{rep("/snapshot/schema_version", `"flrh-f-snapshot/2"`)}, CodeUnsupportedStateSchema, "/snapshot/schema_version", `{"expected":"flrh-f-snapshot/1"}`},
		{"envelope-mismatch", "observe-no-effect", []op{rep("/accepted_event/versions/tool", `"publisher/2"`)}, CodeVersionEnvelopeMismatch, "/versions", `{}`},
		{"snapshot-workflow", "observe-no-effect", []op{rep("/snapshot/versions/workflow", `"flrh-workflow/0.2"`)}, CodeWorkflowVersionMismatch, "/versions/workflow", `{"expected":"flrh-workflow/0.1"}`},
		{"count-exhausted", "observe-no-effect", []op{rep("/snapshot/observation_count", `9223372036854775807`)}, CodeInvariantViolation, "/snapshot/observation_count", `{"invariant":"observation_count_increment_within_int64"}`},
		// Precedence: a snapshot fault wins over an event fault; a parse
		// fault wins over a compatibility fault; workflow wins over the
		// envelope; revision wins over time; time wins over closure.
		{"snapshot-before-event", "observe-no-effect", []op{rep("/snapshot/phase", `"x"`), {"remove", "/accepted_event/event_id", ""}}, CodeMalformedSnapshot, "/snapshot/phase", `{}`},
		{"parse-before-compat", "observe-with-effect", []op{rep("/accepted_event/payload/expected_revision", `5`), rep("/accepted_event/payload/effect_request/preconditions", `["a","a"]`)}, CodeInvariantViolation, "/accepted_event/payload/effect_request/preconditions", `{"invariant":"unique_preconditions"}`},
		{"workflow-before-envelope", "observe-no-effect", []op{rep("/accepted_event/versions/workflow", `"w/2"`), rep("/accepted_event/versions/tool", `"t/2"`)}, CodeWorkflowVersionMismatch, "/versions/workflow", `{"expected":"flrh-workflow/0.1"}`},
		{"revision-before-time", "observe-after-one", []op{rep("/accepted_event/logical_time", `0`), rep("/accepted_event/payload/expected_revision", `0`)}, CodeStaleRevision, "/accepted_event/payload/expected_revision", `{"expected":1}`},
		{"time-before-closed", "observe-after-one", []op{rep("/accepted_event/logical_time", `0`), rep("/snapshot/phase", `"closed"`)}, CodeLogicalTimeRegression, "/accepted_event/logical_time", `{"minimum":2}`},
		{"canonical-snapshot-before-event", "observe-no-effect", []op{rep("/snapshot/revision", `1.0`), rep("/accepted_event/logical_time", `1.5`)}, CodeCanonicalizationViolation, "/snapshot/revision", `{"canonical_code":"FLOAT_FORBIDDEN"}`},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, e := loadInput(t, c.ref, c.ops...)
			_, err := StepJSON(Observation{}, s, e)
			r := rejectionOf(t, err)
			ctx, _ := cjson.Encode(r.Context)
			if r.Code != c.code || r.Path != c.path || string(ctx) != c.ctx {
				t.Errorf("got %s at %s %s; want %s at %s %s", r.Code, r.Path, ctx, c.code, c.path, c.ctx)
			}
			checkRejectionShape(t, r)
		})
		seen[c.code] = true
	}
	// Together with the M1 corpus every code is reached; here at least
	// the ones the corpus does not reach.
	for _, code := range []string{CodeVersionEnvelopeMismatch, CodeUnsupportedStateSchema} {
		if !seen[code] {
			t.Errorf("code %s not reached", code)
		}
	}
}

func TestNotJSON(t *testing.T) {
	s, e := loadInput(t, "observe-no-effect")
	r := rejectionOf(t, second(StepJSON(Observation{}, []byte(`{"kind":`), e)))
	if r.Code != CodeMalformedSnapshot || r.Context["canonical_code"] != string(cjson.CodeSyntax) {
		t.Errorf("snapshot syntax: %v", r)
	}
	if r.EventID == nil || *r.EventID != "evt:m1:observe" {
		t.Errorf("event id not read leniently: %v", r.EventID)
	}
	r = rejectionOf(t, second(StepJSON(Observation{}, s, []byte(`[1,`))))
	if r.Code != CodeMalformedAcceptedEvent || r.SnapshotRevision == nil || *r.SnapshotRevision != 0 {
		t.Errorf("event syntax: %v", r)
	}
}

func second[A, B any](_ A, b B) B { return b }

// TestTypedStepAgrees: the typed entry point gives the same transition as
// the JSON one.
func TestTypedStepAgrees(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	want := mustStep(t, s, e)
	snap := NewSnapshot(Observation{}, "work:1", want.NextSnapshot.Versions)
	ev, err := protocol.Decode[protocol.AcceptedEvent](e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Step(Observation{}, snap, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.TransitionDigest != want.TransitionDigest {
		t.Errorf("typed step digest %s, JSON step %s", got.TransitionDigest, want.TransitionDigest)
	}
}

func TestStepIsDeterministic(t *testing.T) {
	for _, ref := range []string{"observe-no-effect", "observe-with-effect", "observe-after-one"} {
		s, e := loadInput(t, ref)
		sv, _ := cjson.Decode(s)
		ev, _ := cjson.Decode(e)
		determinism.Check2(t, sv, ev, func(a, b any) string {
			tr, err := StepValue(Observation{}, a, b)
			if err != nil {
				return err.Error()
			}
			return tr.TransitionDigest
		})
		// Rejections are deterministic too.
		bad, _ := cjson.Decode([]byte(`{"kind":"AcceptedEvent"}`))
		determinism.Check2(t, sv, bad, func(a, b any) string {
			_, err := StepValue(Observation{}, a, b)
			return fmt.Sprint(err)
		})
	}
}

// genObservation draws an observation object of the cjson value model.
func genObservation(t *rapid.T) map[string]any {
	obs := map[string]any{"status": rapid.SampledFrom([]string{"seen", "ready", "verified", "Straße", "東京"}).Draw(t, "status")}
	if rapid.Bool().Draw(t, "withCount") {
		obs["count"] = rapid.Int64().Draw(t, "count")
	}
	if rapid.Bool().Draw(t, "withSteps") {
		obs["steps"] = []any{"capture", rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "step")}
	}
	return obs
}

// TestPropertyReplayAndRejection folds random event sequences — valid
// events interleaved with faulty ones — and checks that (1) a rejected
// step leaves the snapshot (bytes and digest) unchanged, (2) replaying the
// accepted events from the start reproduces every digest, and (3) the next
// snapshot of every transition is a valid input with revision +1.
func TestPropertyReplayAndRejection(t *testing.T) {
	versions := protocol.VersionEnvelope{
		Workflow: ObservationWorkflow, StateSchema: ObservationStateSchema, EventSchema: ObservationEventSchema,
		GraphSchema: "graph/0", RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: Canonicalization,
		Tool: "none/0", Model: "none/0", Oracle: "o/1", Gate: "g/1", Resolver: "r/0", CompositionProfile: "c/0",
	}
	rapid.Check(t, func(t *rapid.T) {
		d := Observation{}
		start := NewSnapshot(d, "agg:1", versions)
		snap := start
		var accepted []protocol.AcceptedEvent
		var digests []string
		lt := int64(0)
		n := rapid.IntRange(1, 12).Draw(t, "n")
		for i := 0; i < n; i++ {
			lt += rapid.Int64Range(0, 3).Draw(t, "dt")
			payload := protocol.Object{
				"event_type": ObservationEventType, "aggregate_id": "agg:1", "expected_revision": snap.Revision,
				"observation": genObservation(t), "mark_complete": rapid.IntRange(0, 9).Draw(t, "close") == 0,
				"effect_request": nil,
			}
			if rapid.Bool().Draw(t, "effect") {
				payload["effect_request"] = map[string]any{
					"effect_type": "artifact.publish", "action": map[string]any{"op": "publish", "n": int64(i)},
					"destination": map[string]any{"target": "store:1"}, "goal_id": "goal:1", "obligation_id": "ob:1",
					"declared_risk_hint": rapid.SampledFrom([]string{"read_only", "reversible", "high_risk_external", "unknown"}).Draw(t, "risk"),
					"preconditions":      []any{"b:1", "a:1"},
				}
			}
			ev := protocol.AcceptedEvent{
				Kind: protocol.KindAcceptedEvent, EventID: fmt.Sprintf("evt:%d", i), Payload: payload,
				OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: "2026-01-01T00:00:01Z", LogicalTime: lt,
				CorrelationID: "run:1", IdempotencyKey: fmt.Sprintf("in:%d", i), Versions: versions,
			}
			switch rapid.IntRange(0, 5).Draw(t, "fault") {
			case 1:
				payload["expected_revision"] = snap.Revision + 1
			case 2:
				payload["aggregate_id"] = "agg:2"
			case 3:
				ev.Versions.Tool = "other/1"
			}
			before, _ := snap.Digest()
			tr, err := Step(d, snap, ev)
			after, _ := snap.Digest()
			if before != after {
				t.Fatalf("step changed its input snapshot")
			}
			if err != nil {
				var r *Rejection
				if !errors.As(err, &r) {
					t.Fatalf("non-rejection error %v", err)
				}
				continue // the snapshot stays as it was
			}
			if tr.NextSnapshot.Revision != snap.Revision+1 || len(tr.FactDeltas) != 1 {
				t.Fatalf("revision %d→%d, %d facts", snap.Revision, tr.NextSnapshot.Revision, len(tr.FactDeltas))
			}
			accepted = append(accepted, ev)
			digests = append(digests, tr.TransitionDigest)
			snap = tr.NextSnapshot
		}
		// Replay.
		replay := start
		for i, ev := range accepted {
			tr, err := Step(d, replay, ev)
			if err != nil {
				t.Fatalf("replay step %d rejected: %v", i, err)
			}
			if tr.TransitionDigest != digests[i] {
				t.Fatalf("replay step %d digest %s, first run %s", i, tr.TransitionDigest, digests[i])
			}
			replay = tr.NextSnapshot
		}
		a, _ := replay.Digest()
		b, _ := snap.Digest()
		if a != b {
			t.Fatalf("replayed snapshot %s, first run %s", a, b)
		}
	})
}

func TestRevisionHeadroomTyped(t *testing.T) {
	s, e := loadInput(t, "observe-no-effect", rep("/snapshot/revision", fmt.Sprint(int64(math.MaxInt64))),
		rep("/accepted_event/payload/expected_revision", fmt.Sprint(int64(math.MaxInt64))))
	r := rejectionOf(t, second(StepJSON(Observation{}, s, e)))
	if r.Code != CodeInvariantViolation || r.SnapshotRevision == nil || *r.SnapshotRevision != math.MaxInt64 {
		t.Errorf("got %v", r)
	}
}

func TestNonStringEventType(t *testing.T) {
	s, e := loadInput(t, "observe-no-effect", rep("/accepted_event/payload/event_type", `5`))
	r := rejectionOf(t, second(StepJSON(Observation{}, s, e)))
	if r.Code != CodeUnsupportedEventPayload || r.Path != "/accepted_event/payload/event_type" {
		t.Errorf("got %s at %s", r.Code, r.Path)
	}
}

func TestObservationDecide(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	want := mustStep(t, s, e)
	snap := NewSnapshot(Observation{}, "work:1", want.NextSnapshot.Versions)
	ev, _ := protocol.Decode[protocol.AcceptedEvent](e)
	cmd := Command{"observation": ev.Payload["observation"], "effect_request": ev.Payload["effect_request"]}
	payloads, f := Observation{}.Decide(snap, cmd)
	if f != nil || len(payloads) != 1 {
		t.Fatalf("decide: %v", f)
	}
	// The decided payload, stamped and accepted, is the fixture event.
	p := payloads[0]
	p["event_type"], p["aggregate_id"], p["expected_revision"] = ObservationEventType, "work:1", int64(0)
	ev.Payload = p
	got, err := Step(Observation{}, snap, ev)
	if err != nil || got.TransitionDigest != want.TransitionDigest {
		t.Fatalf("decided event: %v %v", err, got)
	}
	for name, c := range map[string]Command{
		"empty observation": {"observation": map[string]any{}},
		"unknown member":    {"observation": map[string]any{"a": int64(1)}, "extra": true},
		"bad effect":        {"observation": map[string]any{"a": int64(1)}, "effect_request": "publish"},
	} {
		if _, f := (Observation{}).Decide(snap, c); f == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	snap.Phase = PhaseClosed
	if _, f := (Observation{}).Decide(snap, cmd); f == nil || f.Code != CodeDomainRejected {
		t.Errorf("closed aggregate decided: %v", f)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	tr := mustStep(t, s, e)
	b, err := tr.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	var back Transition
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, err := back.Canonical()
	if err != nil || string(b) != string(b2) {
		t.Fatalf("transition round trip differs:\n%s\n%s", b, b2)
	}
	nb, _ := tr.NextSnapshot.MarshalJSON()
	ps, err := ParseSnapshot(Observation{}, nb)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := ps.Digest()
	d2, _ := tr.NextSnapshot.Digest()
	if d1 != d2 {
		t.Fatal("ParseSnapshot changed the snapshot")
	}
	if _, err := ParseSnapshot(Observation{}, []byte(`{"kind":"FStateSnapshot"}`)); err == nil {
		t.Error("corrupt snapshot accepted")
	}
	if _, err := ParseSnapshot(Observation{}, []byte(`{"revision":1.5}`)); err == nil {
		t.Error("non-canonical snapshot accepted")
	}
	var bad Snapshot
	if json.Unmarshal([]byte(`{"kind":"FStateSnapshot","schema_version":"flrh-f-snapshot/1","revision":-1}`), &bad) == nil {
		t.Error("malformed snapshot decoded")
	}
}

func TestTypedStepCanonicalFaults(t *testing.T) {
	d := Observation{}
	s, e := loadInput(t, "observe-no-effect")
	ev, _ := protocol.Decode[protocol.AcceptedEvent](e)
	snap, err := ParseSnapshot(d, s)
	if err != nil {
		t.Fatal(err)
	}
	ev.Payload["observation"] = map[string]any{"score": 0.5}
	r := rejectionOf(t, second(Step(d, snap, ev)))
	if r.Code != CodeCanonicalizationViolation || r.Path != "/accepted_event/payload/observation/score" ||
		r.EventID == nil || r.SnapshotRevision == nil {
		t.Errorf("float in typed event: %+v", r)
	}
	// A snapshot fault still wins.
	snap.Phase = "paused"
	r = rejectionOf(t, second(Step(d, snap, ev)))
	if r.Code != CodeMalformedSnapshot || r.Path != "/snapshot/phase" {
		t.Errorf("precedence: %+v", r)
	}
}
