package sandbox_test

import (
	"context"
	"fmt"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// A sandbox served on a loopback port, told to fail the next request with
// a 503: the adapter sees a transient failure, the retry with the same key
// applies, and the ledger holds exactly one mutation.
func ExampleStart() {
	dest, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		panic(err)
	}
	defer dest.Close()
	dest.Inject(sandbox.Fault{Times: 1, Status: 503})

	a, err := httpadapter.New(httpadapter.Config{URL: dest.EffectsURL})
	if err != nil {
		panic(err)
	}
	in := fixture.Intent("effect:example", `{"amount":1250}`)
	for attempt := 1; attempt <= 2; attempt++ {
		r, _ := a.Execute(context.Background(), in)
		fmt.Println("attempt", attempt, r.Outcome, r.Code)
		if r.Outcome != effect.FailedTransient {
			break
		}
	}
	for _, m := range dest.Mutations() {
		fmt.Println("mutation", m.Sequence, m.IdempotencyKey)
	}
	// Output:
	// attempt 1 failed_transient INJECTED_FAILURE
	// attempt 2 succeeded HTTP_201
	// mutation 1 effect:example
}
