package notify

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// The formats a delivery's body takes (Config.Format).
const (
	// FormatFlrh is the envelope of the package doc: id, time, attempt
	// and the notice's body, for a receiver of one's own.
	FormatFlrh = "flrh"
	// FormatSlack is {"text": "..."}: a sentence a person reads, with a
	// link to the run when Config.Link is set, as Slack's incoming
	// webhooks take it (and Mattermost's, and Rocket.Chat's).
	FormatSlack = "slack"
	// FormatTemplate is the body a route's Template writes: any JSON a
	// receiver takes (a Discord or Microsoft Teams webhook, a ticketing
	// API), from the notice's TemplateData.
	FormatTemplate = "template"
)

// Kinds are the kinds of notice there are, in the order a person meets
// them.
var Kinds = []string{store.NoticeApproval, store.NoticeChoice, store.NoticeReconciliation, store.NoticeTripped, store.NoticeQuarantined, store.NoticeEnded}

// RunLink is the page of run id in the web UI served at base (the
// server's address as people reach it), or "" without a base.
func RunLink(base, id string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/ui/#/run/" + url.PathEscape(id)
}

// pageFor is where a person acts on notice b in the web UI at base: the
// approvals inbox for an approval, the run's page otherwise; "" without
// a base.
func pageFor(b store.NoticeBody, base string) string {
	if b.Kind == store.NoticeApproval {
		return InboxLink(base)
	}
	return RunLink(base, b.RunID)
}

// InboxLink is the web UI's approvals inbox at base, or "" without one.
func InboxLink(base string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/ui/#/inbox"
}

// SlackText is the sentence FormatSlack sends for a notice: what the run
// waits for, or how it ended, and where to act, in Slack's markup (&, <
// and > escaped; links as <URL|text>).
func SlackText(b store.NoticeBody, base string) string { return sentence(b, base, slackStyle) }

// PlainText is SlackText without markup: the run's id as it is, and the
// page to open after the sentence, for a route's template (Text).
func PlainText(b store.NoticeBody, base string) string { return sentence(b, base, plainStyle) }

// style is how a sentence marks a name, escapes text and writes a link.
type style struct {
	name, esc func(string) string
	link      func(url, text string) string
}

var (
	slackStyle = style{name: func(s string) string { return "*" + slackEscape(s) + "*" }, esc: slackEscape,
		link: func(url, text string) string { return "<" + slackEscape(url) + "|" + text + ">" }} // a run id's & stays in the path
	plainStyle = style{name: func(s string) string { return s }, esc: func(s string) string { return s },
		link: func(url, text string) string { return text + ": " + url }}
)

// sentence is what a notice says to a person, in style st.
func sentence(b store.NoticeBody, base string, st style) string {
	run := "Run " + st.name(b.RunID) + " (" + st.esc(b.WorkflowID+"@"+b.WorkflowVersion+givenLabels(b.Labels)) + ")"
	var text string
	switch b.Kind {
	case store.NoticeApproval:
		text = run + " waits for an approval (" + count(len(b.Requests), "request") + ")"
		if b.Approvers != "" {
			text += " from " + st.esc(b.Approvers)
		}
		text += "."
	case store.NoticeChoice:
		text = run + " waits for a person to choose among options (" + count(len(b.Proposals), "proposal") + ")."
	case store.NoticeReconciliation:
		text = run + " waits for a person to reconcile " + count(len(b.Effects), "effect") + " whose outcome is unknown."
	case store.NoticeTripped:
		text = run + " was frozen by a tripwire (" + st.esc(strings.Join(b.Wires, ", ")) + "; " + st.esc(b.Park) + "): a person must release it."
	case store.NoticeQuarantined:
		text = run + " was quarantined and cannot go on until a person mends it: " + st.esc(b.Reason) + "."
	case store.NoticeEnded:
		text = run + " ended: " + st.esc(b.Outcome) + "."
	case TestKind:
		return "flrh: a test notice: notices reach you here."
	default:
		text = run + ": " + st.esc(b.Kind) + "."
	}
	if l := pageFor(b, base); l != "" {
		what := "Open the run"
		if b.Kind == store.NoticeApproval {
			what = "Open the approvals inbox"
		}
		text += " " + st.link(l, what)
	}
	return "flrh: " + text
}

// givenLabels is ", k=v, k=v" of the labels those who started the run
// gave it, "" for none: flrh's own (the schedule or webhook that started
// it) tell a person nothing the run's id and page do not.
func givenLabels(labels map[string]string) string {
	var given []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !strings.HasPrefix(k, label.Reserved) {
			given = append(given, k+"="+labels[k])
		}
	}
	if len(given) == 0 {
		return ""
	}
	return ", " + strings.Join(given, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// slackEscape escapes the three characters Slack's markup reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// body is what a delivery of no to r carries, in r's format.
func (n *Notifier) body(r *Route, no store.Notice) ([]byte, error) {
	after := r.escalatedAfter(no)
	if r.Format == FormatTemplate {
		var b store.NoticeBody
		if err := json.Unmarshal(no.Body, &b); err != nil {
			return nil, err
		}
		return r.render(templateData(no, b, n.cfg.Link, after))
	}
	if r.Format == FormatSlack {
		var b store.NoticeBody
		if err := json.Unmarshal(no.Body, &b); err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			Text string `json:"text"`
		}{stillWaiting(SlackText(b, n.cfg.Link), after)})
	}
	link := ""
	if no.RunID != "" { // a test notice is no run's
		link = RunLink(n.cfg.Link, no.RunID)
	}
	return json.Marshal(envelope{ID: no.ID, CreatedAt: no.CreatedAt.UTC().Format(time.RFC3339Nano), Attempt: no.Attempts, Link: link,
		EscalatedAfter: int64(after / time.Second), Notice: no.Body})
}

// escalatedAfter is how long the run had waited when r, an escalation,
// is told of notice no: r.After, or 0 for a route told at once and for
// a test notice (no run's wait).
func (r *Route) escalatedAfter(no store.Notice) time.Duration {
	if no.Kind == TestKind {
		return 0
	}
	return r.After
}

// stillWaiting is a notice's sentence as an escalation after a wait
// says it: "flrh: Still waiting after 4h. Run …"; text as it is without
// one.
func stillWaiting(text string, after time.Duration) string {
	if after <= 0 {
		return text
	}
	return "flrh: Still waiting after " + Span(after) + ". " + strings.TrimPrefix(text, "flrh: ")
}

// Span writes a duration as people say it: 4h, 90m, 1h30m, 45s, without
// the zero units time.Duration's String writes ("4h0m0s").
func Span(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
