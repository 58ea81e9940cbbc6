package httpadapter_test

import (
	"context"
	"fmt"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// A destination applies a refund and drops the connection before
// answering. The adapter cannot know what happened and says so; the
// reconciler asks the destination by idempotency key and content digest and
// confirms the refund from its ledger. A retry of the same intent is
// answered from the destination's idempotency record: one refund, not two.
func Example_dropAfterApply() {
	dest, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		panic(err)
	}
	defer dest.Close()
	dest.Inject(sandbox.Fault{Key: "effect:refund-7", Times: 1, Drop: true})

	a, err := httpadapter.New(httpadapter.Config{URL: dest.EffectsURL, Timeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	in := fixture.Intent("effect:refund-7", `{"amount":1250,"currency":"EUR","payee":"acct:7"}`)

	r, _ := a.Execute(context.Background(), in)
	fmt.Println("attempt:", r.Outcome, r.Code)

	res, _ := effect.Reconcile(context.Background(), a, "effect:refund-7", r.ContentDigest,
		effect.Plan{Backoff: []time.Duration{0, 100 * time.Millisecond}})
	fmt.Println("reconciled:", res.Status)

	again, _ := a.Execute(context.Background(), in)
	fmt.Println("retry:", again.Outcome, "replayed:", again.Replayed)
	fmt.Println("mutations at the destination:", len(dest.Mutations()))
	// Output:
	// attempt: unknown TRANSPORT_AFTER_SEND
	// reconciled: confirmed_success
	// retry: succeeded replayed: true
	// mutations at the destination: 1
}
