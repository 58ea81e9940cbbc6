package workflow

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// TestSupportIDAndProvenance holds a base support's id and provenance,
// written into one string, to baseID and MarshalString of the
// provenance, each ending where its string ends.
func TestSupportIDAndProvenance(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		id := rapid.SampledFrom([]string{"derivation:", "fact:", ""}).Draw(rt, "prefix") + rapid.StringMatching(`[a-z0-9:]{0,80}`).Draw(rt, "id")
		prov := protocol.Object{}
		for _, k := range rapid.SliceOfN(rapid.StringMatching(`[a-z_]{1,12}`), 1, 4).Draw(rt, "keys") {
			prov[k] = rapid.OneOf(rapid.Map(rapid.String(), func(s string) any { return s }),
				rapid.Map(rapid.Int64(), func(n int64) any { return n })).Draw(rt, k)
		}
		gotID, gotProv, err := supportIDAndProvenance(id, prov)
		wantProv, wantErr := cjson.MarshalString(map[string]any(prov))
		if (err == nil) != (wantErr == nil) {
			rt.Fatalf("error %v, want %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if gotID != baseID(id) || gotProv != wantProv {
			rt.Fatalf("(%q, %q), want (%q, %q)", gotID, gotProv, baseID(id), wantProv)
		}
	})
}

// TestTraceStartsInTheTick decides runs one tick after another and holds
// each result's trace, which starts in its tick, to what it was when
// returned, after every later tick: no two ticks write one trace.
func TestTraceStartsInTheTick(t *testing.T) {
	w := compileExample(t, "refund-agent")
	type kept struct {
		trace []Note
		copy  []Note
	}
	var all []kept
	keep := func(r Result) {
		c := make([]Note, len(r.Trace))
		for i, n := range r.Trace {
			c[i] = Note{Kind: n.Kind, Body: slices.Clone(n.Body)}
		}
		all = append(all, kept{r.Trace, c})
	}
	for i := range 4 {
		st, _ := w.Init("run-trace")
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-"+strings.Repeat("x", i+1), int64(10+i), "alice", "damaged")})
		if err != nil || r.Refusal != "" || len(r.Effects) != 1 {
			t.Fatal(err, r.Refusal)
		}
		keep(r)
		r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
		if err != nil || r2.Refusal != "" {
			t.Fatal(err, r2.Refusal)
		}
		keep(r2)
	}
	for i, k := range all {
		if len(k.trace) < 2 {
			t.Fatalf("result %d: %d notes", i, len(k.trace))
		}
		for j := range k.trace {
			if k.trace[j].Kind != k.copy[j].Kind || string(k.trace[j].Body) != string(k.copy[j].Body) {
				t.Fatalf("result %d note %d changed after later ticks: %s %s, was %s %s", i, j, k.trace[j].Kind, k.trace[j].Body, k.copy[j].Kind, k.copy[j].Body)
			}
		}
	}
}
