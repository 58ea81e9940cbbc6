package policytest

import (
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/workflow"
)

// Pin returns the case file name, whose bytes are src, with every step's
// expectations replaced by what w decides for it: H's outcomes, the
// effects (type, approver, every parameter), the options offered, the
// deliberation machine's state, the completion, what a grant did, or the
// refusal's whole text. The cases then pass against w and pin what it
// decides, to be run against another version of the bundle. The file
// comes back as indented JSON. A step that cannot be taken (a receipt
// with no effect waiting for one, a step after the run ended) is an
// error naming the case and the step, as a file that cannot be read is.
func Pin(w *workflow.Workflow, name string, src []byte) ([]byte, error) {
	f, err := parse(name, src)
	if err != nil {
		return nil, err
	}
	for ci := range f.Cases {
		if err := pinCase(w, name, ci, &f.Cases[ci]); err != nil {
			return nil, err
		}
	}
	return encode(f)
}

// pinCase pins the steps of c, the file name's case ci.
func pinCase(w *workflow.Workflow, name string, ci int, c *testCase) error {
	r, err := newRun(w, c.Run)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, c.Name, err)
	}
	for si := range c.Steps {
		s := &c.Steps[si]
		d, why := r.step(int64(si+1), *s)
		if why != "" {
			return stepError(name, ci, si, c.Name, why)
		}
		s.Expect = pinned(w, *s, d)
	}
	return nil
}

// stepError is a BAD_TEST error at the file name's case ci, step si.
func stepError(name string, ci, si int, caseName, why string) *workflow.Error {
	return &workflow.Error{Code: workflow.CodeBadTest, File: name, Pointer: fmt.Sprintf("/cases/%d/steps/%d", ci, si),
		Detail: fmt.Sprintf("%s: step %d: %s", caseName, si+1, why)}
}

// encode is a case file as indented JSON.
func encode(f *file) ([]byte, error) {
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// pinned is the expectation a step that decided d meets exactly.
func pinned(w *workflow.Workflow, s step, d decided) *expect {
	if d.refusal != "" {
		return &expect{Refused: &d.refusal}
	}
	e := &expect{Approval: d.approval, Completion: d.completion, MRPState: d.mrpState}
	if s.Approve == "" && s.Deny == "" {
		outcomes := append([]string{}, d.outcomes...)
		e.Outcomes = &outcomes
	}
	if len(d.options) > 0 {
		e.Options = &d.options
	}
	if s.Deny == "" {
		effects := []effectExpect{}
		for _, got := range d.effects {
			approver := approverOf(w, got)
			x := effectExpect{EffectType: got.Intent.EffectType, Approver: &approver}
			if json.Unmarshal(got.Payload, &x.Params) != nil || len(x.Params) == 0 {
				x.Params = nil
			}
			effects = append(effects, x)
		}
		e.Effects = &effects
	}
	return e
}
