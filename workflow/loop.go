package workflow

import (
	"errors"

	"flrh.dev/flrh/control"
)

// loop reads the optional loop section of workflow.json: the workflow's
// own budgets and retry backoff, applied over the embedded loop contract
// with the contract's bounds. Without one the workflow runs under the
// contract as it is. The section is part of workflow.json, so the
// workflow's digest binds it.
//
//	"loop": {"budgets": {"steps": 40, "tool_calls": 10, "wall_seconds": 120, "suspended_seconds": 3600},
//	         "retry": {"base_millis": 250, "cap_millis": 4000}}
func (c *compiler) loop(w *Workflow) *Error {
	base := control.DefaultContract()
	raw, present := c.root["loop"]
	if !present {
		w.contract = base
		return nil
	}
	ct, err := base.OverrideValue(raw)
	if err != nil {
		var ce *control.Error
		if errors.As(err, &ce) {
			return bundleErr(CodeBadLoop, ManifestFile, "/loop"+ce.Pointer, "%s", ce.Detail)
		}
		return bundleErr(CodeBadLoop, ManifestFile, "/loop", "%v", err)
	}
	w.contract = ct
	return nil
}

// LoopContract is the loop contract the workflow's runs are governed by:
// the embedded contract with the bundle's loop section applied.
func (w *Workflow) LoopContract() *control.Contract { return w.contract }
