package runner

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/store"
)

// closeFixture is a runner and a pass's tick with an open effect to close:
// what close reads of them.
func closeFixture() (*Runner, *tick, *openEffect, protocol.EffectIntent) {
	d := func(c string) string { return "sha256:" + string(bytes.Repeat([]byte(c), 64)) }
	intent := protocol.EffectIntent{
		Kind: protocol.KindEffectIntent, IntentID: "intent:1", ProposalID: "proposal:1", BatchID: "batch:1",
		EffectType: "refund.issue", ActionDigest: d("1"), Capability: "capability:refund",
		AuthorityDigest: d("4"), CauseID: "evt:1", CorrelationID: "run:1", IdempotencyKey: "key:1",
		DestinationDigest: d("2"), GoalID: "goal:1", ObligationID: "obligation:refund:1",
		AdapterVersion: "http/1", AssessedRisk: protocol.RiskReversible, Preconditions: protocol.IDSet{"frontier:7"},
		Versions: protocol.VersionEnvelope{
			Workflow: "refund/0.1", StateSchema: "state/0.1", EventSchema: "event/1", GraphSchema: "graph/0",
			RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1", Tool: "http/1",
			Model: "none/0", Oracle: "oracle/1", Gate: "gate/1", Resolver: "resolver/0", CompositionProfile: "composition/0",
		},
	}
	now := time.Date(2026, 8, 8, 0, 0, 2, 0, time.UTC)
	r := &Runner{cfg: Config{PlatformDigest: d("9"), Clock: func() time.Time { return now }}}
	t := &tick{cp: &checkpoint{}}
	r.takeScratch(t)
	return r, t, &openEffect{IntentID: intent.IntentID, ContentDigest: d("3")}, intent
}

// A receipt's output digest is handed to its check in the pass's scratch,
// not in a list of its own: closing with one allocates exactly the
// receipt's own copy more than closing without, and the scratch holds
// nothing of the receipt afterwards.
func TestCloseHandsTheOutputDigestInTheScratch(t *testing.T) {
	evidence := "sha256:" + string(bytes.Repeat([]byte("e"), 64))
	allocs := func(out string) float64 {
		r, tk, e, intent := closeFixture()
		return testing.AllocsPerRun(200, func() {
			tk.pending.Results, tk.pending.Receipts, tk.cp.Ingest = tk.pending.Results[:0], tk.pending.Receipts[:0], tk.cp.Ingest[:0]
			if err := r.close(tk, e, intent, 1, store.AttemptSucceeded, protocol.OutcomeConfirmedSuccess, out, "HTTP_200"); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A success without evidence is refused by the receipt's check; an
	// unknown outcome takes none.
	without := func() float64 {
		r, tk, e, intent := closeFixture()
		return testing.AllocsPerRun(200, func() {
			tk.pending.Results, tk.pending.Receipts, tk.cp.Ingest = tk.pending.Results[:0], tk.pending.Receipts[:0], tk.cp.Ingest[:0]
			if err := r.close(tk, e, intent, 1, store.AttemptUnknown, protocol.OutcomeUnknown, "", "TIMEOUT"); err != nil {
				t.Fatal(err)
			}
		})
	}()
	if with := allocs(evidence); with != without+1 {
		t.Fatalf("closing with an output digest: %v allocations; without: %v (want one more, the receipt's copy)", with, without)
	}
	r, tk, e, intent := closeFixture()
	if err := r.close(tk, e, intent, 1, store.AttemptSucceeded, protocol.OutcomeConfirmedSuccess, evidence, "HTTP_200"); err != nil {
		t.Fatal(err)
	}
	if tk.scratch.outputs != [1]string{} {
		t.Fatalf("the scratch keeps %q after the receipt is made", tk.scratch.outputs)
	}
	body := tk.pending.Receipts[0].Body
	if !bytes.Contains(body, []byte(`"output_digests":["`+evidence+`"]`)) {
		t.Fatalf("receipt %s does not hold its output digest", body)
	}
	// The receipt's bytes stay as they were when the scratch is written
	// over (by the next receipt's digest).
	kept := bytes.Clone(body)
	tk.scratch.outputs[0] = "sha256:" + string(bytes.Repeat([]byte("f"), 64))
	if !bytes.Equal(body, kept) {
		t.Fatal("the receipt's bytes changed with the scratch")
	}
}

// attemptAndTime spells what attemptID and the clock's RFC 3339 text
// spelled apart, for ids and attempts of any length and times in any
// zone, and takes one allocation for the receipts a run makes.
func TestAttemptAndTimeSpellsBoth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringMatching(`[a-z:/0-9-]{0,220}`).Draw(t, "id")
		n := rapid.Int64().Draw(t, "n")
		now := time.Unix(rapid.Int64Range(-1e11, 1e11).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "nsec")).
			In(time.FixedZone("z", rapid.IntRange(-50000, 50000).Draw(t, "offset")))
		a, at := attemptAndTime(id, n, now)
		if want := attemptID(id, n); a != want {
			t.Fatalf("attempt %q, want %q", a, want)
		}
		if want := now.UTC().Format(time.RFC3339); at != want {
			t.Fatalf("time %q, want %q", at, want)
		}
	})
	now := time.Date(2026, 8, 8, 0, 0, 2, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { attemptAndTime("intent:sq-0:f0a1b2c3d4e5f60718293a4b5c6d7e8f", 1, now) }); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}
