package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Notice is a message for people outside the runtime: a run waits for
// one of them, was frozen by a tripwire, or has ended. The runner adds it
// to the tick that causes it (Tick.Notices), so the store holds it if
// and only if it holds the tick: the transactional outbox pattern, with
// nothing lost in a crash between deciding and telling. A notifier
// (Noticeboard) claims notices, delivers them and deletes them; one
// delivered and then claimed again, because its deliverer died before
// it could say so, is delivered twice under the same ID, which receivers
// use to drop the repeat.
//
// A body holds identifiers and states, never a run's inputs or an
// effect's content: it is neither sealed nor pruned with its run, and it
// goes to systems outside the store's protection.
type Notice struct {
	// Set by the writer of the tick.
	Kind string // what happened: NoticeApproval, NoticeChoice, NoticeReconciliation, NoticeTripped, NoticeEnded
	Body []byte // a JSON object

	// Set by the store.
	ID        string // run, head, trace position and kind: unique in the store, stable across deliveries
	RunID     string
	Seq       int64 // the run's head after the tick
	CreatedAt time.Time
	// Attempts counts deliveries begun, the one a claim starts
	// included; LastError says why the one before failed.
	Attempts  int
	LastError string
	// Sent names the routes that took the notice in earlier attempts
	// (NoticeRetry's sent), in the order given: a notifier delivering
	// to several routes sends it again only to the others.
	Sent []string
	// Waits, set by ClaimNotices alone, are the routes that failed to
	// take the notice before, or are told of it later (NoticeRetry's
	// waits), by route, each with how often it failed and what is left
	// of its wait at the claim: a notifier sends now to those whose wait
	// has passed (After 0) and to routes never tried, and to the others
	// on a later claim.
	Waits []RouteWait
}

// RouteWait is how long a notice waits before it is sent to one route
// (again): a route that failed waits as long as it asked (its backoff,
// its receiver's Retry-After) without holding back the others, and backs
// off by its own failures; a route told only of runs that have waited
// long (an escalation) waits, without a failure, until they have.
type RouteWait struct {
	Route string
	After time.Duration
	// Failures counts how often the route failed to take the notice; 0
	// for a route not yet tried, waiting to be told later.
	Failures int
}

// The kinds of notice the runner writes.
const (
	NoticeApproval       = "approval_waiting"       // the run waits for an approval
	NoticeReconciliation = "reconciliation_waiting" // the run waits for a person to reconcile an effect
	NoticeTripped        = "run_tripped"            // a tripwire froze the run until a person releases it
	NoticeEnded          = "run_ended"              // the run reached a final state
	NoticeChoice         = "choice_waiting"         // the run waits for a person to choose among options
	NoticeQuarantined    = "run_quarantined"        // the run was quarantined: it cannot go on until a person mends it
)

// NoticeBody is the body of every notice the runner writes (a Notice's
// Body, as JSON): what happened to which run, and what
// the run waits for, by identifier. It carries no input, payload or
// preview: a receiver that needs them reads the run through the API, as
// someone allowed to.
type NoticeBody struct {
	Kind            string `json:"kind"`
	RunID           string `json:"run_id"`
	WorkflowID      string `json:"workflow_id"`
	WorkflowVersion string `json:"workflow_version"`
	State           string `json:"state"`
	Seq             int64  `json:"seq"` // the run's last accepted event when the notice was written
	// Labels are the run's labels (Run.Labels), which routes may take
	// notices by; omitted when none.
	Labels map[string]string `json:"labels,omitempty"`
	// Outcome is the run's final outcome (run_ended).
	Outcome string `json:"outcome,omitempty"`
	// Requests are the approval requests the run waits on, and
	// Approvers who may approve them, in the workflow's words
	// (approval_waiting).
	Requests  []string `json:"requests,omitempty"`
	Approvers string   `json:"approvers,omitempty"`
	// Proposals are the proposals waiting for a person to choose among
	// their options (choice_waiting).
	Proposals []string `json:"proposals,omitempty"`
	// Effects are the intents whose outcome a person must reconcile
	// (reconciliation_waiting).
	Effects []string `json:"effects,omitempty"`
	// Park is where a tripwire parked the run and Wires the wires that
	// tripped (run_tripped).
	Park  string   `json:"park,omitempty"`
	Wires []string `json:"wires,omitempty"`
	// Reason is why the run was quarantined (run_quarantined), at most
	// MaxNoticeError bytes: the runner's or the store's words, naming
	// records by id, never their content.
	Reason string `json:"reason,omitempty"`
}

// NotifyDuty is the duty (Duties) a notifier holds while it delivers a
// store's notices, renewing it far more often than NotifyDutyTTL: while
// it is held, runners that deliver none themselves write notices too
// (runner.Config.NoticesWhenDelivered), and a notifier that stopped
// leaves them written for a day, for it or another to deliver when it
// comes back.
const NotifyDuty = "notify"

// NotifyDutyTTL is how long a notifier's hold of NotifyDuty lasts.
const NotifyDutyTTL = 24 * time.Hour

// MaxNoticeBody bounds a notice's body: a notice names things, it does
// not carry them.
const MaxNoticeBody = 16 << 10

// NoticeID is the ID of the notice of kind written for run by a tick
// leaving it at head with trace records up to trace: a run reaches one
// position once, save a tripwire's report, which moves the trace alone.
func NoticeID(runID string, head, trace int64, kind string) string {
	return runID + "/" + strconv.FormatInt(head, 10) + "/" + strconv.FormatInt(trace, 10) + "/" + kind
}

// ValidateQuarantine checks Quarantine's arguments, for both stores.
func ValidateQuarantine(runID, reason string, notices []Notice) error {
	if reason == "" {
		return Errorf(CodeInvalidInput, "quarantine", runID, nil, "a reason is required")
	}
	if why := checkNotices(notices); why != "" {
		return Errorf(CodeInvalidInput, "quarantine", runID, nil, "%s", why)
	}
	return nil
}

// checkNotices is ValidateTick's part for a tick's notices.
func checkNotices(ns []Notice) string {
	for i, n := range ns {
		switch n.Kind {
		case NoticeApproval, NoticeReconciliation, NoticeTripped, NoticeEnded, NoticeChoice, NoticeQuarantined:
		default:
			return fmt.Sprintf("notice %d has the unknown kind %q", i, n.Kind)
		}
		if len(n.Body) > MaxNoticeBody {
			return fmt.Sprintf("notice %d body holds %d bytes, more than %d", i, len(n.Body), MaxNoticeBody)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(n.Body, &obj) != nil || obj == nil {
			return fmt.Sprintf("notice %d body is not a JSON object", i)
		}
		for j := range i {
			if ns[j].Kind == n.Kind {
				return fmt.Sprintf("notices %d and %d are both %s", j, i, n.Kind)
			}
		}
	}
	return ""
}

// Noticeboard is implemented by stores that keep notices (both of
// flrh's). Notices are claimed for a while, as runs are leased: a
// deliverer that dies holding some leaves them to be claimed again once
// its hold has passed, so every notice is delivered at least once
// whichever process of several sharing the store delivers it.
type Noticeboard interface {
	// ClaimNotices holds for holder, until hold from now, up to limit
	// notices that are due (their next attempt's time has come) and
	// not held by another, oldest first, and returns them with Attempts
	// counting this one. None due is no notices and no error.
	ClaimNotices(ctx context.Context, holder string, hold time.Duration, limit int) ([]Notice, error)
	// NoticeDone deletes a notice holder holds: delivered, or given up.
	// A notice holder no longer holds (its hold passed and another
	// claimed it, or it is gone) is CodeFenced, and nothing changes.
	NoticeDone(ctx context.Context, id, holder string) error
	// NoticeRetry releases a notice holder holds, recording why the
	// attempt failed ("" when no route failed and the notice waits for
	// routes told later: Backlog.Held), the routes that have taken it so far (sent; nil
	// for a notifier of one route) and how long each route still to take
	// it waits (waits, at least one): the notice is due again when the
	// soonest passes, and a later claim lists those that have not
	// (Notice.Waits). Both replace what the notice held. CodeFenced as
	// NoticeDone.
	NoticeRetry(ctx context.Context, id, holder, reason string, sent []string, waits []RouteWait) error
	// NoticeRelease hands back a notice holder holds and has not begun
	// to deliver (a deliverer shutting down): it is due at once, to any
	// holder, as it was before the claim, its attempt uncounted, instead
	// of waiting for the hold to pass. CodeFenced as NoticeDone.
	NoticeRelease(ctx context.Context, id, holder string) error
	// NoticeBacklog counts the notices not yet delivered and shows the
	// oldest.
	NoticeBacklog(ctx context.Context) (Backlog, error)
	// RunNotices returns run runID's notices not yet delivered, oldest
	// first, whole (held or not): what moves with the run (WholeRun).
	RunNotices(ctx context.Context, runID string) ([]Notice, error)
	// TellRun writes notices (at most one of each kind, as a tick's) of
	// run runID while it stands at head, each ID made as the tick's that
	// left it there would be (NoticeID, with the run's trace position):
	// telling of a run that came to wait while no one wrote notices. It
	// returns false, writing nothing, when the run has moved on (the tick
	// that moved it tells of it); a notice of that ID already written is
	// kept. CodeNotFound for no such run.
	TellRun(ctx context.Context, runID string, head int64, notices ...Notice) (bool, error)
}

// NoticeWatcher is implemented by stores whose writes of notices, by any
// process, can wake a notifier at once (PostgreSQL's NOTIFY): the waiter
// returns a run's id when notices were written, "" when its poll
// elapsed. A notifier that watches still looks every poll: a wake may be
// lost.
type NoticeWatcher interface {
	WatchNotices(ctx context.Context) WorkWaiter
}

// ValidateTell checks TellRun's arguments, for both stores.
func ValidateTell(runID string, head int64, notices []Notice) error {
	const op = "tell run"
	switch {
	case runID == "":
		return Errorf(CodeInvalidInput, op, "", nil, "a run id is required")
	case head < 0:
		return Errorf(CodeInvalidInput, op, runID, nil, "head %d is negative", head)
	case len(notices) == 0:
		return Errorf(CodeInvalidInput, op, runID, nil, "no notices to write")
	}
	if why := checkNotices(notices); why != "" {
		return Errorf(CodeInvalidInput, op, runID, nil, "%s", why)
	}
	return nil
}

// Backlog is what a store holds of notices not yet delivered.
type Backlog struct {
	Count int64
	// Held counts those of Count that wait for nothing but routes told
	// later (an escalation): released by NoticeRetry without a reason (no
	// route failed), and not due yet. Their age is no delivery's delay.
	Held int64
	// Oldest is the notice written first of those not held (without its
	// body): its attempts, last error, the routes it reached (Sent) and
	// those that failed, each with its failures and what is left of its
	// wait now (Waits), say why the backlog stands. Zero when every
	// notice is held.
	Oldest Notice
}

// NoticeboardOf returns the Noticeboard of s, or of the first store it
// wraps that has one.
func NoticeboardOf(s Store) (Noticeboard, bool) { return As[Noticeboard](s) }

// ValidateClaim checks ClaimNotices' arguments, for both stores.
func ValidateClaim(holder string, hold time.Duration, limit int) error {
	switch {
	case holder == "":
		return Errorf(CodeInvalidInput, "claim notices", "", nil, "no holder")
	case len(holder) > maxDutyText || !utf8.ValidString(holder):
		return Errorf(CodeInvalidInput, "claim notices", "", nil, "the holder is not UTF-8 of at most %d bytes", maxDutyText)
	case hold <= 0:
		return Errorf(CodeInvalidInput, "claim notices", "", nil, "hold %v is not positive", hold)
	case limit <= 0:
		return Errorf(CodeInvalidInput, "claim notices", "", nil, "limit %d is not positive", limit)
	}
	return nil
}

// Bounds of a notice's Sent: how many routes, and each name's bytes.
const (
	MaxNoticeRoutes    = 32
	MaxNoticeRouteName = 64
)

// ValidateRetry checks NoticeRetry's arguments, for both stores: routes
// named well, none twice, a route that waits not one that took the
// notice, at least one route waiting, no wait negative.
func ValidateRetry(sent []string, waits []RouteWait) error {
	const op = "notice retry"
	if len(sent) > MaxNoticeRoutes || len(waits) > MaxNoticeRoutes {
		return Errorf(CodeInvalidInput, op, "", nil, "%d routes sent to and %d waiting, more than %d", len(sent), len(waits), MaxNoticeRoutes)
	}
	if len(waits) == 0 {
		return Errorf(CodeInvalidInput, op, "", nil, "no route waits: a notice every route took is done")
	}
	if err := ValidateSent(sent); err != nil {
		return err
	}
	for i, w := range waits {
		switch {
		case !goodRouteName(w.Route):
			return Errorf(CodeInvalidInput, op, "", nil, "route %d waiting is not a name of 1 to %d bytes of UTF-8 without commas or line breaks", i, MaxNoticeRouteName)
		case w.After < 0:
			return Errorf(CodeInvalidInput, op, "", nil, "route %q waits a negative %v", w.Route, w.After)
		case w.Failures < 0:
			return Errorf(CodeInvalidInput, op, "", nil, "route %q waits with %d failures", w.Route, w.Failures)
		case slices.Contains(sent, w.Route):
			return Errorf(CodeInvalidInput, op, "", nil, "route %q both took the notice and waits for it", w.Route)
		case slices.ContainsFunc(waits[:i], func(x RouteWait) bool { return x.Route == w.Route }):
			return Errorf(CodeInvalidInput, op, "", nil, "route %q waiting is named twice", w.Route)
		}
	}
	return nil
}

// ValidateSent checks the routes a notice reached (Notice.Sent): at most
// MaxNoticeRoutes, named well, none twice.
func ValidateSent(sent []string) error {
	const op = "notice retry"
	if len(sent) > MaxNoticeRoutes {
		return Errorf(CodeInvalidInput, op, "", nil, "%d routes sent to, more than %d", len(sent), MaxNoticeRoutes)
	}
	for i, r := range sent {
		if !goodRouteName(r) {
			return Errorf(CodeInvalidInput, op, "", nil, "route %d sent to is not a name of 1 to %d bytes of UTF-8 without commas or line breaks", i, MaxNoticeRouteName)
		}
		if slices.Contains(sent[:i], r) {
			return Errorf(CodeInvalidInput, op, "", nil, "route %q sent to is named twice", r)
		}
	}
	return nil
}

// goodRouteName reports whether r may name a route a store keeps.
func goodRouteName(r string) bool {
	return r != "" && len(r) <= MaxNoticeRouteName && utf8.ValidString(r) && !strings.ContainsAny(r, ",\n\r")
}

// JoinWaits is a retry's waits as a store keeps them, beside the
// notice's due time: the soonest wait (when the notice is due again) and
// each route's wait past it with its failures,
// "route=nanoseconds:failures" joined by commas, by route
// (ValidateRetry keeps commas out of names; a name's last '=' ends it).
// No waits is "" and due at once.
func JoinWaits(waits []RouteWait) (kept string, soonest time.Duration) {
	if len(waits) == 0 {
		return "", 0
	}
	ws := slices.Clone(waits)
	slices.SortFunc(ws, func(a, b RouteWait) int { return strings.Compare(a.Route, b.Route) })
	soonest = ws[0].After
	for _, w := range ws[1:] {
		soonest = min(soonest, w.After)
	}
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(w.Route)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(int64(w.After-soonest), 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(w.Failures))
	}
	return b.String(), soonest
}

// SplitWaits is JoinWaits undone at a claim late past the notice's due
// time: every route kept, by route, with its failures and what is left
// of its wait (0 once it has passed). An entry that does not read as
// JoinWaits writes it is dropped, its route then tried as one never
// tried: a notice sent too soon is better than one never sent.
func SplitWaits(kept string, late time.Duration) []RouteWait {
	var out []RouteWait
	for entry := range strings.SplitSeq(kept, ",") {
		i := strings.LastIndexByte(entry, '=')
		if i <= 0 {
			continue
		}
		offset, failures, ok := strings.Cut(entry[i+1:], ":")
		past, err := strconv.ParseInt(offset, 10, 64)
		n, nerr := strconv.Atoi(failures)
		if !ok || err != nil || nerr != nil || past < 0 || n < 0 || !goodRouteName(entry[:i]) {
			continue
		}
		out = append(out, RouteWait{Route: entry[:i], After: max(time.Duration(past)-late, 0), Failures: n})
	}
	return out
}

// JoinSent is a notice's Sent as a store keeps it: the names joined by
// commas (ValidateRetry keeps commas out of them).
func JoinSent(sent []string) string { return strings.Join(sent, ",") }

// SplitSent is JoinSent undone: nil for "".
func SplitSent(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// MaxNoticeError bounds the reason NoticeRetry keeps.
const MaxNoticeError = 512

// NoticeReason is reason cut to MaxNoticeError bytes at a character's
// start.
func NoticeReason(reason string) string {
	if len(reason) <= MaxNoticeError {
		return reason
	}
	cut := MaxNoticeError
	for cut > 0 && reason[cut]&0xC0 == 0x80 {
		cut--
	}
	return reason[:cut]
}
