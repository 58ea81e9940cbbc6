package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

func init() {
	root := &cobra.Command{
		Use:   "authority",
		Short: "Check authority decisions: intent projections and gate policies",
	}

	var projectJSON bool
	project := &cobra.Command{
		Use:   "project COMMAND.json",
		Short: "Project one authority command into an approval request or an EffectIntent",
		Long: `Read an HProjectIntentCommand (flrh-h-project-intent-command/1): one published
stable batch, its profile digest, the supplied authority snapshot and any
approval evidence. Print the projection (event, next control state, intent or
approval request, digests) or the typed rejection. Exit 1 on a rejection.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			p, r := authority.ProjectIntentJSON(data)
			out := cmd.OutOrStdout()
			if r != nil {
				if projectJSON {
					b, _ := cjson.Encode(r.Wire())
					fmt.Fprintln(out, string(b))
				} else {
					fmt.Fprintf(out, "REJECTED %s at %s\n", r.Code, r.Path)
				}
				return errChecksFailed
			}
			if projectJSON {
				b, err := cjson.Marshal(p)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "%s -> %s\n", p.Event, p.NextControlState)
			fmt.Fprintf(out, "  actor %s with %s\n", p.ControlEvent.ActorRole, p.ControlEvent.Capability)
			if p.Intent != nil {
				fmt.Fprintf(out, "  intent %s\n  idempotency key %s\n  assessed risk %s\n", p.Intent.IntentID, p.Intent.IdempotencyKey, p.Intent.AssessedRisk)
			}
			if p.ApprovalRequest != nil {
				q := p.ApprovalRequest
				fmt.Fprintf(out, "  approval request %s\n  approver %s (scope %s), expires at %d\n", q.RequestID, q.Actor, q.ApproverScope, q.ExpiresAt)
			}
			fmt.Fprintf(out, "  projection digest %s\n", p.ProjectionDigest)
			return nil
		},
	}
	project.Flags().BoolVar(&projectJSON, "json", false, "print the canonical projection or rejection")

	var gatesJSON bool
	var caps []string
	gates := &cobra.Command{
		Use:   "gates POLICY.dl TICKET.json",
		Short: "Evaluate a gate policy over one Action Ticket and resolve it",
		Long: `Draft an Action Ticket from TICKET.json (ticket_id, action, destination, scope,
parameters, side_effects, declared_risk, required_parameters), evaluate the
gates G1, H1, G2, G3 and G4 of POLICY.dl over its facts, and resolve the
signals with the Meta-Priority Matrix. Each --capability names a capability
id to treat as verified for the ticket. Exit 1 when the outcome is a refusal.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			p, err := authority.CompilePolicy("cli/1", args[0], src, logic.Limits{MaxFirings: 1_000_000})
			if err != nil {
				return usagef("%v", err)
			}
			raw, err := os.ReadFile(args[1])
			if err != nil {
				return usagef("%v", err)
			}
			spec, err := readTicketSpec(raw)
			if err != nil {
				return usagef("%s: %v", args[1], err)
			}
			t, err := authority.DraftTicket(spec)
			if err != nil {
				return usagef("%s: %v", args[1], err)
			}
			var extra []logic.Fact
			for _, c := range caps {
				extra = append(extra, authority.CapabilityFact(t.TicketID, c))
			}
			ev := p.Evaluate(t, extra...)
			res, err := authority.Resolve(ev.Signals)
			if err != nil {
				return err
			}
			// How many people must approve, should the action go to a
			// person; a quorum that cannot be evaluated holds the action.
			quorum, quorumWhy, qerr := p.Quorum(t, extra...)
			if qerr != nil {
				return fmt.Errorf("the policy's quorum: %w", qerr)
			}
			if len(res.Constraints) > 0 {
				if shaped, err := authority.Shape(t, res.Constraints...); err == nil {
					t = shaped
				}
			}
			out := cmd.OutOrStdout()
			if gatesJSON {
				doc := map[string]any{"ticket": t, "evaluation": ev, "resolution": res}
				if quorum > 1 {
					doc["quorum"], doc["quorum_reason"] = quorum, quorumWhy
				}
				b, err := cjson.Marshal(doc)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
			} else {
				printGates(out, t, ev, res, quorum, quorumWhy)
			}
			if res.Decision == authority.Refuse {
				return errChecksFailed
			}
			return nil
		},
	}
	gates.Flags().BoolVar(&gatesJSON, "json", false, "print ticket, evaluation and resolution as canonical JSON")
	gates.Flags().StringArrayVar(&caps, "capability", nil, "a verified capability id covering the ticket (repeatable)")

	root.AddCommand(project, gates)
	rootCmd.AddCommand(root)
}

func readTicketSpec(raw []byte) (authority.TicketSpec, error) {
	v, err := cjson.Decode(raw)
	if err != nil {
		return authority.TicketSpec{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return authority.TicketSpec{}, fmt.Errorf("a ticket is a JSON object")
	}
	var in struct {
		TicketID           string   `json:"ticket_id"`
		Action             string   `json:"action"`
		Destination        string   `json:"destination"`
		Scope              string   `json:"scope"`
		SideEffects        []string `json:"side_effects"`
		DeclaredRisk       string   `json:"declared_risk"`
		AssessedRisk       string   `json:"assessed_risk"`
		RequiredParameters []string `json:"required_parameters"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return authority.TicketSpec{}, err
	}
	params, _ := m["parameters"].(map[string]any)
	s := authority.TicketSpec{TicketID: in.TicketID, Action: in.Action, Destination: in.Destination, Scope: in.Scope,
		Parameters: params, DeclaredRisk: in.DeclaredRisk, AssessedRisk: in.AssessedRisk, RequiredParameters: in.RequiredParameters}
	for _, e := range in.SideEffects {
		s.SideEffects = append(s.SideEffects, authority.SideEffect(e))
	}
	return s, nil
}

func printGates(w io.Writer, t authority.Ticket, ev authority.Evaluation, res authority.Resolution, quorum int, quorumWhy authority.Reason) {
	for _, g := range ev.Gates {
		d := g.Decision.String()
		if d == "" {
			d = "-"
		}
		fmt.Fprintf(w, "%-3s %-9s", g.Gate, d)
		for i, r := range g.Reasons {
			if i > 0 {
				fmt.Fprint(w, "\n              ")
			}
			fmt.Fprintf(w, " %s", r.Rule)
			if len(r.Facts) > 0 || len(r.Absent) > 0 {
				fmt.Fprintf(w, " [%s]", strings.Join(append(append([]string{}, r.Facts...), r.Absent...), ", "))
			}
			// The detail is why a decision is not what the rule said
			// (a gate or verdict the policy misnamed, refused closed).
			if r.Detail != "" {
				fmt.Fprintf(w, " — %s", r.Detail)
			}
		}
		if g.Error != "" {
			fmt.Fprintf(w, " (error: %s)", g.Error)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "decision %s, move %s (highest tier %d)", res.Decision, res.Move, res.HighestTier)
	if res.Contestable {
		fmt.Fprintf(w, ", contestable: options %s", strings.Join(res.Options, ", "))
	}
	fmt.Fprintln(w)
	if ev.AssessedRisk != "" {
		fmt.Fprintf(w, "assessed risk %s\n", ev.AssessedRisk)
	}
	if quorum > 1 {
		fmt.Fprintf(w, "an approval needs %d people, each approving: %s [%s] at %s\n", quorum, quorumWhy.Rule, strings.Join(quorumWhy.Facts, ", "), quorumWhy.Detail)
	}
	fmt.Fprintf(w, "\n%s", t.Preview)
}
