package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"
	"time"

	"flrh.dev/flrh/store"
)

// TemplateData is what a route's template (FormatTemplate) reads.
type TemplateData struct {
	ID        string // the notice's id, stable across deliveries
	Kind      string
	Attempt   int
	CreatedAt string // RFC 3339, UTC
	// Link is the run's page in the web UI (or the approvals inbox, for
	// an approval), "" without Config.Link.
	Link string
	// Text is the sentence a person reads (PlainText), link included;
	// for an escalation, saying how long the run has waited.
	Text string
	// EscalatedAfter is, for a route told of runs that have waited long
	// (Route.After), that wait as people say it ("4h"); "" otherwise.
	EscalatedAfter string
	// Notice is the notice's body: run, workflow, state, and what the run
	// waits for.
	Notice store.NoticeBody
}

// MaxTemplateBody bounds what a route's template may write for one
// notice.
const MaxTemplateBody = 64 << 10

// templateFuncs are the functions a route's template may call: json
// writes any value as JSON (a string quoted and escaped), which is how
// text goes into the body safely.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// compileTemplate parses text as a route's template and checks that it
// writes a JSON document of at most MaxTemplateBody bytes for a notice of
// every kind: a template that would fail at a delivery fails here.
func compileTemplate(text string) (*template.Template, error) {
	t, err := template.New("route").Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	sample := store.NoticeBody{RunID: "refund-7", WorkflowID: "refund-agent", WorkflowVersion: "1", State: "WAIT_APPROVAL", Seq: 5,
		Outcome: "success", Requests: []string{"req-1"}, Approvers: "any one of alice, bob (members of finance-leads)", Proposals: []string{"p-1"}, Effects: []string{"intent-1"},
		Park: "degraded_safe_mode", Wires: []string{"W1"}, Reason: `a "quoted" reason`}
	for _, kind := range append(Kinds, TestKind) {
		b := sample
		b.Kind = kind
		no := store.Notice{ID: "refund-7/5/0/" + kind, Kind: kind, RunID: b.RunID, Attempts: 1, CreatedAt: time.Unix(1796471234, 0)}
		if _, err := execTemplate(t, templateData(no, b, "https://flrh.example.com", 4*time.Hour)); err != nil {
			return nil, fmt.Errorf("for a notice of kind %s: %w", kind, err)
		}
	}
	return t, nil
}

// execTemplate runs t over d and checks that it wrote one JSON document.
func execTemplate(t *template.Template, d TemplateData) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, err
	}
	switch out := buf.Bytes(); {
	case len(out) > MaxTemplateBody:
		return nil, fmt.Errorf("it wrote %d bytes, more than %d", len(out), MaxTemplateBody)
	case !json.Valid(out):
		return nil, fmt.Errorf("it wrote no JSON document (give text through json, as {{json .Text}}): %.120q", out)
	default:
		return out, nil
	}
}

// templateData is what a route's template reads of notice no, whose
// body is b, linked from base, for a route told after a wait of after
// (0: at once).
func templateData(no store.Notice, b store.NoticeBody, base string, after time.Duration) TemplateData {
	link := ""
	if no.RunID != "" { // a test notice is no run's
		link = pageFor(b, base)
	}
	d := TemplateData{ID: no.ID, Kind: no.Kind, Attempt: no.Attempts, CreatedAt: no.CreatedAt.UTC().Format(time.RFC3339Nano),
		Link: link, Text: stillWaiting(PlainText(b, base), after), Notice: b}
	if after > 0 {
		d.EscalatedAfter = Span(after)
	}
	return d
}

// render is r's body for d.
func (r *Route) render(d TemplateData) ([]byte, error) {
	if r.compiled == nil {
		return nil, fmt.Errorf("the route has no template")
	}
	out, err := execTemplate(r.compiled, d)
	if err != nil {
		return nil, fmt.Errorf("the route's template: %w", err)
	}
	return out, nil
}
