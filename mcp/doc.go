// Package mcp serves flrh to agents over the Model Context Protocol.
//
// An agent may read and propose; it may never authorize. The server built
// by NewServer offers six tools:
//
//	list_workflows  the workflows a run can be started with      (read-only)
//	list_runs       run headers, in creation order, paged        (read-only)
//	get_run         a run's state, what it waits for, its effects
//	                with their attempts, and its receipts        (read-only)
//	get_journey     the run's control path and its FHR / journey
//	                trace records                                (read-only)
//	start_run       start a run of a workflow with an input      (proposes)
//	submit_input    hand a running run a new domain input        (proposes)
//
// There is no tool that approves, denies, reconciles, cancels or issues a
// control event, and no argument of any tool reaches those acts. Every
// input the server submits is recorded under the agent role (Role "agent",
// Capability "run.input"), so even an input whose body imitates an approval
// grant is just an input: the control FSM accepts approvals only from a
// person with the approver capability, through the approvals ledger, and a
// run that waits for approval keeps waiting.
//
// The server never sends elicitation requests. Elicitation answers come from
// whoever drives the client, which is the agent's side of the wire; an
// "accept" there is not a person's authenticated approval, so the server
// has no use for one and does not ask.
//
// Tool annotations are honest: read-only tools say so, and the hints whose
// protocol default is true (destructive, open world) are set explicitly on
// every tool. Input schemas reject unknown fields; malformed arguments and
// refused requests come back as tool errors (IsError results with a clear
// message), never as protocol failures.
//
// NewServer returns an SDK server for any transport (flrh mcp serves it on
// stdio); Handler serves the streamable HTTP transport, for mounting under
// an HTTP API.
package mcp
