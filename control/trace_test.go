package control

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestDecodeTracesRejectsMalformedFiles(t *testing.T) {
	const step = `{"event":{"type":"START","actor_role":"runner","capability":"control.start","event_id":"a:1","payload":{}},"guard_results":{},"expected_state":"INGEST","expected_effects":["PersistControlTransition"]}`
	file := func(cases string) string {
		return `{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"c","cases":[` + cases + `]}`
	}
	oneCase := func(s string) string { return file(`{"id":"a","machine":"control","steps":[` + s + `]}`) }
	cases := []struct {
		name, text string
		code       Code
		pointer    string
	}{
		{"truncated", `{"schema_version":`, CodeSyntax, ""},
		{"float", oneCase(strings.Replace(step, `"payload":{}`, `"payload":{"n":1.5}`, 1)), CodeSyntax, "/cases/0/steps/0/event/payload/n"},
		{"duplicate key", `{"schema_version":"a","schema_version":"b"}`, CodeSyntax, "/schema_version"},
		{"array root", `[]`, CodeSchema, ""},
		{"wrong version", `{"schema_version":"flrh-run-fsm-traces/v2","coverage_claim":"c","cases":[]}`, CodeFormat, "/schema_version"},
		{"no coverage", `{"schema_version":"flrh-run-fsm-traces/v1","cases":[]}`, CodeSchema, "/coverage_claim"},
		{"empty coverage", `{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"","cases":[]}`, CodeSchema, "/coverage_claim"},
		{"no cases", file(``), CodeSchema, "/cases"},
		{"unknown top member", `{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"c","cases":[` + `{"id":"a","machine":"control","steps":[` + step + `]}` + `],"extra":1}`, CodeSchema, "/extra"},
		{"bad case id", file(`{"id":"A","machine":"control","steps":[` + step + `]}`), CodeSchema, "/cases/0/id"},
		{"other machine", file(`{"id":"a","machine":"mrp","steps":[` + step + `]}`), CodeSchema, "/cases/0/machine"},
		{"no steps", file(`{"id":"a","machine":"control","steps":[]}`), CodeSchema, "/cases/0/steps"},
		{"duplicate case id", file(`{"id":"a","machine":"control","steps":[` + step + `]},{"id":"a","machine":"control","steps":[` + step + `]}`), CodeDuplicate, "/cases/1/id"},
		{"missing event", oneCase(`{"guard_results":{},"expected_state":"INGEST","expected_effects":[]}`), CodeSchema, "/cases/0/steps/0/event"},
		{"lowercase type", oneCase(strings.Replace(step, `"START"`, `"start"`, 1)), CodeSchema, "/cases/0/steps/0/event/type"},
		{"bad role", oneCase(strings.Replace(step, `"runner"`, `"Runner"`, 1)), CodeSchema, "/cases/0/steps/0/event/actor_role"},
		{"bad capability", oneCase(strings.Replace(step, `"control.start"`, `"control start"`, 1)), CodeSchema, "/cases/0/steps/0/event/capability"},
		{"empty event id", oneCase(strings.Replace(step, `"a:1"`, `""`, 1)), CodeSchema, "/cases/0/steps/0/event/event_id"},
		{"payload not object", oneCase(strings.Replace(step, `"payload":{}`, `"payload":[]`, 1)), CodeSchema, "/cases/0/steps/0/event/payload"},
		{"unknown event member", oneCase(strings.Replace(step, `"payload":{}`, `"payload":{},"actor":"x"`, 1)), CodeSchema, "/cases/0/steps/0/event/actor"},
		{"guard not boolean", oneCase(strings.Replace(step, `"guard_results":{}`, `"guard_results":{"frontier_passed":1}`, 1)), CodeSchema, "/cases/0/steps/0/guard_results/frontier_passed"},
		{"bad guard name", oneCase(strings.Replace(step, `"guard_results":{}`, `"guard_results":{"Frontier":true}`, 1)), CodeSchema, "/cases/0/steps/0/guard_results/Frontier"},
		{"bad expected state", oneCase(strings.Replace(step, `"INGEST"`, `"ingest"`, 1)), CodeSchema, "/cases/0/steps/0/expected_state"},
		{"duplicate expected effect", oneCase(strings.Replace(step, `["PersistControlTransition"]`, `["PersistControlTransition","PersistControlTransition"]`, 1)), CodeDuplicate, "/cases/0/steps/0/expected_effects/1"},
		{"bad expected effect", oneCase(strings.Replace(step, `["PersistControlTransition"]`, `["persist"]`, 1)), CodeSchema, "/cases/0/steps/0/expected_effects/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTraces([]byte(tc.text))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *control.Error", err)
			}
			if e.Code != tc.code || (tc.pointer != "" || tc.code != CodeSyntax) && e.Pointer != tc.pointer {
				t.Errorf("got %s at %q (%s), want %s at %q", e.Code, e.Pointer, e.Detail, tc.code, tc.pointer)
			}
		})
	}
	// The well-formed variant decodes.
	tf, err := DecodeTraces([]byte(oneCase(step)))
	if err != nil || len(tf.Cases) != 1 || tf.Cases[0].Steps[0].Event.Type != "START" {
		t.Fatalf("valid file: %v %+v", err, tf)
	}
	if _, err := DecodeTraces(make([]byte, MaxTraceFileBytes+1)); err == nil {
		t.Error("oversized file accepted")
	}
}

func TestDecodeEvent(t *testing.T) {
	e, err := DecodeEvent([]byte(`{"type":"CANCEL","actor_role":"authorized_requester","capability":"run.cancel","event_id":"r:9","payload":{"why":"operator"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != "CANCEL" || e.Payload["why"] != "operator" {
		t.Errorf("event %+v", e)
	}
	if r := Default().Step(Default().Initial(), e); r.Next.State != "CANCELED" {
		t.Errorf("decoded CANCEL led to %s", r.Next.State)
	}
	_, err = DecodeEvent([]byte(`{"type":"CANCEL","actor_role":"authorized_requester","capability":"run.cancel","event_id":"r:9"}`))
	if e := new(Error); !errors.As(err, &e) || e.Pointer != "/payload" {
		t.Errorf("missing payload: %v", err)
	}
}

func TestCoverageReportsWhatIsMissing(t *testing.T) {
	m := Default()
	var steps []TraceStep
	for _, s := range transcribed["ag"] {
		steps = append(steps, TraceStep{Event: s.event, Guards: s.guards, WantState: s.state, WantEffects: s.effects})
	}
	res, err := m.RunCase(TraceCase{ID: "ag", Steps: steps})
	if err != nil || !res.Passed {
		t.Fatal(res, err)
	}
	var cov Coverage
	cov.Add(m, res)
	rep := cov.Report(m)
	if rep.Complete() {
		t.Fatal("one case reported complete coverage")
	}
	if rep.Transitions.Hit != 4 || rep.Transitions.Of != 25 || len(rep.Transitions.Missing) != 21 {
		t.Errorf("transitions %+v", rep.Transitions)
	}
	if rep.FalseGuards.Hit != 1 || rep.FalseGuards.Missing[0] != "frontier_passed" {
		t.Errorf("false guards %+v", rep.FalseGuards)
	}
	if rep.FinalStates.Hit != 0 || !slices.Equal(rep.Rejections, []string{"guard_false"}) {
		t.Errorf("report %s", rep)
	}
}
