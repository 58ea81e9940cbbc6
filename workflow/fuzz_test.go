package workflow

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzCompile mutates workflow.json: Compile must return a workflow or a
// typed *Error, never panic.
func FuzzCompile(f *testing.F) {
	files := readBundle(f, "../examples/refund-agent")
	f.Add(files[ManifestFile])
	f.Add([]byte(strings.Replace(string(files[ManifestFile]), `"approver": "finance-lead",`,
		`"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`, 1)))
	f.Add([]byte(strings.Replace(string(files[ManifestFile]), `"approver": "finance-lead",`,
		`"approver": "finance-lead", "groups": {"treasury": ["carol", "dave"], "board": ["erin"]},`, 1)))
	f.Add([]byte(strings.Replace(string(files[ManifestFile]), `"approver": "finance-lead",`,
		`"approver": "finance-lead", "groups": {"treasury": ["carol", "dave"], "legal": ["dave", "erin"]}, "panels": {"board": ["treasury", "legal"]},`, 1)))
	f.Add([]byte(strings.Replace(string(files[ManifestFile]), `"approver": "finance-lead",`,
		`"approver": "board", "groups": {"treasury": ["carol"], "legal": ["carol"]}, "panels": {"board": ["treasury", "legal", "treasury"]},`, 1)))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema_version":"flrh-workflow/1","facts":{"x":[1]}}`))
	// The same manifests against gates that ask a quorum of large refunds,
	// or name who approves them.
	quorumGates := append(append([]byte(nil), files["gates.dl"]...), "\n.decl quorum(n: number, rule: symbol)\nquorum(2, \"q\") :- param_num(t, \"amount\", n), n > 1000.\n"...)
	approverGates := append(append([]byte(nil), files["gates.dl"]...), "\n.decl approver(name: symbol, rule: symbol)\napprover(\"treasury\", \"a\") :- param_num(t, \"amount\", n), n > 1000.\n"...)
	f.Fuzz(func(t *testing.T, manifest []byte) {
		fs := map[string][]byte{}
		for k, v := range files {
			fs[k] = v
		}
		switch len(manifest) % 3 {
		case 1:
			fs["gates.dl"] = quorumGates
		case 2:
			fs["gates.dl"] = approverGates
		}
		fs[ManifestFile] = manifest
		w, err := Compile(fs)
		if (w == nil) == (err == nil) {
			t.Fatalf("workflow %v with error %v", w, err)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
		}
	})
}

// FuzzDecideInput feeds arbitrary input bodies to a fresh run: Decide
// refuses or decides, never panics, and a refusal keeps the state.
func FuzzDecideInput(f *testing.F) {
	w := compileExample(f, "refund-agent")
	st, err := w.Init("run-fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(refundInput("r-1", 40, "alice", "damaged")))
	f.Add([]byte(refundInput("r-2", 4000, "mallory", "goodwill")))
	f.Add([]byte(`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":-1,"payee":"","reason":"x"}}`))
	f.Add([]byte(`{"type":"flrh.receipt/1","payload":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []string{KindInput, KindReceipt} {
			r, err := w.Decide(st, Input{Seq: 1, Kind: kind, Body: body})
			if err != nil {
				t.Fatalf("%s: error %v", kind, err)
			}
			if r.Refusal != "" && (!bytes.Equal(r.State, st) || len(r.Effects) > 0) {
				t.Fatalf("%s: a refusal changed the state or planned effects", kind)
			}
		}
	})
}

// FuzzDecideState feeds arbitrary state documents (a corrupt checkpoint):
// Decide and Inspect return an error or a decision, never panic.
func FuzzDecideState(f *testing.F) {
	w := compileExample(f, "refund-agent")
	st, _ := w.Init("run-fuzz")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 400, "bob", "late")})
	f.Add(st)
	f.Add(r.State)
	f.Add([]byte(`{"kind":"flrh.workflow.state"}`))
	in := Input{Seq: 5, Kind: KindInput, Body: refundInput("r-2", 40, "alice", "late")}
	f.Fuzz(func(t *testing.T, state []byte) {
		w.Decide(state, in)
		w.Inspect(state)
		w.AuthorizeApproved(state, ApprovalNeed{RequestID: "approval-request:x"}, Grant{})
	})
}
