package runner

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
)

// countingPreparer is an adapter that prepares requests (the sandbox's
// own, in process), counting which of its methods the runner calls.
type countingPreparer struct {
	effect.Preparer
	a                                    effect.Adapter
	prepares, executes, executePrepareds atomic.Int64
}

func (c *countingPreparer) Prepare(in effect.Intent) (effect.Prepared, error) {
	c.prepares.Add(1)
	return c.Preparer.Prepare(in)
}

func (c *countingPreparer) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	c.executes.Add(1)
	return c.a.Execute(ctx, in)
}

func (c *countingPreparer) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	c.executePrepareds.Add(1)
	return c.Preparer.ExecutePrepared(ctx, in, p)
}

func (c *countingPreparer) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	return c.a.Lookup(ctx, key, contentDigest)
}

// digestOnly is the same adapter seen as one that can only name its
// content digest: the runner then sends through Execute.
type digestOnly struct {
	effect.Adapter
	effect.ContentDigester
}

// A runner sends the request its adapter prepared when binding the
// intent's content, instead of having Execute prepare it again: every
// record of the run is what it is when the adapter cannot hand over its
// preparation, and the destination applied the same requests.
func TestPreparedRequestIsSent(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	drive := func(a effect.Adapter) *foldRig {
		g := newFoldRig(t, now, 1000)
		reg := &effect.Registry{}
		if err := reg.Register("refund.pay", "fake/1", a); err != nil {
			t.Fatal(err)
		}
		r, err := New(Config{Store: g.count, Workflows: []Workflow{counter{refunds{limit: 1000}}}, Adapters: reg, Owner: "runner",
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: g.clock.Now, Sleep: g.clock.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
			t.Fatal(err)
		}
		if err := r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 2; i <= 4; i++ {
			if _, err := r.SubmitAdvance(ctx, "c", payment(i), inputter); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	sbA, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sbB, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingPreparer{Preparer: sbA.Adapter().(effect.Preparer), a: sbA.Adapter()}
	prepared := drive(counted)
	plain := drive(digestOnly{Adapter: sbB.Adapter(), ContentDigester: sbB.Adapter().(effect.ContentDigester)})
	if got, want := prepared.record("c"), plain.record("c"); got != want {
		t.Fatalf("records differ:\nsent as prepared\n%s\nprepared again\n%s", got, want)
	}
	if n := len(sbA.Mutations()); n != 4 || counted.prepares.Load() != 4 || counted.executePrepareds.Load() != 4 || counted.executes.Load() != 0 {
		t.Fatalf("%d mutations; %d prepared, %d sent as prepared, %d through Execute", n, counted.prepares.Load(), counted.executePrepareds.Load(), counted.executes.Load())
	}
	if !reflect.DeepEqual(sbA.Mutations(), sbB.Mutations()) {
		t.Fatalf("applied: sent as prepared %+v, prepared again %+v", sbA.Mutations(), sbB.Mutations())
	}
}
