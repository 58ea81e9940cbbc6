package sandbox

import (
	"context"
	"errors"
	"net/http"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/httpwire"
)

// Adapter returns an effect.Adapter that reaches this sandbox in process,
// without HTTP: the same request bytes, validation, idempotency, fault
// rules and ledger as over the wire, and the same classification as the
// HTTP adapter (a dropped answer is unknown; a context that ends before the
// answer is unknown while the sandbox goes on and may still apply). It is
// meant for benchmarks and tests of the layers above the adapter, where a
// loopback round trip would only add noise.
func (s *Sandbox) Adapter() effect.Adapter { return direct{s} }

type direct struct{ s *Sandbox }

var _ effect.Preparer = direct{}

// ContentDigest returns the digest of the content Execute would hand over.
func (direct) ContentDigest(in effect.Intent) (string, error) {
	_, d, err := httpadapter.Prepare(in)
	return d, err
}

// Prepare returns the request Execute would hand over, for
// ExecutePrepared.
func (direct) Prepare(in effect.Intent) (effect.Prepared, error) {
	body, d, err := httpadapter.Prepare(in)
	return effect.Prepared{Body: body, ContentDigest: d}, err
}

var errDropped = errors.New("the destination closed the connection without answering")

func (d direct) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	body, digest, err := httpadapter.Prepare(in)
	if err != nil {
		return effect.Receipt{}, err
	}
	return d.send(ctx, in, body, digest)
}

// ExecutePrepared is Execute of the intent p was prepared for, handing
// over p's bytes as they are.
func (d direct) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	return d.send(ctx, in, p.Body, p.ContentDigest)
}

// send hands the request's prepared bytes to the sandbox.
func (d direct) send(ctx context.Context, in effect.Intent, body []byte, digest string) (effect.Receipt, error) {
	field, _ := httpwire.FormatContentDigest(digest)
	obs := httpadapter.Observation{Key: in.Effect.IdempotencyKey, ContentDigest: digest, Connected: true}
	if err := ctx.Err(); err != nil {
		// Nothing was handed over yet.
		obs.Connected, obs.TransportErr = false, err
		return httpadapter.Classify(obs), nil
	}
	answered := func(a answer) {
		if a.drop {
			obs.TransportErr = errDropped
		} else {
			obs.Status, obs.Body, obs.Replayed = a.status, a.body, a.replayed
			obs.RetryAfter = time.Duration(a.retryAfter) * time.Second
		}
	}
	if ctx.Done() == nil {
		// A context that can never end: nothing to wait beside the
		// answer, so no goroutine to wait on it.
		answered(d.s.mutate(in.Effect.IdempotencyKey, field, body))
		return httpadapter.Classify(obs), nil
	}
	done := make(chan answer, 1)
	key := in.Effect.IdempotencyKey // the goroutine takes the key, not the whole intent
	go func() { done <- d.s.mutate(key, field, body) }()
	select {
	case a := <-done:
		answered(a)
	case <-ctx.Done():
		obs.TransportErr = ctx.Err()
	}
	return httpadapter.Classify(obs), nil
}

func (d direct) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	if !httpwire.ValidKey(key) {
		return effect.LookupResult{}, errors.New("sandbox: lookup: not a valid idempotency key")
	}
	if err := ctx.Err(); err != nil {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "LOOKUP_TRANSPORT", Detail: err.Error()}, nil
	}
	body := d.s.Lookup(key, contentDigest).Encode()
	return httpadapter.JudgeLookup(key, contentDigest, http.StatusOK, body, nil), nil
}
