package runner

import (
	"errors"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

func counterRunner(t *testing.T, h *harness) *Runner {
	t.Helper()
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: h.store, Workflows: []Workflow{counter{refunds{limit: 1000}}}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A delivery that comes again, however often, is one input; the same
// key with other content is refused; deliveries with other keys are
// inputs of their own.
func TestDeliverTakesEachDeliveryOnce(t *testing.T) {
	h := newHarness(t)
	r := counterRunner(t, h)
	first := Delivery{Key: "shop:msg_1", RunID: "c", Input: []byte(`{"amount":1,"id":"a","payee":"p"}`), Actor: "hook:shop", Workflow: "counter", Version: "1"}
	steps := []struct {
		name string
		d    Delivery
		want Delivered
		code store.Code
	}{
		{"starts the run", first, Delivered{Started: true}, ""},
		{"again: nothing written", first, Delivered{Started: true, Again: true}, ""},
		{"another delivery: an input", Delivery{Key: "shop:msg_2", RunID: "c", Input: []byte(`{"amount":2,"id":"b","payee":"p"}`), Actor: "hook:shop", Workflow: "counter", Version: "1"}, Delivered{}, ""},
		{"that one again", Delivery{Key: "shop:msg_2", RunID: "c", Input: []byte(`{"amount":2,"id":"b","payee":"p"}`), Actor: "hook:shop"}, Delivered{Again: true}, ""},
		{"the first with other content", Delivery{Key: "shop:msg_1", RunID: "c", Input: []byte(`{"amount":9,"id":"a","payee":"p"}`), Actor: "hook:shop", Workflow: "counter", Version: "1"}, Delivered{}, store.CodeExists},
		{"an input with other content", Delivery{Key: "shop:msg_2", RunID: "c", Input: []byte(`{"amount":3,"id":"b","payee":"p"}`), Actor: "hook:shop"}, Delivered{}, store.CodeExists},
		{"another hook's msg_1", Delivery{Key: "crm:msg_1", RunID: "c", Input: []byte(`{"amount":1,"id":"c","payee":"p"}`), Actor: "hook:crm"}, Delivered{}, ""},
		{"no such run, nothing to start", Delivery{Key: "shop:msg_3", RunID: "nope", Input: []byte(`{}`), Actor: "hook:shop"}, Delivered{}, store.CodeNotFound},
	}
	for _, s := range steps {
		got, err := r.Deliver(ctx, s.d)
		if s.code != "" {
			if store.CodeOf(err) != s.code {
				t.Fatalf("%s: %+v, %v; want %s", s.name, got, err, s.code)
			}
			continue
		}
		if err != nil || got != s.want {
			t.Fatalf("%s: %+v, %v; want %+v", s.name, got, err, s.want)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	in, _ := h.store.Inbox(ctx, "c", false)
	if len(in) != 3 || h.dest.count() != 3 {
		t.Fatalf("%d inbox entries, %d payments; want 3 of each", len(in), h.dest.count())
	}
	if in[0].Capability != "run.start" || in[1].Capability != "input.propose" || in[2].Actor != "hook:crm" {
		t.Fatalf("entries recorded as %+v", in)
	}
}

// Deliveries of one new run at the same instant: one run, one input.
func TestDeliverAtOnce(t *testing.T) {
	h := newHarness(t)
	r := counterRunner(t, h)
	d := Delivery{Key: "shop:msg_9", RunID: "c9", Input: []byte(`{"amount":1,"id":"a","payee":"p"}`), Actor: "hook:shop", Workflow: "counter", Version: "1"}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = r.Deliver(ctx, d) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := h.store.Inbox(ctx, "c9", false); len(in) != 1 || h.dest.count() != 1 {
		t.Fatalf("%d inbox entries, %d payments for one delivery", len(in), h.dest.count())
	}
}

// A run that ended still recognises what it was delivered; anything new
// is refused as an ended run refuses input.
func TestDeliverToAnEndedRun(t *testing.T) {
	h := newHarness(t)
	d := Delivery{Key: "shop:msg_1", RunID: "r", Input: []byte(small), Actor: "hook:shop", Workflow: "refunds", Version: "1"}
	if got, err := h.r.Deliver(ctx, d); err != nil || !got.Started {
		t.Fatalf("%+v, %v", got, err)
	}
	h.idle()
	if s := h.run("r").State; s != "SUCCEEDED" {
		t.Fatalf("state %s", s)
	}
	if got, err := h.r.Deliver(ctx, d); err != nil || got != (Delivered{Started: true, Again: true}) {
		t.Fatalf("again after the end: %+v, %v", got, err)
	}
	d.Key, d.Input = "shop:msg_2", []byte(large)
	var ended *EndedError
	if _, err := h.r.Deliver(ctx, d); !errors.As(err, &ended) {
		t.Fatalf("a new delivery to an ended run: %v", err)
	}
	if h.dest.count() != 1 {
		t.Fatalf("%d payments", h.dest.count())
	}
}

// A delivery the workflow refuses to start on writes nothing.
func TestDeliverRefusedInput(t *testing.T) {
	h := newHarness(t)
	for _, in := range []string{`{"refunds":1.5}`, `[`, `{"format":"flrh-reported-input/1","input":{}}`} {
		d := Delivery{Key: "k", RunID: "bad", Input: []byte(in), Actor: "hook:shop", Workflow: "refunds", Version: "1"}
		if _, err := h.r.Deliver(ctx, d); err == nil {
			t.Fatalf("%s started a run", in)
		}
	}
	if _, err := h.store.Run(ctx, "bad"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a refused delivery left a run: %v", err)
	}
}

// A delivery to a run that exists is its next input, even one its
// workflow would refuse to start a run with.
func TestDeliverToAnExistingRunIsAnInput(t *testing.T) {
	h := newHarness(t)
	if _, err := h.r.Deliver(ctx, Delivery{Key: "k1", RunID: "r", Input: []byte(large), Actor: "hook:shop", Workflow: "refunds", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	// refunds refuses to start on an input that requests no refund.
	note := []byte(`{"note":"customer called"}`)
	if _, err := h.r.Deliver(ctx, Delivery{Key: "k0", RunID: "fresh", Input: note, Actor: "hook:shop", Workflow: "refunds", Version: "1"}); err == nil {
		t.Fatal("a run started on an input its workflow refuses")
	}
	got, err := h.r.Deliver(ctx, Delivery{Key: "k2", RunID: "r", Input: note, Actor: "hook:shop", Workflow: "refunds", Version: "1"})
	if err != nil || got != (Delivered{}) {
		t.Fatalf("a note to the running run: %+v, %v", got, err)
	}
	if in, _ := h.store.Inbox(ctx, "r", false); len(in) != 2 || in[1].Capability != "input.propose" {
		t.Fatalf("inbox %+v", in)
	}
}
