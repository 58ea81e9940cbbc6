// Package workflow compiles a workflow bundle — data a user writes without
// Go — into a pure pipeline that decides one accepted input at a time:
//
//	input {"type", "payload"} | receipt
//	  → F  kernel.Step with the bundle's declarative domain
//	  → L  logic.Solve over the live base supports, through the facts table
//	  → LR seam.Project, preconditions bound by the eligibility table
//	  → R  frontier.Step, one epoch and one published batch per proposal
//	  → H  authority.Authorize under the bundle's gates, tools, signed
//	       capabilities and approval policy
//	  → effects (authorized intents, or intents waiting on a person),
//	    the turn's trace (F transition, seam verdicts, the FHR, outcomes)
//	    and a completion verdict from the bundle's complete_when/fail_when.
//
// [Compile] checks a bundle (map of file name to bytes) and returns a
// [Workflow] or an [*Error] naming the file, the place in it and the
// problem. [Workflow.Init], [Workflow.Decide], [Workflow.CheckGrant] and
// [Workflow.AuthorizeApproved] are the pure half of a runner workflow;
// package bundle reads bundles from disk and adapts them to the runner.
//
// A proposal H answers with OPTIONS waits in the state until a choice
// input names one of its options: a person in a human role exercising
// mrp.choose_option (CHOOSE_OPTION in the Journey Strip), or, where the
// gate policy derives autonomous_choice(t), the bundle's active-inference
// controller (OPTION_SELECTED, chooser of record aif_controller). H then
// decides the proposal again with chosen(t, option) presented. The
// controller observes the accepted inputs the bundle maps, keeps its
// belief in the state in fixed point, and traces each step (aif.step) and
// each scoring of options (aif.scorecard). See docs/workflows.md.
//
// Everything is a function of its arguments: logical time is the input's
// sequence number, timestamps derive from it unless the input carries its
// own occurred_at, identifiers derive from the run id and the sequence, and
// the state (canonical JSON) holds the kernel snapshot, the live L base
// supports, the R watermark, the MRP machine, the pending approval
// requests and offers, and the controller's belief — never a materialization, which each tick rebuilds, so a replay
// from the first input reproduces every byte.
package workflow
