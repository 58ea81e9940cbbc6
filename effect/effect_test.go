package effect_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/protocol"
)

// scripted is an adapter whose lookups answer from a script, recording
// every question.
type scripted struct {
	answers []effect.LookupResult
	err     error
	asked   []string
}

func (s *scripted) Execute(context.Context, effect.Intent) (effect.Receipt, error) {
	return effect.Receipt{}, errors.New("not used")
}

func (s *scripted) Lookup(_ context.Context, key, digest string) (effect.LookupResult, error) {
	s.asked = append(s.asked, key+" "+digest)
	if s.err != nil {
		return effect.LookupResult{}, s.err
	}
	if len(s.asked) > len(s.answers) {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "SCRIPT_EXHAUSTED"}, nil
	}
	return s.answers[len(s.asked)-1], nil
}

var (
	unknown   = effect.LookupResult{Status: effect.StillUnknown, Code: "LOOKUP_IN_PROGRESS"}
	success   = effect.LookupResult{Status: effect.ConfirmedSuccess, Code: "LOOKUP_APPLIED", Evidence: []byte(`{"a":1}`), EvidenceDigest: "sha256:aa"}
	failure   = effect.LookupResult{Status: effect.ConfirmedFailure, Code: "LOOKUP_NOT_APPLIED", Evidence: []byte(`{"a":0}`), EvidenceDigest: "sha256:bb"}
	human     = effect.LookupResult{Status: effect.HumanRequired, Code: "LOOKUP_CONFLICT"}
	bareOK    = effect.LookupResult{Status: effect.ConfirmedSuccess, Code: "TRUST_ME"}
	bareNo    = effect.LookupResult{Status: effect.ConfirmedFailure, Code: "TRUST_ME"}
	zeroState = effect.LookupResult{Code: "NO_STATUS"}
)

func TestReconcile(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		answers   []effect.LookupResult
		backoff   []time.Duration
		want      effect.LookupStatus
		wantCode  string
		lookups   int
		wantSleep []time.Duration
	}{
		{"success at once", []effect.LookupResult{success}, []time.Duration{0, 10 * ms}, effect.ConfirmedSuccess, "LOOKUP_APPLIED", 1, nil},
		{"success after two unknowns", []effect.LookupResult{unknown, unknown, success}, []time.Duration{0, 10 * ms, 20 * ms, 40 * ms}, effect.ConfirmedSuccess, "LOOKUP_APPLIED", 3, []time.Duration{10 * ms, 20 * ms}},
		{"failure", []effect.LookupResult{unknown, failure}, []time.Duration{5 * ms, 5 * ms}, effect.ConfirmedFailure, "LOOKUP_NOT_APPLIED", 2, []time.Duration{5 * ms, 5 * ms}},
		{"human stops at once", []effect.LookupResult{human, success}, []time.Duration{0, 0}, effect.HumanRequired, "LOOKUP_CONFLICT", 1, nil},
		{"plan spent", []effect.LookupResult{unknown, unknown, unknown}, []time.Duration{0, 1 * ms, 2 * ms}, effect.StillUnknown, "LOOKUP_IN_PROGRESS", 3, []time.Duration{1 * ms, 2 * ms}},
		{"success without evidence is not success", []effect.LookupResult{bareOK}, []time.Duration{0}, effect.HumanRequired, "CONFIRMATION_WITHOUT_EVIDENCE", 1, nil},
		{"failure without evidence is not failure", []effect.LookupResult{bareNo}, []time.Duration{0}, effect.HumanRequired, "CONFIRMATION_WITHOUT_EVIDENCE", 1, nil},
		{"an unclassified answer needs a person", []effect.LookupResult{zeroState}, []time.Duration{0}, effect.HumanRequired, "UNRECOGNISED_LOOKUP_STATUS", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &scripted{answers: tc.answers}
			var slept []time.Duration
			res, err := effect.Reconcile(context.Background(), a, "effect:k", "sha256:c", effect.Plan{
				Backoff: tc.backoff,
				Sleep:   func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want || len(res.Lookups) != tc.lookups || res.Lookups[len(res.Lookups)-1].Code != tc.wantCode {
				t.Fatalf("got %v after %d lookups (last %q), want %v after %d (%q)", res.Status, len(res.Lookups), res.Lookups[len(res.Lookups)-1].Code, tc.want, tc.lookups, tc.wantCode)
			}
			if !reflect.DeepEqual(slept, tc.wantSleep) {
				t.Errorf("slept %v, want exactly the planned %v", slept, tc.wantSleep)
			}
			for _, q := range a.asked {
				if q != "effect:k sha256:c" {
					t.Errorf("asked %q", q)
				}
			}
		})
	}
}

func TestReconcileBoundsAndErrors(t *testing.T) {
	a := &scripted{answers: []effect.LookupResult{success}}
	for _, backoff := range [][]time.Duration{nil, make([]time.Duration, effect.MaxLookups+1), {0, -time.Second}} {
		if _, err := effect.Reconcile(context.Background(), a, "k", "d", effect.Plan{Backoff: backoff}); err == nil {
			t.Errorf("plan %v accepted", backoff)
		}
	}
	if len(a.asked) != 0 {
		t.Fatal("a refused plan still asked the destination")
	}
	// A misused adapter's error is passed on, with no verdict minted.
	boom := errors.New("bad key")
	res, err := effect.Reconcile(context.Background(), &scripted{err: boom}, "k", "d", effect.Plan{Backoff: []time.Duration{0}})
	if !errors.Is(err, boom) || res.Status != effect.StillUnknown {
		t.Errorf("got %v, %v", res.Status, err)
	}
	// A cancelled context stops before the next lookup and stays unknown.
	ctx, cancel := context.WithCancel(context.Background())
	b := &scripted{answers: []effect.LookupResult{unknown, success}}
	res, err = effect.Reconcile(ctx, b, "k", "d", effect.Plan{
		Backoff: []time.Duration{0, time.Hour},
		Sleep:   func(context.Context, time.Duration) error { cancel(); return context.Canceled },
	})
	if !errors.Is(err, context.Canceled) || res.Status != effect.StillUnknown || len(b.asked) != 1 {
		t.Errorf("cancelled: %v, %v, %d lookups", res.Status, err, len(b.asked))
	}
	// The default sleeper is a real timer that honours the context.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	start := time.Now()
	res, err = effect.Reconcile(ctx2, &scripted{answers: []effect.LookupResult{unknown}}, "k", "d", effect.Plan{Backoff: []time.Duration{0, time.Hour}})
	if !errors.Is(err, context.DeadlineExceeded) || res.Status != effect.StillUnknown || time.Since(start) > 10*time.Second {
		t.Errorf("real timer: %v, %v", res.Status, err)
	}
}

type nop struct{ effect.Adapter }

func TestRegistry(t *testing.T) {
	var r effect.Registry // the zero value works
	a, b := &nop{}, &nop{}
	if err := r.Register("refund.issue", "http/1", a); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("refund.issue", "http/2", b); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("refund.issue", "http/1", b); err == nil {
		t.Error("a second adapter for the same type and version was accepted")
	}
	if err := r.Register("bad type", "v", a); err == nil {
		t.Error("an invalid effect type was accepted")
	}
	if err := r.Register("x", "v", nil); err == nil {
		t.Error("a nil adapter was accepted")
	}
	e := fixture.EffectIntent("effect:1")
	got, err := r.For(e)
	if err != nil || got != effect.Adapter(a) {
		t.Fatalf("For = %v, %v", got, err)
	}
	e.AdapterVersion = "http/2"
	if got, _ := r.For(e); got != effect.Adapter(b) {
		t.Error("version 2 did not select its adapter")
	}
	e.AdapterVersion = "http/3"
	if _, err := r.For(e); !errors.Is(err, effect.ErrNoAdapter) {
		t.Errorf("unregistered version: %v", err)
	}
	if want := [][2]string{{"refund.issue", "http/1"}, {"refund.issue", "http/2"}}; !reflect.DeepEqual(r.Entries(), want) {
		t.Errorf("Entries = %v", r.Entries())
	}
}

func TestNewActionReceipt(t *testing.T) {
	e := fixture.EffectIntent("effect:1")
	bind := effect.ReceiptBinding{
		CommandDigest:   "sha256:9999999999999999999999999999999999999999999999999999999999999999",
		InputRootDigest: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		PlatformDigest:  "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	}
	out := "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	rcpt, err := effect.NewActionReceipt(e, bind, effect.Observation{
		AttemptID: "attempt:1", Outcome: protocol.OutcomeConfirmedSuccess,
		OutputDigests: []string{out, out}, RecordedAt: "2026-08-08T00:00:02Z",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.CheckReceiptBinding(e, rcpt); err != nil {
		t.Fatal(err)
	}
	if len(rcpt.OutputDigests) != 1 || rcpt.IdempotencyKey != "effect:1" || rcpt.Outcome != protocol.OutcomeConfirmedSuccess {
		t.Errorf("receipt %+v", rcpt)
	}
	// The receipt does not alias the intent's approval digest.
	*rcpt.ApprovalDigest = "changed"
	if *e.ApprovalDigest == "changed" {
		t.Error("the receipt shares the intent's approval digest")
	}
	for _, tc := range []struct {
		name string
		obs  effect.Observation
		want string
	}{
		{"success without evidence", effect.Observation{AttemptID: "attempt:1", Outcome: protocol.OutcomeConfirmedSuccess, RecordedAt: "2026-08-08T00:00:02Z"}, "evidence"},
		{"no such outcome", effect.Observation{AttemptID: "attempt:1", Outcome: "probably_fine", OutputDigests: []string{out}, RecordedAt: "2026-08-08T00:00:02Z"}, "outcome"},
		{"bad time", effect.Observation{AttemptID: "attempt:1", Outcome: protocol.OutcomeUnknown, RecordedAt: "yesterday"}, "recorded_at"},
		{"bad attempt id", effect.Observation{AttemptID: "", Outcome: protocol.OutcomeUnknown, RecordedAt: "2026-08-08T00:00:02Z"}, "attempt_id"},
	} {
		if _, err := effect.NewActionReceipt(e, bind, tc.obs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
		// The checked form refuses with the same error, and so does
		// protocol.Check where the observation gets that far.
		_, cerr := effect.NewCheckedActionReceipt(e, bind, tc.obs)
		_, err := effect.NewActionReceipt(e, bind, tc.obs)
		if cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: checked err = %v, unchecked %v", tc.name, cerr, err)
		}
	}
	// What the checked form returns is what encoding and decoding the
	// receipt give, and the receipt passes protocol.Check.
	for _, obs := range []effect.Observation{
		{AttemptID: "attempt:1", Outcome: protocol.OutcomeConfirmedSuccess, OutputDigests: []string{out, bind.CommandDigest, out}, RecordedAt: "2026-08-08T00:00:02Z"},
		{AttemptID: "attempt:2", Outcome: protocol.OutcomeUnknown, RecordedAt: "2026-08-08T00:00:03Z"},
	} {
		c, err := effect.NewCheckedActionReceipt(e, bind, obs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cjson.Marshal(c.Receipt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Canonical, want) {
			t.Errorf("canonical\n%s\nMarshal\n%s", c.Canonical, want)
		}
		if v, _ := cjson.Decode(want); !reflect.DeepEqual(c.Value, v) {
			t.Errorf("value %#v, decoded %#v", c.Value, v)
		}
		if err := protocol.Check(c.Receipt); err != nil {
			t.Error(err)
		}
	}
}

func TestProtocolOutcomes(t *testing.T) {
	for _, tc := range []struct {
		o    effect.Outcome
		want string
		ok   bool
	}{
		{effect.Succeeded, protocol.OutcomeConfirmedSuccess, true},
		{effect.FailedPermanent, protocol.OutcomeConfirmedFailure, true},
		{effect.Unknown, protocol.OutcomeUnknown, true},
		{effect.FailedTransient, "", false},
		{0, "", false},
	} {
		got, ok := effect.Receipt{Outcome: tc.o}.ProtocolOutcome()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v -> %q %v", tc.o, got, ok)
		}
	}
	for _, tc := range []struct {
		s    effect.LookupStatus
		want string
		ok   bool
	}{
		{effect.ConfirmedSuccess, protocol.OutcomeConfirmedSuccess, true},
		{effect.ConfirmedFailure, protocol.OutcomeConfirmedFailure, true},
		{effect.StillUnknown, "", false},
		{effect.HumanRequired, "", false},
	} {
		got, ok := effect.LookupResult{Status: tc.s}.ProtocolOutcome()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v -> %q %v", tc.s, got, ok)
		}
	}
}

func TestRetryClassesAndPlan(t *testing.T) {
	for o, want := range map[effect.Outcome]control.OutcomeClass{
		effect.FailedTransient: control.ClassTransient,
		effect.FailedPermanent: control.ClassPermanent,
		effect.Unknown:         control.ClassUnknown,
	} {
		got, ok := effect.Receipt{Outcome: o}.RetryClass()
		if !ok || got != want {
			t.Errorf("%v -> %q", o, got)
		}
		// The policy routes each class as the fault plan says: transient
		// retries, permanent fails, unknown reconciles.
		d, err := control.DefaultContract().Retry.Decide(got, 1, "seed", "effect:1")
		if err != nil {
			t.Fatal(err)
		}
		wantAction := map[control.OutcomeClass]control.Action{control.ClassTransient: control.ActionRetry, control.ClassPermanent: control.ActionFail, control.ClassUnknown: control.ActionReconcile}[want]
		if d.Action != wantAction {
			t.Errorf("%v routes to %s, want %s", o, d.Action, wantAction)
		}
	}
	if _, ok := (effect.Receipt{Outcome: effect.Succeeded}).RetryClass(); ok {
		t.Error("success has a retry class")
	}
	p := control.RetryPolicy{MaxRetries: 3, BaseMillis: 500, CapMillis: 60000}
	plan := effect.RetryPlan(p, "seed-1", "effect:k", 4)
	if len(plan.Backoff) != 4 || plan.Backoff[0] != 0 {
		t.Fatalf("plan %v", plan.Backoff)
	}
	for n := 1; n < 4; n++ {
		d, err := p.Decide(control.ClassTransient, int64(n), "seed-1", "effect:k")
		if err != nil {
			t.Fatal(err)
		}
		if plan.Backoff[n] != time.Duration(d.DelayMillis)*time.Millisecond {
			t.Errorf("wait %d is %v, the policy says %d ms", n, plan.Backoff[n], d.DelayMillis)
		}
	}
	if again := effect.RetryPlan(p, "seed-1", "effect:k", 4); !reflect.DeepEqual(again, plan) {
		t.Error("the plan is not a function of its inputs")
	}
	if other := effect.RetryPlan(p, "seed-2", "effect:k", 4); reflect.DeepEqual(other.Backoff, plan.Backoff) {
		t.Error("the jitter seed does not reach the plan")
	}
	if n := len(effect.RetryPlan(p, "s", "k", 0).Backoff); n != 1 {
		t.Errorf("a plan of 0 lookups has %d", n)
	}
	if n := len(effect.RetryPlan(p, "s", "k", 1000).Backoff); n != effect.MaxLookups {
		t.Errorf("a plan of 1000 lookups has %d", n)
	}
}
