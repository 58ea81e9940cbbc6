package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// The cases below are transcribed from the reference M1 conformance corpus
// (fixtures/m1): base inputs in testdata/m1, mutations, expected digests
// and expected rejections here.

// op is one JSON Patch style mutation; value is raw JSON text so that
// values a Go string cannot hold (an escaped lone surrogate, an integer
// beyond int64, a float) reach the kernel exactly as written.
type op struct {
	op, path, value string
}

func rep(path, value string) op { return op{"replace", path, value} }

// testdataDir is the fixture directory; a child process started from
// another working directory is told where it is.
func testdataDir() string {
	if d := os.Getenv("FLRH_KERNEL_TESTDATA"); d != "" {
		return d
	}
	return "testdata"
}

// loadInput reads a base input and applies mutations, returning the
// snapshot and event JSON texts.
func loadInput(t testing.TB, ref string, ops ...op) (snapshot, event []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir(), "m1", ref+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		toks := strings.Split(o.path, "/")[1:]
		parent := any(doc)
		for _, tok := range toks[:len(toks)-1] {
			switch p := parent.(type) {
			case map[string]any:
				parent = p[tok]
			case []any:
				i, _ := strconv.Atoi(tok)
				parent = p[i]
			}
		}
		m := parent.(map[string]any)
		last := toks[len(toks)-1]
		switch o.op {
		case "remove":
			delete(m, last)
		default:
			m[last] = json.RawMessage(o.value)
		}
	}
	snapshot, err = json.Marshal(doc["snapshot"])
	if err != nil {
		t.Fatal(err)
	}
	event, err = json.Marshal(doc["accepted_event"])
	if err != nil {
		t.Fatal(err)
	}
	return snapshot, event
}

func mustStep(t testing.TB, snapshot, event []byte) *Transition {
	t.Helper()
	tr, err := StepJSON(Observation{}, snapshot, event)
	if err != nil {
		t.Fatalf("step rejected: %v", err)
	}
	return tr
}

func TestM1SuccessCases(t *testing.T) {
	cases := []struct {
		id, ref          string
		ops              []op
		digest           string
		revision         int64
		phase            string
		facts, proposals int
	}{
		{"observe-no-effect", "observe-no-effect", nil,
			"sha256:81623155177c6ce653aea5eb72493adaffcd734a874cda4e10f4f47269d73ae3", 1, PhaseOpen, 1, 0},
		{"observe-rfc3339-case-variants", "observe-no-effect", []op{
			rep("/accepted_event/occurred_at", `"2026-08-08T01:00:00z"`),
			rep("/accepted_event/received_at", `"2026-08-08t01:00:01Z"`)},
			"sha256:81623155177c6ce653aea5eb72493adaffcd734a874cda4e10f4f47269d73ae3", 1, PhaseOpen, 1, 0},
		{"observe-with-effect", "observe-with-effect", nil,
			"sha256:58aebb4a6256a7dc2d5cde67eb2f303c1902afc9687c2854e5e292ee2c0b3f3f", 1, PhaseOpen, 1, 1},
		{"observe-with-effect-reordered-preconditions", "observe-with-effect", []op{
			rep("/accepted_event/payload/effect_request/preconditions", `["frontier:1","constraint:artifact-ready"]`)},
			"sha256:58aebb4a6256a7dc2d5cde67eb2f303c1902afc9687c2854e5e292ee2c0b3f3f", 1, PhaseOpen, 1, 1},
		{"reserved-kind-action-order-a", "observe-with-effect", []op{
			rep("/accepted_event/payload/effect_request/action", `{"kind":"EffectProposal","operation":"publish","preconditions":["step:b","step:a"]}`)},
			"sha256:dd25fe85422335c74d91b2416809c870cc4b7b63a8b1a189fdcf8c2f88482193", 1, PhaseOpen, 1, 1},
		{"reserved-kind-action-order-b", "observe-with-effect", []op{
			rep("/accepted_event/payload/effect_request/action", `{"kind":"EffectProposal","operation":"publish","preconditions":["step:a","step:b"]}`)},
			"sha256:864cd854013aa09338e498e301b5680f2f3ed6b4e6517b4c717e912b27efe863", 1, PhaseOpen, 1, 1},
		{"observe-and-close", "observe-after-one", nil,
			"sha256:98b7a3b922e209dc10747706a345cc06f7b62f5cbfb04963d4c254036471ad37", 2, PhaseClosed, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			s, e := loadInput(t, c.ref, c.ops...)
			s0, e0 := bytes.Clone(s), bytes.Clone(e)
			tr := mustStep(t, s, e)
			if tr.TransitionDigest != c.digest {
				t.Errorf("transition digest %s, want %s", tr.TransitionDigest, c.digest)
			}
			if tr.NextSnapshot.Revision != c.revision || tr.NextSnapshot.Phase != c.phase {
				t.Errorf("next revision/phase %d/%s, want %d/%s", tr.NextSnapshot.Revision, tr.NextSnapshot.Phase, c.revision, c.phase)
			}
			if len(tr.FactDeltas) != c.facts || len(tr.EffectProposals) != c.proposals {
				t.Errorf("facts/proposals %d/%d, want %d/%d", len(tr.FactDeltas), len(tr.EffectProposals), c.facts, c.proposals)
			}
			if !bytes.Equal(s, s0) || !bytes.Equal(e, e0) {
				t.Error("input mutated")
			}
			checkTransitionShape(t, tr)
		})
	}
}

// The reference freezes the full canonical bytes of one transition.
const goldenObserveWithEffect = `{"contract_version":"flrh-f-kernel/1","effect_proposals":[{"action_digest":"sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed","cause_id":"evt:m1:effect","correlation_id":"run:m1:1","declared_risk_hint":"high_risk_external","destination_digest":"sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b","effect_type":"artifact.publish","goal_id":"goal:m1:publish","kind":"EffectProposal","obligation_id":"obligation:m1:publish","preconditions":["constraint:artifact-ready","frontier:1"],"proposal_dedup_key":"proposal-dedup:ba0a5a16c2a1c2ebd0d328c5f8987caf858122f19b200b62c0913ce8744980d0","proposal_id":"proposal:994c653d471e0f3df8fb3d808d03b0f665ed389b04c28d2231d7f495c692b4bb","versions":{"canonicalization":"flrh-cjson/1","composition_profile":"composition/0","dataflow":"dataflow/0","event_schema":"flrh-f-event/1","gate":"m1-gate/1","graph_schema":"graph/0","model":"none/0","oracle":"m1-oracle/1","resolver":"resolver/0","rule_set":"rules/0","state_schema":"flrh-f-state/1","tool":"publisher/1","workflow":"flrh-workflow/0.1"}}],"event_id":"evt:m1:effect","fact_deltas":[{"causation_id":"evt:m1:effect","dataflow_version":"dataflow/0","derivation_id":"derivation:0d7743ea7fae5a26bceb553d84464cc2e70e65654295f0ce1e2ef5958151ab80","diff":1,"kind":"FactDelta","logical_time":1,"provenance_delta":{"observation_digest":"sha256:de22786af34ef83e6570426c50e978c41da6d6e00d38630f05260017396a81c9","source_event_id":"evt:m1:effect"},"rule_set_version":"rules/0","tuple":{"object_digest":"sha256:de22786af34ef83e6570426c50e978c41da6d6e00d38630f05260017396a81c9","predicate":"observation_recorded","subject":"work:1"}}],"kind":"FTransition","next_snapshot":{"aggregate_id":"work:1","kind":"FStateSnapshot","last_event_id":"evt:m1:effect","last_logical_time":1,"last_observation_digest":"sha256:de22786af34ef83e6570426c50e978c41da6d6e00d38630f05260017396a81c9","observation_count":1,"phase":"open","revision":1,"schema_version":"flrh-f-snapshot/1","versions":{"canonicalization":"flrh-cjson/1","composition_profile":"composition/0","dataflow":"dataflow/0","event_schema":"flrh-f-event/1","gate":"m1-gate/1","graph_schema":"graph/0","model":"none/0","oracle":"m1-oracle/1","resolver":"resolver/0","rule_set":"rules/0","state_schema":"flrh-f-state/1","tool":"publisher/1","workflow":"flrh-workflow/0.1"}},"prior_snapshot_digest":"sha256:846c8dae37a293f21dbb5943ed605d5add10402193c65cdf95f8f731e374368e","schema_version":"flrh-f-result/1","transition_digest":"sha256:58aebb4a6256a7dc2d5cde67eb2f303c1902afc9687c2854e5e292ee2c0b3f3f"}`

const goldenInvalidCalendar = `{"code":"MALFORMED_ACCEPTED_EVENT","context":{},"contract_version":"flrh-f-kernel/1","event_id":"evt:m1:observe","kind":"FRejection","path":"/accepted_event/occurred_at","schema_version":"flrh-f-result/1","snapshot_revision":0}`

func TestM1GoldenBytes(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	got, err := mustStep(t, s, e).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != goldenObserveWithEffect {
		t.Errorf("transition bytes differ from the golden:\n got %s\nwant %s", got, goldenObserveWithEffect)
	}

	s, e = loadInput(t, "observe-no-effect", rep("/accepted_event/occurred_at", `"2026-99-99T99:99:99Z"`))
	_, err = StepJSON(Observation{}, s, e)
	var r *Rejection
	if !errors.As(err, &r) {
		t.Fatalf("want rejection, got %v", err)
	}
	got, err = r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != goldenInvalidCalendar {
		t.Errorf("rejection bytes differ from the golden:\n got %s\nwant %s", got, goldenInvalidCalendar)
	}
}

func TestM1RejectionCases(t *testing.T) {
	cases := []struct {
		id, ref string
		ops     []op
		code    string
		path    string
		context string // canonical JSON of the expected context
	}{
		{"snapshot-extra-field", "observe-no-effect", []op{{"add", "/snapshot/ambient", `"forbidden"`}},
			CodeMalformedSnapshot, "/snapshot", `{}`},
		{"event-missing-id", "observe-no-effect", []op{{"remove", "/accepted_event/event_id", ""}},
			CodeMalformedAcceptedEvent, "/accepted_event", `{}`},
		{"non-nfc-observation", "observe-no-effect", []op{rep("/accepted_event/payload/observation/status", "\"e\u0301\"")},
			CodeCanonicalizationViolation, "/accepted_event/payload/observation/status", `{"canonical_code":"NON_NFC_STRING"}`},
		{"workflow-version-mismatch", "observe-no-effect", []op{rep("/accepted_event/versions/workflow", `"flrh-workflow/9"`)},
			CodeWorkflowVersionMismatch, "/versions/workflow", `{"expected":"flrh-workflow/0.1"}`},
		{"unsupported-state-schema", "observe-no-effect", []op{rep("/snapshot/versions/state_schema", `"flrh-f-state/9"`)},
			CodeUnsupportedStateSchema, "/snapshot/versions/state_schema", `{"expected":"flrh-f-state/1"}`},
		{"unsupported-event-schema", "observe-no-effect", []op{rep("/accepted_event/versions/event_schema", `"flrh-f-event/9"`)},
			CodeUnsupportedEventSchema, "/accepted_event/versions/event_schema", `{"expected":"flrh-f-event/1"}`},
		{"unsupported-canonicalization", "observe-no-effect", []op{
			rep("/snapshot/versions/canonicalization", `"flrh-cjson/9"`),
			rep("/accepted_event/versions/canonicalization", `"flrh-cjson/9"`)},
			CodeUnsupportedCanonicalization, "/versions/canonicalization", `{"expected":"flrh-cjson/1"}`},
		{"aggregate-mismatch", "observe-no-effect", []op{rep("/accepted_event/payload/aggregate_id", `"work:2"`)},
			CodeSnapshotEventMismatch, "/accepted_event/payload/aggregate_id", `{}`},
		{"stale-revision", "observe-no-effect", []op{rep("/accepted_event/payload/expected_revision", `9`)},
			CodeStaleRevision, "/accepted_event/payload/expected_revision", `{"expected":0}`},
		{"logical-time-regression", "observe-after-one", []op{rep("/accepted_event/logical_time", `1`)},
			CodeLogicalTimeRegression, "/accepted_event/logical_time", `{"minimum":2}`},
		{"unsupported-event-payload", "observe-no-effect", []op{rep("/accepted_event/payload/event_type", `"flrh.m1.unknown/1"`)},
			CodeUnsupportedEventPayload, "/accepted_event/payload/event_type", `{"expected":"flrh.m1.observation-recorded/1"}`},
		{"closed-snapshot", "observe-no-effect", []op{rep("/snapshot/phase", `"closed"`)},
			CodeDomainRejected, "/snapshot/phase", `{"phase":"closed"}`},
		{"duplicate-precondition", "observe-with-effect", []op{
			rep("/accepted_event/payload/effect_request/preconditions", `["frontier:1","frontier:1"]`)},
			CodeInvariantViolation, "/accepted_event/payload/effect_request/preconditions", `{"invariant":"unique_preconditions"}`},
		{"snapshot-int64-overflow", "observe-no-effect", []op{rep("/snapshot/revision", `9223372036854775808`)},
			CodeCanonicalizationViolation, "/snapshot/revision", `{"canonical_code":"INTEGER_OUTSIDE_INT64"}`},
		{"event-float-logical-time", "observe-no-effect", []op{rep("/accepted_event/logical_time", `1.5`)},
			CodeCanonicalizationViolation, "/accepted_event/logical_time", `{"canonical_code":"FLOAT_FORBIDDEN"}`},
		{"snapshot-revision-exhausted", "observe-no-effect", []op{
			rep("/snapshot/revision", `9223372036854775807`),
			rep("/accepted_event/payload/expected_revision", `9223372036854775807`)},
			CodeInvariantViolation, "/snapshot/revision", `{"invariant":"revision_increment_within_int64"}`},
		{"unicode-surrogate-observation", "observe-no-effect", []op{rep("/accepted_event/payload/observation/status", `"\ud800"`)},
			CodeCanonicalizationViolation, "/accepted_event/payload/observation/status", `{"canonical_code":"NON_UNICODE_SCALAR"}`},
		{"invalid-calendar-timestamp", "observe-no-effect", []op{rep("/accepted_event/occurred_at", `"2026-99-99T99:99:99Z"`)},
			CodeMalformedAcceptedEvent, "/accepted_event/occurred_at", `{}`},
		{"invalid-offset-timestamp", "observe-no-effect", []op{rep("/accepted_event/received_at", `"2026-08-08T01:00:01+24:00"`)},
			CodeMalformedAcceptedEvent, "/accepted_event/received_at", `{}`},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			s, e := loadInput(t, c.ref, c.ops...)
			s0, e0 := bytes.Clone(s), bytes.Clone(e)
			tr, err := StepJSON(Observation{}, s, e)
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("want rejection %s, got transition %v / %v", c.code, tr, err)
			}
			if tr != nil {
				t.Error("a rejection returned a transition too")
			}
			if r.Code != c.code || r.Path != c.path {
				t.Errorf("got %s at %s, want %s at %s", r.Code, r.Path, c.code, c.path)
			}
			ctx, err := cjson.Encode(r.Context)
			if err != nil || string(ctx) != c.context {
				t.Errorf("context %s, want %s", ctx, c.context)
			}
			if !bytes.Equal(s, s0) || !bytes.Equal(e, e0) {
				t.Error("input mutated")
			}
			checkRejectionShape(t, r)
			// event_id and snapshot_revision are reported when the raw
			// inputs carry well-formed ones, as the reference does.
			wantID, wantRev := baseEventID[c.ref], baseRevision[c.ref]
			switch c.id {
			case "event-missing-id":
				wantID = ""
			case "snapshot-int64-overflow":
				wantRev = -1
			case "snapshot-revision-exhausted":
				wantRev = math.MaxInt64
			}
			gotID, gotRev := "", int64(-1)
			if r.EventID != nil {
				gotID = *r.EventID
			}
			if r.SnapshotRevision != nil {
				gotRev = *r.SnapshotRevision
			}
			if gotID != wantID || gotRev != wantRev {
				t.Errorf("event_id/snapshot_revision %q/%d, want %q/%d", gotID, gotRev, wantID, wantRev)
			}
		})
		seen[c.code] = true
	}
	// The corpus reaches all but one code; MALFORMED is reached twice.
	// VERSION_ENVELOPE_MISMATCH is covered by TestEveryRejectionCode.
	if len(seen) != 13 {
		t.Errorf("corpus reached %d codes", len(seen))
	}
}

var (
	baseEventID  = map[string]string{"observe-no-effect": "evt:m1:observe", "observe-with-effect": "evt:m1:effect", "observe-after-one": "evt:m1:close"}
	baseRevision = map[string]int64{"observe-no-effect": 0, "observe-with-effect": 0, "observe-after-one": 1}
)

func TestM1ReplaySequence(t *testing.T) {
	s, e1 := loadInput(t, "observe-no-effect")
	_, e2 := loadInput(t, "observe-no-effect",
		rep("/accepted_event/event_id", `"evt:m1:observe:2"`),
		rep("/accepted_event/payload/expected_revision", `1`),
		rep("/accepted_event/payload/observation/status", `"verified"`),
		rep("/accepted_event/logical_time", `2`),
		rep("/accepted_event/idempotency_key", `"ingress:m1:observe:2"`))
	want := []string{
		"sha256:81623155177c6ce653aea5eb72493adaffcd734a874cda4e10f4f47269d73ae3",
		"sha256:dcd3efad1305caaa24a4bada6cbe801731b1b0c35a8ecaa49227381523bd7b9d",
	}
	for i, e := range [][]byte{e1, e2} {
		tr := mustStep(t, s, e)
		if tr.TransitionDigest != want[i] {
			t.Errorf("step %d digest %s, want %s", i, tr.TransitionDigest, want[i])
		}
		var err error
		if s, err = tr.NextSnapshot.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	var final map[string]any
	_ = json.Unmarshal(s, &final)
	if final["revision"] != float64(2) {
		t.Errorf("final revision %v, want 2", final["revision"])
	}
}

func TestM1SensitivityAndEquivalence(t *testing.T) {
	base := map[string]*Transition{}
	for _, ref := range []string{"observe-no-effect", "observe-with-effect"} {
		s, e := loadInput(t, ref)
		base[ref] = mustStep(t, s, e)
	}
	cases := []struct {
		id, ref string
		mut     op
		idPaths []string // identities that must change too
	}{
		{"sensitivity-event-id", "observe-no-effect", rep("/accepted_event/event_id", `"evt:m1:observe-mutated"`), nil},
		{"sensitivity-observation", "observe-no-effect", rep("/accepted_event/payload/observation/status", `"changed"`), nil},
		{"sensitivity-logical-time", "observe-no-effect", rep("/accepted_event/logical_time", `2`), []string{"derivation"}},
		{"sensitivity-effect-risk", "observe-with-effect", rep("/accepted_event/payload/effect_request/declared_risk_hint", `"unknown"`), []string{"proposal", "dedup"}},
		{"sensitivity-effect-preconditions", "observe-with-effect", rep("/accepted_event/payload/effect_request/preconditions", `["frontier:2"]`), []string{"proposal", "dedup"}},
		{"sensitivity-effect-correlation", "observe-with-effect", rep("/accepted_event/correlation_id", `"run:m1:2"`), []string{"proposal", "dedup"}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			s, e := loadInput(t, c.ref, c.mut)
			tr := mustStep(t, s, e)
			b := base[c.ref]
			if tr.TransitionDigest == b.TransitionDigest {
				t.Error("transition digest did not change")
			}
			for _, p := range c.idPaths {
				switch p {
				case "derivation":
					if tr.FactDeltas[0].DerivationID == b.FactDeltas[0].DerivationID {
						t.Error("derivation id did not change")
					}
				case "proposal":
					if tr.EffectProposals[0].ProposalID == b.EffectProposals[0].ProposalID {
						t.Error("proposal id did not change")
					}
				case "dedup":
					if tr.EffectProposals[0].ProposalDedupKey == b.EffectProposals[0].ProposalDedupKey {
						t.Error("proposal dedup key did not change")
					}
				}
			}
		})
	}
	// The equivalence pair: listing preconditions in another order yields
	// the same transition, byte for byte.
	s0, e0 := loadInput(t, "observe-with-effect", rep("/accepted_event/payload/effect_request/preconditions", `["frontier:1","constraint:artifact-ready"]`))
	a, _ := base["observe-with-effect"].Canonical()
	b, _ := mustStep(t, s0, e0).Canonical()
	if string(a) != string(b) {
		t.Error("equivalence pair: transitions differ")
	}
	// sensitivity-rule-version: a version the snapshot does not share is a typed rejection.
	s, e := loadInput(t, "observe-no-effect", rep("/accepted_event/versions/rule_set", `"rules/1"`))
	_, err := StepJSON(Observation{}, s, e)
	var r *Rejection
	if !errors.As(err, &r) || r.Code != CodeVersionEnvelopeMismatch {
		t.Errorf("rule-set change: got %v, want %s", err, CodeVersionEnvelopeMismatch)
	}
}
