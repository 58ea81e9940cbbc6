package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store/sqlite"
)

// counter is a workflow with constant-size state: every input asks for
// one low-risk payment; every receipt is counted.
type counter struct{ refunds }

func (counter) ID() string                  { return "counter" }
func (counter) Init(string) ([]byte, error) { return []byte(`{"paid":0}`), nil }

func (c counter) Decide(state []byte, in Accepted) (Decision, error) {
	var st struct {
		Paid int64 `json:"paid"`
	}
	if err := decodeInto(state, &st); err != nil {
		return Decision{}, err
	}
	d := Decision{Completion: Continue}
	switch in.Kind {
	case KindInput:
		var r refund
		if err := decodeInto(in.Body, &r); err != nil {
			return Decision{State: state, Refusal: "not a refund", Completion: Continue}, nil
		}
		d.Effects = []EffectPlan{c.plan(r, in)}
	case "receipt":
		st.Paid++
	}
	next, err := cjson.Marshal(st)
	d.State = next
	return d, err
}

// BenchmarkGovernedStep measures one governed step on the embedded store
// with synchronous=FULL: an input accepted, decided and authorized; its
// intent, outbox row, first attempt and checkpoint committed; the effect
// executed against an in-process destination; its receipt committed and
// accepted back. One run, b.N inputs, one at a time (C=1).
func BenchmarkGovernedStep(b *testing.B) { benchGovernedStep(b, false) }

// BenchmarkGovernedStepReported is BenchmarkGovernedStep with a usage
// report on every input and a metered adapter: what charging tokens and
// cost adds to a step that has them.
func BenchmarkGovernedStepReported(b *testing.B) { benchGovernedStep(b, true) }

func benchGovernedStep(b *testing.B, reported bool) {
	dir := b.TempDir()
	path := filepath.Join(dir, "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	dest := newDestination()
	reg := &effect.Registry{}
	if reported {
		reg.Register("refund.pay", "fake/1", &metered{destination: dest, cost: Usage{Tokens: 3, CostMicros: 50}})
	} else {
		reg.Register("refund.pay", "fake/1", dest)
	}
	wf := counter{refunds{limit: 1 << 40}}
	r, err := New(Config{Store: st, Workflows: []Workflow{wf}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, MaxTransitions: 1 << 40, Contract: unboundedContract(b)})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(ctx, "bench", "counter", "1", []byte(`{"id":"r0","amount":1,"payee":"p"}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Advance(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	inputs := make([][]byte, b.N)
	usage := make([]Usage, b.N)
	for i := range inputs {
		inputs[i] = []byte(fmt.Sprintf(`{"amount":%d,"id":"r%d","payee":"p"}`, i+1, i+1))
		if reported {
			usage[i] = Usage{Tokens: int64(100 + i), CostMicros: 120}
		}
	}
	before := fileSize(path)
	var events0 int
	st.DB().QueryRow(`SELECT COUNT(*) FROM events`).Scan(&events0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchStep(b, r, inputs[i], usage[i])
	}
	b.StopTimer()
	if dest.count() != b.N+1 {
		b.Fatalf("%d mutations for %d steps", dest.count(), b.N+1)
	}
	if cp, err := st.Checkpoint(ctx, "bench"); err != nil {
		b.Fatal(err)
	} else if charged := bytes.Contains(cp.Body, []byte(`"cost_micros":0,`)); charged == reported {
		b.Fatalf("reported=%v but the ledger's cost is %v", reported, !charged)
	}
	var events int
	st.DB().QueryRow(`SELECT COUNT(*) FROM events`).Scan(&events)
	b.ReportMetric(float64(events-events0)/float64(b.N), "events/step")
	b.ReportMetric(float64(fileSize(path)-before)/float64(b.N), "db-bytes/step")
}

func fileSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// unboundedContract is the default loop contract with every counted budget
// at its ceiling: long benchmark runs measure steps, not budgets.
func unboundedContract(tb testing.TB) *control.Contract {
	const most = "4503599627370496" // 2^52, the contract's ceiling
	c, err := control.DefaultContract().Override([]byte(`{"budgets":{"steps":` + most + `,"tool_calls":` + most +
		`,"wall_seconds":` + most + `,"suspended_seconds":` + most + `,"tokens":` + most + `,"cost_micros":` + most + `}}`))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// benchStep hands the "bench" run an input (with its usage report) as an
// agent would and advances the run through it: one governed step, the
// input accepted in the commit of the tick it starts.
func benchStep(b *testing.B, r *Runner, body []byte, u Usage) {
	if _, err := r.SubmitAdvanceWithUsage(ctx, "bench", body, u, Actor{Name: "bench", Role: "agent", Capability: "run.input"}); err != nil {
		b.Fatal(err)
	}
}
