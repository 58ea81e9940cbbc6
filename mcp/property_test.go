package mcp

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Whatever inputs an agent submits to a run that waits for approval, and
// however closely they imitate a grant, the run keeps waiting: no grant
// appears in the ledger, no intent is committed, nothing is sent, and
// every submission sits in the inbox as the agent's input.
func TestPropertyAgentInputNeverAuthorizes(t *testing.T) {
	f := newFixture(t, fixtureOpts{}) // advanced explicitly, so each check is deterministic
	cs := connect(t, f.deps, nil)
	ctx := context.Background()
	fewerChecks(t, 25)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		runID := fmt.Sprintf("prop-%d", n)
		input := fmt.Sprintf(`{"refunds":[{"id":"r-p%d","amount":%d,"payee":"bob","reason":"x"}]}`, n, rapid.IntRange(101, 1_000_000).Draw(rt, "amount"))
		if err := f.r.Start(ctx, runID, "refund-agent", "1", []byte(input)); err != nil {
			rt.Fatal(err)
		}
		if err := f.r.RunToIdle(ctx); err != nil {
			rt.Fatal(err)
		}
		before, err := f.r.Inspect(ctx, runID)
		if err != nil || before.State != "WAIT_APPROVAL" || len(before.Waiting) != 1 {
			rt.Fatalf("setup: %+v %v", before, err)
		}
		w := before.Waiting[0]
		forgeries := rapid.SliceOfN(forgery(w), 1, 4).Draw(rt, "inputs")
		for _, body := range forgeries {
			res := callRaw(t, cs, "submit_input", map[string]any{"run_id": runID, "input": body, "wait_seconds": 0})
			if res.IsError {
				rt.Fatalf("submit_input %v: %s", body, text(res))
			}
		}
		if err := f.r.RunToIdle(ctx); err != nil {
			rt.Fatal(err)
		}
		after, err := f.r.Inspect(ctx, runID)
		if err != nil {
			rt.Fatal(err)
		}
		if after.State != "WAIT_APPROVAL" || len(after.Waiting) != 1 || !reflect.DeepEqual(after.Waiting[0], w) {
			rt.Fatalf("after %v the run is %s waiting for %+v", forgeries, after.State, after.Waiting)
		}
		if its, err := f.st.Intents(ctx, runID); err != nil || len(its) != 0 {
			rt.Fatalf("intents committed: %d (%v)", len(its), err)
		}
		in, err := f.st.Inbox(ctx, runID, false)
		if err != nil || len(in) != 1+len(forgeries) {
			rt.Fatalf("inbox %d entries (%v)", len(in), err)
		}
		for _, e := range in[1:] {
			if e.Kind != runner.KindInput || e.ActorRole != AgentRole || e.Capability != AgentCapability {
				rt.Fatalf("agent submission recorded as %+v", e)
			}
			var body map[string]any
			if err := json.Unmarshal(e.Body, &body); err != nil {
				rt.Fatal(err)
			}
			if id, ok := body["approval_id"].(string); ok {
				if _, err := f.st.Approval(ctx, id); store.CodeOf(err) != store.CodeNotFound {
					rt.Fatalf("approval %q exists: %v", id, err)
				}
			}
		}
		if m := len(f.sb.Mutations()); m != 0 {
			rt.Fatalf("sandbox applied %d mutations", m)
		}
	})
}

// fewerChecks lowers rapid's number of checks to n for one test whose
// every check commits to a real store, unless -rapid.checks was given.
func fewerChecks(t *testing.T, n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if set {
		return
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", strconv.Itoa(n))
	t.Cleanup(func() { flag.Set("rapid.checks", old) })
}

// forgery draws JSON objects built from the vocabulary of approvals,
// grants and control events, with the waiting request's real id and
// digest among the values.
func forgery(w runner.ApprovalNeed) *rapid.Generator[map[string]any] {
	keys := []string{"kind", "approval_id", "request_id", "request_digest", "actor", "role", "capability", "event",
		"decision", "nonce", "expires_at", "intent_id", "resolution", "refunds", "grant", "approved"}
	values := []any{"flrh.approval.grant", "grant:" + w.RequestID, w.RequestID, w.RequestDigest, w.IntentID, "demo-approver",
		"human_approver", "approval.grant_exact_hash", "APPROVAL_GRANTED", "approve", "confirmed_success", "2099-01-01T00:00:00Z",
		true, int64(1), int64(900)}
	value := rapid.Custom(func(t *rapid.T) any {
		switch rapid.IntRange(0, 3).Draw(t, "shape") {
		case 0:
			return rapid.SampledFrom(values).Draw(t, "v")
		case 1:
			return rapid.StringMatching(`[a-z:_-]{0,12}`).Draw(t, "s")
		case 2:
			return map[string]any{rapid.SampledFrom(keys).Draw(t, "k"): rapid.SampledFrom(values).Draw(t, "v")}
		default:
			return []any{rapid.SampledFrom(values).Draw(t, "v")}
		}
	})
	return rapid.Custom(func(t *rapid.T) map[string]any {
		m := map[string]any{}
		for _, k := range rapid.SliceOfNDistinct(rapid.SampledFrom(keys), 1, len(keys), rapid.ID[string]).Draw(t, "keys") {
			m[k] = value.Draw(t, k)
		}
		return m
	})
}

// rawInput never panics, and whatever it accepts comes out canonical.
func FuzzRawInput(f *testing.F) {
	for _, s := range []string{`{"input":{}}`, `{"input":{"b":1,"a":[true,null,"x"]}}`, `{"input":1.5}`, `{"input":{"a":1,"a":2}}`,
		`{"input":"\ud800"}`, `{}`, `[]`, `{"input":{"n":9007199254740993}}`, `{"input":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := rawInput(args)
		if err != nil {
			return
		}
		again, err := cjson.Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("accepted %q as %q, which is not canonical (%q, %v)", args, out, again, err)
		}
	})
}
