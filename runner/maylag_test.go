package runner

import (
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// tickMember is one member of store.Tick as the lag rule sees it: a value
// that sets it, and whether a tick holding it may still lag.
type tickMember struct {
	set func(*store.Tick)
	lag bool
}

func lagBody(s string) []byte { return []byte(s) }

// tickMembers classifies every member of store.Tick. A member missing
// here fails TestMayLagRuleCoversEveryTickMember: whoever adds one to the
// store decides here whether a tick holding it may lag (mayLag already
// keeps it durable).
var tickMembers = map[string]tickMember{
	"ExpectHead":       {func(p *store.Tick) { p.ExpectHead = 7 }, true},
	"ExpectInboxEmpty": {func(p *store.Tick) { p.ExpectInboxEmpty = true }, true},
	"Events": {func(p *store.Tick) {
		p.Events = []store.Event{{Kind: EventControl, Body: lagBody(`{}`), Digest: store.BodyDigest(lagBody(`{}`))}}
	}, true},
	"Checkpoint": {func(p *store.Tick) {
		p.Checkpoint = &store.Checkpoint{FormatVersion: CheckpointFormat, Body: lagBody(`{}`), Digest: store.BodyDigest(lagBody(`{}`))}
	}, true},
	"State": {func(p *store.Tick) { p.State = "INGEST" }, true},
	// Derived from the checkpoint: lost with it, the header's due time is
	// the tick before's, whose state is not a resting one (ready anyway).
	"DueAt": {func(p *store.Tick) { p.DueAt = time.Unix(1e9, 0) }, true},
	"Results": {func(p *store.Tick) {
		p.Results = []store.AttemptResult{{IntentID: "i", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}
	}, true},
	"Receipts": {func(p *store.Tick) {
		p.Receipts = []store.Receipt{{IntentID: "i", Outcome: "confirmed_success", Body: lagBody(`{}`), Digest: store.BodyDigest(lagBody(`{}`))}}
	}, true},
	"Trace":   {func(p *store.Tick) { p.Trace = []store.TraceRecord{{Kind: "note", Body: lagBody(`{}`)}} }, true},
	"MayLag":  {func(p *store.Tick) { p.MayLag = true }, true}, // the rule's own answer, set after it
	"Outcome": {func(p *store.Tick) { p.Outcome = "SUCCEEDED" }, false},
	// A notice may be delivered as soon as it is committed.
	"Notices": {func(p *store.Tick) { p.Notices = []store.Notice{{Kind: store.NoticeApproval, Body: lagBody(`{}`)}} }, false},
	"Intents": {func(p *store.Tick) {
		p.Intents = []store.Intent{{ID: "i2", EffectType: "refund.pay", IdempotencyKey: "k", ContentDigest: store.BodyDigest(lagBody(`{}`)),
			Body: lagBody(`{}`), Digest: store.BodyDigest(lagBody(`{}`))}}
	}, false},
	"Approvals": {func(p *store.Tick) { p.Approvals = []store.ApprovalUse{{ApprovalID: "a", IntentID: "i2"}} }, false},
	"Consume":   {func(p *store.Tick) { p.Consume = []string{"in-1"} }, false},
	"Begin":     {func(p *store.Tick) { p.Begin = []string{"i"} }, false},
	"Submit": {func(p *store.Tick) {
		p.Submit = []store.Inbound{{ID: "in-2", Kind: KindInput, ActorRole: "agent", Body: lagBody(`{}`), Digest: store.BodyDigest(lagBody(`{}`))}}
	}, false},
}

// receiptTick is the receipt commit of a step that leaves its run waiting
// for the next input: the tick the rule lets lag.
func receiptTick() store.Tick {
	var p store.Tick
	for _, name := range []string{"ExpectHead", "Events", "Checkpoint", "State", "Results", "Receipts", "Trace"} {
		tickMembers[name].set(&p)
	}
	return p
}

// Every member of store.Tick is classified, and each decides the rule as
// classified: added to the receipt commit of a step, a member that must be
// durable makes the tick durable, and one that may lag leaves it lagging.
func TestMayLagRuleCoversEveryTickMember(t *testing.T) {
	if !mayLag(ptr(receiptTick())) {
		t.Fatal("the receipt commit of a step that waits for input does not lag")
	}
	typ := reflect.TypeOf(store.Tick{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		m, ok := tickMembers[name]
		if !ok {
			t.Errorf("store.Tick.%s is not classified for the lag rule: add it to tickMembers", name)
			continue
		}
		p := receiptTick()
		m.set(&p)
		if reflect.ValueOf(p).Field(i).IsZero() {
			t.Errorf("tickMembers[%q] does not set the member", name)
		}
		if got := mayLag(&p); got != m.lag {
			t.Errorf("receipt commit with %s: mayLag = %v, want %v", name, got, m.lag)
		}
	}
}

// Only a tick that leaves the run waiting for input lags: one that ends
// the run, waits for a person, or is about to send, is durable.
func TestMayLagOnlyWhenWaitingForInput(t *testing.T) {
	for state, want := range map[string]bool{
		"INGEST":               true,
		"WAIT_APPROVAL":        false,
		"HUMAN_RECONCILIATION": false,
		"EXECUTE":              false,
		"COMMIT_INTENT":        false,
		"RECONCILE":            false,
		"PLAN_EFFECTS":         false,
		"SUCCEEDED":            false,
		"":                     false,
	} {
		p := receiptTick()
		p.State = state
		if got := mayLag(&p); got != want {
			t.Errorf("state %q: mayLag = %v, want %v", state, got, want)
		}
	}
}

// Over random ticks: a tick lags exactly when it leaves the run in INGEST
// with no outcome and holds none of the members that must be durable, and
// every tick that lags is one the store accepts as lagging.
func TestMayLagProperty(t *testing.T) {
	typ := reflect.TypeOf(store.Tick{})
	var names []string
	for i := 0; i < typ.NumField(); i++ {
		names = append(names, typ.Field(i).Name)
	}
	rapid.Check(t, func(rt *rapid.T) {
		var p store.Tick
		want := true
		for _, name := range names {
			m, ok := tickMembers[name]
			if !ok || name == "State" || !rapid.Bool().Draw(rt, name) {
				continue
			}
			m.set(&p)
			want = want && m.lag
		}
		p.State = rapid.SampledFrom([]string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION", "EXECUTE", "CANCELLED"}).Draw(rt, "state")
		want = want && p.State == "INGEST"
		if got := mayLag(&p); got != want {
			rt.Fatalf("mayLag(%+v) = %v, want %v", p, got, want)
		}
		if want {
			p.MayLag = true
			if err := store.ValidateTick("r", p); err != nil {
				rt.Fatalf("the store refuses a tick the runner lets lag: %v", err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
