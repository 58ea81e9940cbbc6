package control

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

func TestDefaultContract(t *testing.T) {
	c := DefaultContract()
	// Numbers transcribed from the reference loop-contract.v1 (cost there is
	// 20 currency units; we carry micro-units).
	want := Usage{Steps: 64, ToolCalls: 24, WallSeconds: 600, SuspendedSeconds: 86400, Tokens: 100000, CostMicros: 20_000_000, RecursionDepth: 3, Parallelism: 4}
	if c.Budgets.Limits != want {
		t.Errorf("limits %+v, want %+v", c.Budgets.Limits, want)
	}
	if c.Budgets.RetriesPerTransition != 3 || c.Budgets.SoftPercent != 80 || !c.Budgets.AggregateDescendants {
		t.Errorf("budgets %+v", c.Budgets)
	}
	np := c.NoProgress
	if np.Weights != (Gain{1, 1, 2}) || np.Epsilon != 1 || np.WindowRounds != 3 || np.Threshold != 3 || np.Event != "NO_PROGRESS" {
		t.Errorf("no-progress %+v", np)
	}
	if c.Retry.MaxRetries != 3 || c.Retry.ExhaustedEvent != "RETRIES_EXHAUSTED" {
		t.Errorf("retry %+v", c.Retry)
	}
	if c.MachineDigest != Default().Digest() || !cjson.ValidDigest(c.Digest) {
		t.Errorf("digests %s %s", c.MachineDigest, c.Digest)
	}
	if len(c.ApprovalFields) != 11 || len(c.TraceFields) != 16 {
		t.Errorf("approval fields %d, trace fields %d", len(c.ApprovalFields), len(c.TraceFields))
	}
}

func mutateContract(t testing.TB, f func(root map[string]any)) []byte {
	t.Helper()
	v, err := cjson.Decode(defaultContract)
	if err != nil {
		t.Fatal(err)
	}
	f(v.(map[string]any))
	b, err := cjson.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestContractBindingAndLimits(t *testing.T) {
	other, err := Load(mutateTable(t, func(r map[string]any) {
		findTransition(r, "start")["evidence"] = []any{"workflow_digest"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadContract(defaultContract, other); err == nil {
		t.Fatal("contract bound to a different table loaded")
	} else if e := new(Error); !errors.As(err, &e) || e.Code != CodeBinding || e.Pointer != "/fsm/digest" {
		t.Fatalf("got %v, want BINDING at /fsm/digest", err)
	}

	sub := func(path ...string) func(map[string]any) map[string]any {
		return func(r map[string]any) map[string]any {
			for _, p := range path {
				r = r[p].(map[string]any)
			}
			return r
		}
	}
	cases := []struct {
		name    string
		mutate  func(r map[string]any)
		code    Code
		pointer string
	}{
		{"digest", func(r map[string]any) { sub("fsm")(r)["digest"] = "sha256:" + strings.Repeat("0", 64) }, CodeBinding, "/fsm/digest"},
		{"machine", func(r map[string]any) { sub("fsm")(r)["machine"] = "other" }, CodeBinding, "/fsm/machine"},
		{"outcomes", func(r map[string]any) { sub("fsm")(r)["terminal_outcomes"] = []any{"success"} }, CodeBinding, "/fsm/terminal_outcomes"},
		{"critical states", func(r map[string]any) { sub("fsm")(r)["effect_critical_states"] = []any{"EXECUTE"} }, CodeBinding, "/fsm/effect_critical_states"},
		{"safety properties", func(r map[string]any) {
			sub("fsm")(r)["safety_properties"] = []any{"effect-intent-first"}
		}, CodeBinding, "/fsm/safety_properties"},
		{"effect path", func(r map[string]any) { sub("external_effect")(r)["execution_state"] = "RECONCILE" }, CodeBinding, "/external_effect"},
		{"effect path unknown state", func(r map[string]any) { sub("external_effect")(r)["approval_state"] = "LOBBY" }, CodeBinding, "/external_effect/approval_state"},
		{"zero budget", func(r map[string]any) { sub("budgets")(r)["steps"] = int64(0) }, CodeLimit, "/budgets/steps"},
		{"float budget", nil, CodeSyntax, ""},
		{"retries over ceiling", func(r map[string]any) { sub("budgets")(r)["retries_per_transition"] = int64(16) }, CodeLimit, "/budgets/retries_per_transition"},
		{"soft boundary 100", func(r map[string]any) { sub("budgets")(r)["soft_checkpoint_percent"] = int64(100) }, CodeLimit, "/budgets/soft_checkpoint_percent"},
		{"no aggregation", func(r map[string]any) { sub("budgets")(r)["aggregate_descendants"] = false }, CodeBinding, "/budgets/aggregate_descendants"},
		{"undeclared event", func(r map[string]any) { sub("budgets")(r)["exhausted_event"] = "OUT_OF_MONEY" }, CodeBinding, "/budgets/exhausted_event"},
		{"threshold over window", func(r map[string]any) { sub("no_progress")(r)["threshold"] = int64(4) }, CodeLimit, "/no_progress/threshold"},
		{"negative weight", func(r map[string]any) { sub("no_progress", "weights")(r)["verified_receipt"] = int64(-1) }, CodeLimit, "/no_progress/weights/verified_receipt"},
		{"retry unknown outcomes", func(r map[string]any) { sub("retry")(r)["retryable"] = []any{"transient", "unknown"} }, CodeBinding, "/retry/retryable"},
		{"cap below base", func(r map[string]any) { sub("retry")(r)["cap_millis"] = int64(100) }, CodeLimit, "/retry/cap_millis"},
		{"idempotency fields", func(r map[string]any) {
			r["idempotency_key"] = []any{"run_id", "transition_id", "action_digest", "adapter_version"}
		}, CodeBinding, "/idempotency_key"},
		{"reusable approvals", func(r map[string]any) { sub("approval")(r)["one_time"] = false }, CodeBinding, "/approval/one_time"},
		{"checkpoint without interrupts", func(r map[string]any) { r["checkpoint_fields"] = []any{"state"} }, CodeBinding, "/checkpoint_fields"},
		{"unknown member", func(r map[string]any) { sub("retry")(r)["jitter_seed"] = "42" }, CodeSchema, "/retry/jitter_seed"},
		{"format", func(r map[string]any) { r["format"] = "loop-contract/v1" }, CodeFormat, "/format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := []byte(strings.Replace(string(defaultContract), `"steps": 64`, `"steps": 64.0`, 1))
			if tc.mutate != nil {
				text = mutateContract(t, tc.mutate)
			}
			_, err := LoadContract(text, Default())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *control.Error", err)
			}
			if e.Code != tc.code || (tc.pointer != "" && e.Pointer != tc.pointer) {
				t.Errorf("got %s at %q (%s), want %s at %q", e.Code, e.Pointer, e.Detail, tc.code, tc.pointer)
			}
		})
	}
}

func TestBudgetSoftBoundaryAndBreach(t *testing.T) {
	b := DefaultContract().Budgets
	used := Usage{}
	var crossedAt, overAt int64
	for i := int64(1); i <= 66; i++ {
		next, v, err := b.Charge(used, Usage{Steps: 1})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.SoftCrossed, DimSteps) {
			if crossedAt != 0 {
				t.Errorf("soft boundary crossed twice (at %d and %d)", crossedAt, i)
			}
			crossedAt = i
		}
		if v.Exhausted() && overAt == 0 {
			overAt = i
			if !slices.Equal(v.Over, []Dimension{DimSteps}) {
				t.Errorf("over %v", v.Over)
			}
		}
		if fits := b.Fits(used, Usage{Steps: 1}); fits != (i <= 64) {
			t.Errorf("step %d fits=%v", i, fits)
		}
		used = next
	}
	// 80 % of 64 is 51.2: the 52nd step is the first at or past it.
	if crossedAt != 52 {
		t.Errorf("soft boundary crossed at step %d, want 52", crossedAt)
	}
	if overAt != 65 {
		t.Errorf("hard limit breached at step %d, want 65", overAt)
	}
	// Cost: 16 of 20 units is exactly 80 %.
	_, v, _ := b.Charge(Usage{CostMicros: 15_999_999}, Usage{CostMicros: 1})
	if !slices.Equal(v.SoftCrossed, []Dimension{DimCostMicros}) || v.Remaining.CostMicros != 4_000_000 {
		t.Errorf("cost verdict %+v", v)
	}
	// Gauges are high-water marks, not sums.
	next, v, _ := b.Charge(Usage{RecursionDepth: 2, Parallelism: 3}, Usage{RecursionDepth: 1, Parallelism: 4})
	if next.RecursionDepth != 2 || next.Parallelism != 4 || v.Exhausted() {
		t.Errorf("gauges %+v %+v", next, v)
	}
	if _, _, err := b.Charge(Usage{}, Usage{Tokens: -1}); err == nil {
		t.Error("negative charge accepted")
	}
	if b.Fits(Usage{}, Usage{Tokens: -1}) {
		t.Error("negative charge fits")
	}
}

// TestPropertyBudget compares Charge with big-integer arithmetic.
func TestPropertyBudget(t *testing.T) {
	b := DefaultContract().Budgets
	rapid.Check(t, func(t *rapid.T) {
		gen := func(label string) Usage {
			n := func(s string) int64 { return rapid.Int64Range(0, math.MaxInt64).Draw(t, label+s) }
			small := func(s string) int64 { return rapid.Int64Range(0, 200_000).Draw(t, label+s) }
			if rapid.Bool().Draw(t, label+"huge") {
				return Usage{n("s"), n("t"), n("w"), n("p"), n("k"), n("c"), n("d"), n("q")}
			}
			return Usage{small("s"), small("t"), small("w"), small("p"), small("k"), small("c"), small("d"), small("q")}
		}
		used, delta := gen("used"), gen("delta")
		next, v, err := b.Charge(used, delta)
		if err != nil {
			t.Fatal(err)
		}
		lim := b.Limits
		ud, dd, nd, ld := used.dims(), delta.dims(), next.dims(), lim.dims()
		for i := range nd {
			u, d, got, l := big.NewInt(*ud[i].v), big.NewInt(*dd[i].v), *nd[i].v, *ld[i].v
			var want *big.Int
			if nd[i].gauge {
				want = u
				if d.Cmp(u) > 0 {
					want = d
				}
			} else {
				want = new(big.Int).Add(u, d)
				if want.Cmp(big.NewInt(math.MaxInt64)) > 0 {
					want = big.NewInt(math.MaxInt64)
				}
			}
			if want.Int64() != got {
				t.Fatalf("%s: %d, want %s", nd[i].d, got, want)
			}
			if (got > l) != slices.Contains(v.Over, nd[i].d) {
				t.Fatalf("%s: over=%v at %d of %d", nd[i].d, slices.Contains(v.Over, nd[i].d), got, l)
			}
			soft := new(big.Int).Mul(big.NewInt(got), big.NewInt(100)).Cmp(new(big.Int).Mul(big.NewInt(l), big.NewInt(b.SoftPercent))) >= 0
			if soft != slices.Contains(v.AtSoft, nd[i].d) {
				t.Fatalf("%s: at soft=%v at %d of %d", nd[i].d, !soft, got, l)
			}
			if got < *ud[i].v {
				t.Fatalf("%s decreased", nd[i].d)
			}
		}
		if b.Fits(used, delta) != !v.Exhausted() {
			t.Fatalf("Fits disagrees with Charge")
		}
	})
}

func TestRetryDecisions(t *testing.T) {
	p := DefaultContract().Retry
	// Expected backoff and jitter computed independently of this code from
	// the documented formula (SHA-256 over the domain, seed, key and retry).
	want := []struct{ base, delay int64 }{{500, 319}, {1000, 930}, {2000, 1405}}
	for i, w := range want {
		attempt := int64(i + 1)
		d, err := p.Decide(ClassTransient, attempt, "run-7:seed", "idem:k1")
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != ActionRetry || d.Retry != attempt || d.BaseMillis != w.base || d.DelayMillis != w.delay {
			t.Errorf("attempt %d: %+v, want base %d delay %d", attempt, d, w.base, w.delay)
		}
	}
	if d, _ := p.Decide(ClassTransient, 4, "run-7:seed", "idem:k1"); d.Action != ActionExhausted {
		t.Errorf("attempt 4: %+v, want exhausted", d)
	}
	if d, _ := p.Decide(ClassPermanent, 1, "s", "k"); d.Action != ActionFail {
		t.Errorf("permanent: %+v", d)
	}
	if d, _ := p.Decide(ClassUnknown, 1, "s", "k"); d.Action != ActionReconcile {
		t.Errorf("unknown outcome must be reconciled, never retried: %+v", d)
	}
	if _, err := p.Decide(ClassTransient, 0, "s", "k"); err == nil {
		t.Error("attempt 0 accepted")
	}
	if _, err := p.Decide("flaky", 1, "s", "k"); err == nil {
		t.Error("unknown class accepted")
	}
	wide := RetryPolicy{MaxRetries: 15, BaseMillis: 500, CapMillis: 60000}
	for r, w := range map[int64][2]int64{4: {4000, 3654}, 5: {8000, 6465}, 6: {16000, 13770}, 7: {32000, 24569}, 8: {60000, 43849}, 9: {60000, 53537}} {
		if b := wide.Backoff(r); b != w[0] {
			t.Errorf("backoff(%d) = %d, want %d", r, b, w[0])
		}
		if j := Jitter(w[0], "run-7:seed", "idem:k1", r); j != w[1] {
			t.Errorf("jitter(%d) = %d, want %d", r, j, w[1])
		}
	}
}

func TestPropertyRetry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.Int64Range(1, MaxBackoffMillis).Draw(t, "base")
		p := RetryPolicy{
			MaxRetries: rapid.Int64Range(0, MaxRetriesCeiling).Draw(t, "max"),
			BaseMillis: base,
			CapMillis:  rapid.Int64Range(base, MaxBackoffMillis).Draw(t, "cap"),
		}
		seed, key := rapid.String().Draw(t, "seed"), rapid.String().Draw(t, "key")
		prev := int64(0)
		for attempt := int64(1); attempt <= p.MaxRetries+1; attempt++ {
			d, err := p.Decide(ClassTransient, attempt, seed, key)
			if err != nil {
				t.Fatal(err)
			}
			if attempt > p.MaxRetries {
				if d.Action != ActionExhausted {
					t.Fatalf("attempt %d of %d retries: %v", attempt, p.MaxRetries, d.Action)
				}
				break
			}
			if d.BaseMillis < prev || d.BaseMillis > p.CapMillis || d.BaseMillis < p.BaseMillis {
				t.Fatalf("backoff %d not monotone within [%d, %d]", d.BaseMillis, p.BaseMillis, p.CapMillis)
			}
			if d.DelayMillis < d.BaseMillis-d.BaseMillis/2 || d.DelayMillis > d.BaseMillis {
				t.Fatalf("delay %d outside [%d, %d]", d.DelayMillis, d.BaseMillis-d.BaseMillis/2, d.BaseMillis)
			}
			if again, _ := p.Decide(ClassTransient, attempt, seed, key); again != d {
				t.Fatal("same inputs, different decision")
			}
			prev = d.BaseMillis
		}
	})
}

func TestNoProgressWindow(t *testing.T) {
	np := DefaultContract().NoProgress
	fp := func(i int) string { return "sha256:" + strings.Repeat(string(rune('a'+i)), 64) }
	type obs struct {
		r        Round
		weighted int64
		stalled  bool
		verdict  bool
		held     bool
	}
	seq := []obs{
		{Round{fp(0), Gain{VerifiedReceipts: 1}, 0}, 2, false, false, false},
		{Round{fp(1), Gain{}, 0}, 0, true, false, false},
		{Round{fp(2), Gain{}, 0}, 0, true, false, false},
		{Round{fp(3), Gain{}, 0}, 0, true, true, false},                     // three stalled rounds in a full window
		{Round{fp(3), Gain{ClosedObligations: 5}, 1}, 0, true, false, true}, // unchanged fingerprint earns nothing; pending effect holds
		{Round{fp(4), Gain{ResolvedConflicts: 1}, 0}, 1, false, false, false},
	}
	var w ProgressWindow
	for i, o := range seq {
		var v ProgressVerdict
		var err error
		w, v, err = np.Observe(w, o.r)
		if err != nil {
			t.Fatal(err)
		}
		if v.Round.Weighted != o.weighted || v.Round.Stalled != o.stalled || v.NoProgress != o.verdict || v.Held != o.held {
			t.Errorf("round %d: %+v, want weighted %d stalled %v no-progress %v held %v", i, v, o.weighted, o.stalled, o.verdict, o.held)
		}
		if int64(len(w.Rounds)) > np.WindowRounds {
			t.Errorf("window grew to %d", len(w.Rounds))
		}
	}
	if _, _, err := np.Observe(w, Round{Fingerprint: "nope"}); err == nil {
		t.Error("bad fingerprint accepted")
	}
	if _, _, err := np.Observe(w, Round{Fingerprint: fp(1), Gain: Gain{VerifiedReceipts: -1}}); err == nil {
		t.Error("negative gain accepted")
	}
	determinism.Check2(t, w, seq[0].r, func(w ProgressWindow, r Round) ProgressVerdict {
		_, v, _ := np.Observe(w, r)
		return v
	})
}

// TestPropertyNoProgress compares Observe with a direct restatement of the
// plateau rule over the whole history.
func TestPropertyNoProgress(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := rapid.Int64Range(1, 6).Draw(t, "window")
		np := NoProgress{
			Weights:      Gain{rapid.Int64Range(0, 3).Draw(t, "w1"), rapid.Int64Range(0, 3).Draw(t, "w2"), rapid.Int64Range(0, 3).Draw(t, "w3")},
			Epsilon:      rapid.Int64Range(1, 4).Draw(t, "eps"),
			WindowRounds: window,
			Threshold:    rapid.Int64Range(1, window).Draw(t, "threshold"),
		}
		var w ProgressWindow
		var history []RoundVerdict
		n := rapid.IntRange(1, 20).Draw(t, "rounds")
		for i := 0; i < n; i++ {
			r := Round{
				Fingerprint:    "sha256:" + strings.Repeat(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "fp"), 64),
				Gain:           Gain{rapid.Int64Range(0, 2).Draw(t, "g1"), rapid.Int64Range(0, 2).Draw(t, "g2"), rapid.Int64Range(0, 2).Draw(t, "g3")},
				PendingEffects: rapid.Int64Range(0, 1).Draw(t, "pending"),
			}
			var v ProgressVerdict
			var err error
			w, v, err = np.Observe(w, r)
			if err != nil {
				t.Fatal(err)
			}
			weighted := r.Gain.ClosedObligations*np.Weights.ClosedObligations + r.Gain.ResolvedConflicts*np.Weights.ResolvedConflicts + r.Gain.VerifiedReceipts*np.Weights.VerifiedReceipts
			if len(history) > 0 && history[len(history)-1].Fingerprint == r.Fingerprint {
				weighted = 0
			}
			history = append(history, RoundVerdict{Fingerprint: r.Fingerprint, Weighted: weighted, Stalled: weighted < np.Epsilon})
			stalled := int64(0)
			if int64(len(history)) >= window {
				for _, h := range history[int64(len(history))-window:] {
					if h.Stalled {
						stalled++
					}
				}
			}
			want := int64(len(history)) >= window && stalled >= np.Threshold && r.PendingEffects == 0
			if v.NoProgress != want || v.Round.Weighted != weighted {
				t.Fatalf("round %d: verdict %+v, want no-progress=%v weighted=%d", i, v, want, weighted)
			}
		}
	})
}

func TestFingerprintAndIdempotencyKey(t *testing.T) {
	// Digests computed independently of this code from the documented
	// preimages (canonical JSON with kind and version members).
	in := FingerprintInput{Cursor: 42, FState: "sha256:" + strings.Repeat("01", 32), LSupports: "sha256:" + strings.Repeat("02", 32),
		RFrontier: "sha256:" + strings.Repeat("03", 32), PendingEffects: "sha256:" + strings.Repeat("04", 32), Evidence: "sha256:" + strings.Repeat("05", 32)}
	fp, err := Fingerprint(in)
	if err != nil {
		t.Fatal(err)
	}
	if fp != "sha256:c36a171efd9d518e1b1649849d64c554840f39112bc4054c15bd438ef77e6205" {
		t.Errorf("fingerprint %s", fp)
	}
	in2 := in
	in2.Cursor = 43
	if fp2, _ := Fingerprint(in2); fp2 == fp {
		t.Error("cursor change left the fingerprint unchanged")
	}
	in2 = in
	in2.Evidence = "evidence"
	if _, err := Fingerprint(in2); err == nil {
		t.Error("non-digest evidence accepted")
	}

	k := KeyInput{RunID: "run-7", TransitionID: "dispatch-after-commit", EffectSequence: 3, ActionDigest: "sha256:" + strings.Repeat("ab", 32), AdapterVersion: "http/1.0.0"}
	key, err := IdempotencyKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if key != "idem:b214600144c1b08204d3924b48657f514660d134c1c75eddd66bfa7ba45cb368" {
		t.Errorf("key %s", key)
	}
	if !cjson.ValidID(key) {
		t.Errorf("key %s is not a protocol identifier", key)
	}
	for name, mut := range map[string]func(*KeyInput){
		"run":      func(k *KeyInput) { k.RunID = "run-8" },
		"sequence": func(k *KeyInput) { k.EffectSequence = 4 },
		"action":   func(k *KeyInput) { k.ActionDigest = "sha256:" + strings.Repeat("cd", 32) },
		"adapter":  func(k *KeyInput) { k.AdapterVersion = "http/1.0.1" },
		"transit":  func(k *KeyInput) { k.TransitionID = "begin-reconciliation" },
	} {
		k2 := k
		mut(&k2)
		if other, _ := IdempotencyKey(k2); other == key {
			t.Errorf("changing %s kept the key", name)
		}
	}
	for name, mut := range map[string]func(*KeyInput){
		"empty run":         func(k *KeyInput) { k.RunID = "" },
		"negative sequence": func(k *KeyInput) { k.EffectSequence = -1 },
		"bare action":       func(k *KeyInput) { k.ActionDigest = strings.Repeat("ab", 32) },
		"spaced adapter":    func(k *KeyInput) { k.AdapterVersion = "http 1" },
	} {
		k2 := k
		mut(&k2)
		if _, err := IdempotencyKey(k2); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestArithmeticIsDeterministic(t *testing.T) {
	c := DefaultContract()
	determinism.Check2(t, Usage{Steps: 51, Tokens: 79_999}, Usage{Steps: 1, Tokens: 1}, func(u, d Usage) BudgetVerdict {
		_, v, _ := c.Budgets.Charge(u, d)
		return v
	})
	determinism.Check(t, int64(2), func(a int64) RetryDecision {
		d, _ := c.Retry.Decide(ClassTransient, a, "seed", "idem:k")
		return d
	})
	determinism.Check(t, KeyInput{RunID: "r", TransitionID: "t", EffectSequence: 1, ActionDigest: "sha256:" + strings.Repeat("0", 64), AdapterVersion: "v1"}, func(k KeyInput) string {
		s, _ := IdempotencyKey(k)
		return s
	})
}

// TestPropertySoftCrossingOnce: over any sequence of charges, a dimension is
// reported as crossing the soft boundary exactly once if its usage ever
// reaches it, and never otherwise.
func TestPropertySoftCrossingOnce(t *testing.T) {
	b := DefaultContract().Budgets
	rapid.Check(t, func(t *rapid.T) {
		used := Usage{}
		crossings := map[Dimension]int{}
		n := rapid.IntRange(1, 40).Draw(t, "charges")
		for i := 0; i < n; i++ {
			d := Usage{
				Steps:       rapid.Int64Range(0, 5).Draw(t, "steps"),
				Tokens:      rapid.Int64Range(0, 9000).Draw(t, "tokens"),
				CostMicros:  rapid.Int64Range(0, 2_000_000).Draw(t, "cost"),
				Parallelism: rapid.Int64Range(0, 5).Draw(t, "par"),
			}
			var v BudgetVerdict
			var err error
			used, v, err = b.Charge(used, d)
			if err != nil {
				t.Fatal(err)
			}
			for _, dim := range v.SoftCrossed {
				crossings[dim]++
			}
		}
		lim := b.Limits
		ld, ud := lim.dims(), used.dims()
		for i := range ud {
			reached := *ud[i].v*100 >= *ld[i].v*b.SoftPercent
			want := 0
			if reached {
				want = 1
			}
			if crossings[ud[i].d] != want {
				t.Fatalf("%s: %d crossings at %d of %d", ud[i].d, crossings[ud[i].d], *ud[i].v, *ld[i].v)
			}
		}
	})
}

// TestObserveKeepsTheWindowsLastRounds holds the window Observe returns
// to the history's last rounds (at most WindowRounds of them), the
// caller's window to what it was, and Observe to one allocation.
func TestObserveKeepsTheWindowsLastRounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := rapid.Int64Range(1, 6).Draw(t, "window")
		np := NoProgress{Weights: Gain{1, 1, 1}, Epsilon: 1, WindowRounds: window, Threshold: window}
		var w ProgressWindow
		var history []RoundVerdict
		for i := range rapid.IntRange(1, 20).Draw(t, "rounds") {
			r := Round{Fingerprint: "sha256:" + strings.Repeat(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "fp"), 64),
				Gain: Gain{VerifiedReceipts: rapid.Int64Range(0, 2).Draw(t, "g")}}
			before := slices.Clone(w.Rounds)
			next, v, err := np.Observe(w, r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.Rounds, before) {
				t.Fatalf("round %d: the caller's window changed: %v, was %v", i, w.Rounds, before)
			}
			history = append(history, v.Round)
			want := history[max(0, int64(len(history))-window):]
			if !slices.Equal(next.Rounds, want) {
				t.Fatalf("round %d: window %v, want %v", i, next.Rounds, want)
			}
			kept := slices.Clone(next.Rounds)
			for j := range next.Rounds {
				next.Rounds[j].Weighted = -7
			}
			if !slices.Equal(w.Rounds, before) {
				t.Fatalf("round %d: the window returned shares the caller's array", i)
			}
			copy(next.Rounds, kept)
			w = next
		}
	})
	np := DefaultContract().NoProgress
	w := ProgressWindow{Rounds: []RoundVerdict{{Fingerprint: "sha256:" + strings.Repeat("a", 64), Weighted: 2}}}
	r := Round{Fingerprint: "sha256:" + strings.Repeat("b", 64), Gain: Gain{VerifiedReceipts: 1}}
	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := np.Observe(w, r); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("Observe made %v allocations, want 1", n)
	}
}
