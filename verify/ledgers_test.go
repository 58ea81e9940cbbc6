package verify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestLedgersHoldsBothViews: ledgers has exactly the members of ledger and
// of retryLedger, each of the same type and name, and its two views give
// every one of them back: a ledger encoded from any ledgers value decodes,
// as each view, to what the view's method gives.
func TestLedgersHoldsBothViews(t *testing.T) {
	want := map[string]reflect.StructField{}
	for _, v := range []any{ledger{}, retryLedger{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			if g, ok := want[f.Name]; ok && (g.Type != f.Type || g.Tag != f.Tag) {
				t.Fatalf("%s differs between the views", f.Name)
			}
			want[f.Name] = f
		}
	}
	rt := reflect.TypeFor[ledgers]()
	if rt.NumField() != len(want) {
		t.Fatalf("ledgers has %d members, the views %d", rt.NumField(), len(want))
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if g, ok := want[f.Name]; !ok || g.Type != f.Type || g.Tag != f.Tag {
			t.Fatalf("ledgers.%s is not the views' member", f.Name)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(-3, 1<<40)
		l := ledgers{MaxTransitions: n.Draw(t, "mt"), Adopted: rapid.Bool().Draw(t, "adopted"),
			StartedMillis: n.Draw(t, "started"), ClockMillis: n.Draw(t, "clock"), WallMillis: n.Draw(t, "wall"),
			SuspendMillis: n.Draw(t, "suspended"), Steps: n.Draw(t, "steps"), ToolCalls: n.Draw(t, "tools"),
			Tokens: n.Draw(t, "tokens"), CostMicros: n.Draw(t, "cost"), MaxAttempts: n.Draw(t, "max_attempts")}
		l.Limits.Steps, l.Limits.Tokens = n.Draw(t, "limit steps"), n.Draw(t, "limit tokens")
		if rapid.Bool().Draw(t, "breach") {
			l.Breach = &breach{Dimension: "steps", Limit: n.Draw(t, "limit"), Used: n.Draw(t, "used"), Event: "BUDGET_EXHAUSTED"}
		}
		l.RetriesExhausted = json.RawMessage(`null`) // as a member null decodes
		if rapid.Bool().Draw(t, "exhausted") {
			l.RetriesExhausted = json.RawMessage(`{"intent":"i"}`)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var wb ledger
		var wr retryLedger
		if json.Unmarshal(b, &wb) != nil || json.Unmarshal(b, &wr) != nil {
			t.Fatal("unreadable")
		}
		if !reflect.DeepEqual(l.budget(), wb) || !reflect.DeepEqual(l.retry(), wr) {
			t.Fatalf("%s: views %+v %+v, decoded %+v %+v", b, l.budget(), l.retry(), wb, wr)
		}
	})
}

// TestLedgerReadOnceAsEachCheckReadsIt: the budget and the retry checks
// read the same ledger, and the same verdict of unreadable, whether they
// take it from one reading for both or each reads the checkpoint's budget
// member on its own: for ledgers whose members are misnamed, mistyped,
// repeated, null, or not JSON.
func TestLedgerReadOnceAsEachCheckReadsIt(t *testing.T) {
	members := []string{
		`"steps":1`, `"Steps":2`, `"steps":1.5`, `"tokens":-0`, `"adopted":true`, `"adopted":"no"`,
		`"max_attempts":4`, `"max_attempts":"x"`, `"MAX_ATTEMPTS":3`, `"max_attempts":null`,
		`"retries_exhausted":{"intent":"i","attempts":4}`, `"retries_exhausted":null`, `"retries_exhausted":[1`,
		`"breach":{"dimension":"steps","limit":1,"used":2}`, `"breach":1`, `"breach":null`,
		`"limits":{"steps":64,"tool_calls":2}`, `"limits":{"Steps":1}`, `"limits":[]`, `"x":[1,{"y":null}]`,
		`"wall_millis":99999999999999999999`, `"clock_millis":7`, `"café":1`,
	}
	defer func() { ledgersShared = true }()
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.SliceOfN(rapid.SampledFrom(members), 0, 8).Draw(t, "members")
		budget := "{" + strings.Join(ms, ",") + "}"
		if rapid.IntRange(0, 9).Draw(t, "null") == 0 {
			budget = "null"
		}
		body := []byte(`{"budget":` + budget + `,"ingest":[],"open":[]}`)
		read := func(shared bool) (budgetBody, bool, *retryLedger, bool) {
			ledgersShared = shared
			cp := readCheckpoint(body)
			b, bok := readBudgetBody(cp)
			r, rok := readRetryLedger(cp)
			return b, bok, r, rok
		}
		wb, wbok, wr, wrok := read(false)
		gb, gbok, gr, grok := read(true)
		if !reflect.DeepEqual(gb, wb) || gbok != wbok || !reflect.DeepEqual(gr, wr) || grok != wrok {
			t.Fatalf("%s\nread once: %+v %v, %+v %v\neach:      %+v %v, %+v %v", body, gb, gbok, gr, grok, wb, wbok, wr, wrok)
		}
	})
}
