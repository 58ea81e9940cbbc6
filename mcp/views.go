package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// The tools' results. Their JSON Schemas (the tools' output schemas) are
// inferred from these types.

// WorkflowList is list_workflows' result.
type WorkflowList struct {
	Workflows []WorkflowInfo `json:"workflows"`
}

// WorkflowInfo names one workflow.
type WorkflowInfo struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Digest  string `json:"digest" jsonschema:"binds the workflow's exact definition"`
}

// RunList is list_runs' result.
type RunList struct {
	Runs []RunHeader `json:"runs"`
	Next string      `json:"next,omitempty" jsonschema:"pass as after to read on; absent at the end"`
}

// RunHeader is one run in a list.
type RunHeader struct {
	RunID      string `json:"run_id"`
	Workflow   string `json:"workflow"`
	Version    string `json:"version"`
	State      string `json:"state"`
	Outcome    string `json:"outcome,omitempty"`
	Quarantine string `json:"quarantine,omitempty"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
	// Labels are what the run was started with, omitted when none.
	Labels map[string]string `json:"labels,omitempty"`
}

// RunView is where a run stands and what it waits for.
type RunView struct {
	RunHeader
	Head           int64             `json:"head" jsonschema:"sequence number of the run's last event"`
	AcceptedInputs int64             `json:"accepted_inputs"`
	OpenEffects    int               `json:"open_effects" jsonschema:"effects planned and not yet closed by a receipt"`
	WaitsFor       []string          `json:"waits_for" jsonschema:"what the run waits for, and from whom"`
	Approvals      []ApprovalWaiting `json:"approvals_waiting"`
	Unknown        []string          `json:"unknown_outcomes" jsonschema:"intents whose outcome a person must reconcile"`
}

// ApprovalWaiting is an approval a person must give or refuse.
type ApprovalWaiting struct {
	RequestID     string   `json:"request_id"`
	RequestDigest string   `json:"request_digest" jsonschema:"the exact digest an approval must bind"`
	IntentID      string   `json:"intent_id"`
	Preview       string   `json:"preview" jsonschema:"exactly what the approver is shown"`
	Quorum        int      `json:"quorum,omitempty" jsonschema:"how many people must each approve, when more than one"`
	ApprovedBy    []string `json:"approved_by,omitempty" jsonschema:"who has approved so far, toward the quorum"`
	WhoMayApprove string   `json:"who_may_approve,omitempty" jsonschema:"who may give it, where the workflow says: a person, a group's members, how many"`
	Awaiting      string   `json:"awaiting,omitempty" jsonschema:"whom a panel still waits for, given the approvals so far"`
}

// Progress is what start_run and submit_input report.
type Progress struct {
	Run     RunView `json:"run"`
	Settled bool    `json:"settled" jsonschema:"the run ended, waits for a person, or stopped moving"`
	Pending int     `json:"inputs_pending" jsonschema:"inputs submitted to the run that it has not read yet"`
	Note    string  `json:"note,omitempty"`
}

// RunDetail is get_run's result.
type RunDetail struct {
	Run      RunView   `json:"run"`
	Effects  []Effect  `json:"effects"`
	Receipts []Receipt `json:"receipts"`
	Note     string    `json:"note,omitempty"`
}

// Effect is one committed intent with its outbox state and attempts.
type Effect struct {
	IntentID       string    `json:"intent_id"`
	EffectType     string    `json:"effect_type"`
	IdempotencyKey string    `json:"idempotency_key"`
	ContentDigest  string    `json:"content_digest"`
	ApprovalID     string    `json:"approval_id,omitempty" jsonschema:"the grant the intent consumed, if it needed one"`
	Outbox         string    `json:"outbox"`
	Route          string    `json:"route,omitempty"`
	Digest         string    `json:"digest"`
	Intent         any       `json:"intent" jsonschema:"the committed EffectIntent"`
	Attempts       []Attempt `json:"attempts"`
}

// Attempt is one try of an intent against its destination.
type Attempt struct {
	N          int64  `json:"n"`
	Status     string `json:"status"`
	Detail     string `json:"detail,omitempty"`
	StartedAt  string `json:"started_at,omitempty"`
	FinishedAt string `json:"finished_at,omitempty"`
}

// Receipt closes an intent.
type Receipt struct {
	IntentID string `json:"intent_id"`
	Outcome  string `json:"outcome"`
	Digest   string `json:"digest"`
	Receipt  any    `json:"receipt" jsonschema:"the ActionReceipt"`
}

// Journey is get_journey's result.
type Journey struct {
	RunID   string        `json:"run_id"`
	State   string        `json:"state"`
	Outcome string        `json:"outcome,omitempty"`
	Path    []Step        `json:"path" jsonschema:"the run's control path in event order"`
	Strip   *Strip        `json:"strip,omitempty" jsonschema:"the deliberation machine's Journey Strip after the latest turn, when the workflow records one"`
	Records []TraceRecord `json:"records" jsonschema:"FHR and journey trace records (every record with all_trace)"`
}

// Strip is the Journey Strip as the latest turn left it: the deliberation
// states the run passed through (HOLD, OPTIONS, TEST, DECIDE, and FAILSAFE,
// EXIT or ESCALATE when it came to that) and whether Degraded Safe Mode
// is on.
type Strip struct {
	State    string   `json:"state"`
	SafeMode bool     `json:"safe_mode"`
	States   []string `json:"states"`
	Record   int      `json:"record" jsonschema:"the index of the trace record it comes from"`
}

// Step is one event on a run's control path.
type Step struct {
	Seq        int64  `json:"seq"`
	Kind       string `json:"kind" jsonschema:"transition, refused or accepted_input"`
	Event      string `json:"event,omitempty"`
	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	ActorRole  string `json:"actor_role,omitempty"`
	Capability string `json:"capability,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Detail     string `json:"detail,omitempty"`
	Actor      string `json:"actor,omitempty" jsonschema:"who submitted an accepted input"`
	Digest     string `json:"digest"`
}

// TraceRecord is one observation from a run's trace; it is never
// authoritative.
type TraceRecord struct {
	Index int    `json:"index" jsonschema:"position in the run's trace"`
	Kind  string `json:"kind"`
	Body  any    `json:"body"`
}

func header(r store.Run) RunHeader {
	return RunHeader{RunID: r.ID, Workflow: r.WorkflowID, Version: r.WorkflowVersion, State: r.State, Outcome: r.Outcome,
		Quarantine: r.Quarantine, CreatedAt: stamp(r.CreatedAt), UpdatedAt: stamp(r.UpdatedAt), Labels: r.Labels}
}

func view(st runner.Status) RunView {
	v := RunView{RunHeader: header(st.Run), Head: st.Run.Head, AcceptedInputs: st.Accepted, OpenEffects: st.Open,
		WaitsFor: []string{}, Approvals: []ApprovalWaiting{}, Unknown: []string{}}
	for _, w := range st.Waiting {
		v.Approvals = append(v.Approvals, ApprovalWaiting{RequestID: w.RequestID, RequestDigest: w.RequestDigest, IntentID: w.IntentID, Preview: w.Preview,
			Quorum: w.Quorum, ApprovedBy: w.ApprovedBy, WhoMayApprove: w.WhoMayApprove, Awaiting: w.Awaiting})
		who := "a person's approval"
		if w.Quorum > 1 {
			who = fmt.Sprintf("%d people's approvals (%d so far)", w.Quorum, len(w.ApprovedBy))
		}
		if w.Awaiting != "" {
			who += ", still from " + w.Awaiting
		}
		from := ""
		if w.WhoMayApprove != "" {
			from = "; who may approve: " + w.WhoMayApprove
		}
		v.WaitsFor = append(v.WaitsFor, fmt.Sprintf("%s or denial of request %s (%s)%s; an agent cannot give it", who, w.RequestID, w.Preview, from))
	}
	for _, u := range st.Unknown {
		v.Unknown = append(v.Unknown, u)
		v.WaitsFor = append(v.WaitsFor, fmt.Sprintf("a person's reconciliation of %s, whose outcome is unknown", u))
	}
	if st.Run.Quarantine != "" {
		v.WaitsFor = append(v.WaitsFor, "an operator: the run is quarantined ("+st.Run.Quarantine+")")
	}
	return v
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decoded returns stored canonical JSON as a value, keeping integers exact.
func decoded(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(body)
	}
	return v
}

// journey assembles a run's control path from its events and picks the
// FHR and journey records (or, with all, every record) from its trace.
func journey(run store.Run, evs []store.Event, trace []store.TraceRecord, all bool) (Journey, error) {
	j := Journey{RunID: run.ID, State: run.State, Outcome: run.Outcome, Path: []Step{}, Records: []TraceRecord{}}
	for _, e := range evs {
		switch e.Kind {
		case runner.EventControl, runner.EventRejected:
			var rec control.Record
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				return Journey{}, fmt.Errorf("run %s event %d: %v", run.ID, e.Seq, err)
			}
			s := Step{Seq: e.Seq, Kind: "transition", Event: rec.Event, From: rec.From, To: rec.To, ActorRole: rec.ActorRole,
				Capability: rec.Capability, Digest: e.Digest}
			if !rec.Accepted {
				s.Kind, s.To, s.Reason, s.Detail = "refused", "", string(rec.Reason), rec.Detail
			}
			j.Path = append(j.Path, s)
		case runner.EventAccepted:
			var rec struct {
				Kind  string `json:"kind"`
				Actor string `json:"actor"`
			}
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				return Journey{}, fmt.Errorf("run %s event %d: %v", run.ID, e.Seq, err)
			}
			j.Path = append(j.Path, Step{Seq: e.Seq, Kind: "accepted_input", Event: rec.Kind, Actor: rec.Actor, Digest: e.Digest})
		}
	}
	for i, tr := range trace {
		if all || journeyKind(tr.Kind) {
			j.Records = append(j.Records, TraceRecord{Index: i, Kind: tr.Kind, Body: decoded(tr.Body)})
		}
		if tr.Kind == journeyRecord {
			var rec struct {
				State    string   `json:"state"`
				SafeMode bool     `json:"safe_mode"`
				Strip    []string `json:"strip"`
			}
			if json.Unmarshal(tr.Body, &rec) == nil && rec.State != "" {
				if rec.Strip == nil {
					rec.Strip = []string{}
				}
				j.Strip = &Strip{State: rec.State, SafeMode: rec.SafeMode, States: rec.Strip, Record: i}
			}
		}
	}
	return j, nil
}

// journeyRecord is the trace kind under which workflows record the
// deliberation machine's Journey Strip after each turn.
const journeyRecord = "mrp.journey"

// journeyKind reports whether a trace record is an FHR or a journey
// record: kinds such as FHR, h.fhr or journey.
func journeyKind(kind string) bool {
	k := strings.ToLower(kind)
	return strings.Contains(k, "fhr") || strings.Contains(k, "journey")
}
