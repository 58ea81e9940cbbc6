package runner

import "flrh.dev/flrh/panel"

// PanelGroup is one group of a panel: its name and the people who may
// answer for it.
type PanelGroup = panel.Group

// Paneled is implemented by workflows whose approval requests may name a
// panel: several groups, each of which a different person must answer for
// (a production change signed off by an SRE lead and by someone from
// security). A grant from a member of any of them answers the request, as
// toward a quorum; the request is approved once the people whose grants
// stand can be paired with its groups, one person to one group, and they
// are at least as many as its quorum (QuorumOf counts one person per group
// at least).
type Paneled interface {
	// Panel lists the groups need's approver stands for, nil when it
	// names no panel.
	Panel(need ApprovalNeed) []PanelGroup
}

// PanelOf is the panel need names in wf, nil when it names none or wf
// knows of no panels.
func PanelOf(wf Workflow, need ApprovalNeed) []PanelGroup {
	if p, ok := wf.(Paneled); ok {
		return p.Panel(need)
	}
	return nil
}
