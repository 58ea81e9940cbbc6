package control

import (
	"errors"
	"reflect"
	"testing"
)

// A small trace file in the run-fsm-traces/v1 format (one case transcribed
// from the reference corpus, one refused event) seeds the trace fuzzer.
const seedTraces = `{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"seed","cases":[
{"id":"nes","machine":"control","steps":[
{"event":{"type":"START","actor_role":"runner","capability":"control.start","event_id":"nes:1","payload":{}},"guard_results":{},"expected_state":"INGEST","expected_effects":["PersistControlTransition"]},
{"event":{"type":"EVENT_ACCEPTED","actor_role":"ingress_validator","capability":"event.accept","event_id":"nes:2","payload":{}},"guard_results":{},"expected_state":"STABILIZE","expected_effects":["PersistControlTransition"]},
{"event":{"type":"EPOCH_STABLE","actor_role":"stabilizer","capability":"epoch.close","event_id":"nes:3","payload":{}},"guard_results":{"frontier_passed":true},"expected_state":"PLAN_EFFECTS","expected_effects":["PersistControlTransition"]}]},
{"id":"unauth","machine":"control","steps":[
{"event":{"type":"START","actor_role":"model","capability":"control.start","event_id":"unauth:1","payload":{}},"guard_results":{},"expected_state":"INIT","expected_effects":["AuditInvalidTransition"]}]}]}`

func typedOrNil(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	if e.Code == "" || e.Detail == "" {
		t.Fatalf("error without code or detail: %+v", e)
	}
}

func FuzzDecodeTraces(f *testing.F) {
	f.Add([]byte(seedTraces))
	f.Add([]byte(`{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"x","cases":[]}`))
	f.Add([]byte(`{"schema_version":"flrh-run-fsm-traces/v1","coverage_claim":"x","cases":[{"id":"a","machine":"control","steps":[{"event":{"type":"CANCEL","actor_role":"authorized_requester","capability":"run.cancel","event_id":"a:1","payload":{"x":[1,{"y":null}]}},"guard_results":{"intent_durable":false,"completion_closed":true},"expected_state":"CANCELED","expected_effects":[]}]}]}`))
	m := Default()
	f.Fuzz(func(t *testing.T, text []byte) {
		tf, err := DecodeTraces(text)
		typedOrNil(t, err)
		if err != nil {
			return
		}
		for _, tc := range tf.Cases {
			res, err := m.RunCase(tc)
			typedOrNil(t, err)
			if err == nil && res.Passed && res.Final == "" {
				t.Fatal("passing case without a final state")
			}
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add(defaultTable)
	f.Add(mutateTable(f, func(r map[string]any) { delete(r, "interrupts") }))
	f.Add(mutateTable(f, func(r map[string]any) { r["states"] = []any{map[string]any{"id": "INIT"}} }))
	f.Add([]byte(`{"format":"flrh-control-fsm/1"}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		m, err := Load(text)
		typedOrNil(t, err)
		if err != nil {
			return
		}
		again, err := Load(text)
		if err != nil || again.Digest() != m.Digest() {
			t.Fatalf("reload: %v, digest %s vs %s", err, again.Digest(), m.Digest())
		}
		// A loaded table can be stepped with any of its own events.
		c := m.Initial()
		for _, e := range m.Events() {
			r := m.Step(c, Event{Type: e.ID, ActorRole: e.Authority[0].Role, Capability: e.Authority[0].Capability, EventID: "f:1"})
			if !r.Accepted() && !reflect.DeepEqual(r.Next, c) {
				t.Fatal("rejection changed the configuration")
			}
		}
	})
}

func FuzzLoadContract(f *testing.F) {
	f.Add(defaultContract)
	f.Add([]byte(`{"format":"flrh-loop-contract/1","fsm":{}}`))
	m := Default()
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := LoadContract(text, m)
		typedOrNil(t, err)
		if err == nil && c.MachineDigest != m.Digest() {
			t.Fatal("contract loaded against a different table digest")
		}
	})
}

func FuzzStep(f *testing.F) {
	f.Add("START", "runner", "control.start", "e:1", "INIT", "", uint8(0))
	f.Add("CANCEL", "authorized_requester", "run.cancel", "e:2", "EXECUTE", "TIMEOUT", uint8(31))
	f.Add("APPROVAL_GRANTED", "model", "approval.grant_exact_hash", "e:3", "WAIT_APPROVAL", "", uint8(1))
	m := Default()
	f.Fuzz(func(t *testing.T, typ, role, capability, id, state, pend string, mask uint8) {
		c := Configuration{State: state, Seq: 1, Context: map[string]bool{}}
		if pend != "" {
			c.Pending = []string{pend}
		}
		for i, k := range contextFields {
			if mask&(1<<i) != 0 {
				c.Context[k] = true
			}
		}
		before := cloneConfiguration(c)
		r := m.Step(c, Event{Type: typ, ActorRole: role, Capability: capability, EventID: id})
		if !reflect.DeepEqual(c, before) {
			t.Fatal("Step modified its input")
		}
		if r.Accepted() {
			if !m.Authorized(typ, role, capability) {
				t.Fatalf("unauthorized event accepted: %s %s %s", typ, role, capability)
			}
			if r.Next.Seq != c.Seq+1 {
				t.Fatal("accepted step did not advance seq")
			}
		} else if len(r.Effects) != 1 || r.Effects[0].Name != audit {
			t.Fatalf("rejection emitted %v", r.EffectNames())
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"type":"CANCEL","actor_role":"authorized_requester","capability":"run.cancel","event_id":"r:9","payload":{}}`))
	f.Add([]byte(`{"type":"START","actor_role":"model","capability":"control.start","event_id":"x","payload":{"evidence":{"workflow_digest":"sha256:00"}}}`))
	m := Default().WithStrictEvidence()
	f.Fuzz(func(t *testing.T, text []byte) {
		e, err := DecodeEvent(text)
		typedOrNil(t, err)
		if err != nil {
			return
		}
		c := m.Initial()
		if r := m.Step(c, e); !r.Accepted() && !reflect.DeepEqual(r.Next, c) {
			t.Fatal("rejection changed the configuration")
		}
	})
}

func FuzzDecodeConfiguration(f *testing.F) {
	f.Add([]byte(`{"state":"EXECUTE","pending_interrupts":["CANCEL"],"seq":5,"context":{"intent_durable":true}}`))
	f.Add([]byte(`{"table":"sha256:0000000000000000000000000000000000000000000000000000000000000000","state":"INIT","pending_interrupts":[],"seq":0}`))
	m := Default()
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := DecodeConfiguration(text)
		typedOrNil(t, err)
		if err != nil {
			return
		}
		valid := m.Validate(c) == nil
		r := m.Step(c, ev("CANCEL", "z"))
		if !valid && (r.Accepted() || r.Rejection.Reason != ReasonConfiguration) {
			t.Fatalf("invalid configuration stepped: %+v", r.Rejection)
		}
		b, err := EncodeConfiguration(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeConfiguration(b)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
