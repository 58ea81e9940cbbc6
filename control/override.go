package control

import (
	"math"

	"flrh.dev/flrh/cjson"
)

// OverrideFormat is the kind of the preimage that digests a contract with
// a workflow's overrides applied.
const OverrideFormat = "flrh-loop-contract-override/1"

// Override returns a copy of c with a workflow's loop section applied: an
// object whose optional "budgets" member may set any of the budget limits
// (steps, tool_calls, wall_seconds, suspended_seconds, tokens, cost_micros,
// recursion_depth, parallelism), retries_per_transition and
// soft_checkpoint_percent, and whose optional "retry" member may set
// base_millis and cap_millis. Every value obeys the same bounds as in a
// contract file; anything else is refused with a typed error naming the
// member, and c is never modified. Omitted members keep c's values. The
// result's Digest binds c's digest and the section's canonical bytes, so two
// workflows with different budgets never share a contract digest.
func (c *Contract) Override(section []byte) (*Contract, error) {
	v, err := decodeStrict(section)
	if err != nil {
		return nil, err
	}
	return c.OverrideValue(v)
}

// OverrideValue is Override over an already decoded flrh-cjson value.
func (c *Contract) OverrideValue(v any) (*Contract, error) {
	root, err := asObj(v, "")
	if err != nil {
		return nil, err
	}
	out := *c
	if b, err := root.object("budgets", false); err != nil {
		return nil, err
	} else if b != nil {
		lim := &out.Budgets.Limits
		for _, f := range []struct {
			key string
			dst *int64
			max int64
		}{
			{"steps", &lim.Steps, maxLimit}, {"tool_calls", &lim.ToolCalls, maxLimit},
			{"wall_seconds", &lim.WallSeconds, maxLimit}, {"suspended_seconds", &lim.SuspendedSeconds, maxLimit},
			{"tokens", &lim.Tokens, maxLimit}, {"cost_micros", &lim.CostMicros, maxLimit},
			{"recursion_depth", &lim.RecursionDepth, maxLimit}, {"parallelism", &lim.Parallelism, maxLimit},
			{"retries_per_transition", &out.Budgets.RetriesPerTransition, MaxRetriesCeiling},
			{"soft_checkpoint_percent", &out.Budgets.SoftPercent, 99},
		} {
			if !b.has(f.key) {
				b.seen[f.key] = true
				continue
			}
			if *f.dst, err = positive(b, f.key, f.max); err != nil {
				return nil, err
			}
		}
		if err := b.done(); err != nil {
			return nil, err
		}
		out.Retry.MaxRetries = out.Budgets.RetriesPerTransition
	}
	if r, err := root.object("retry", false); err != nil {
		return nil, err
	} else if r != nil {
		for _, f := range []struct {
			key string
			dst *int64
		}{{"base_millis", &out.Retry.BaseMillis}, {"cap_millis", &out.Retry.CapMillis}} {
			if !r.has(f.key) {
				r.seen[f.key] = true
				continue
			}
			if *f.dst, err = positive(r, f.key, MaxBackoffMillis); err != nil {
				return nil, err
			}
		}
		if err := r.done(); err != nil {
			return nil, err
		}
		if out.Retry.CapMillis < out.Retry.BaseMillis {
			return nil, errorf(CodeLimit, "/retry/cap_millis", "cap %d is below base %d", out.Retry.CapMillis, out.Retry.BaseMillis)
		}
	}
	if err := root.done(); err != nil {
		return nil, err
	}
	canon, err := cjson.Encode(v)
	if err != nil {
		return nil, &Error{Code: CodeSyntax, Detail: err.Error(), Err: err}
	}
	d, err := cjson.DigestOf(map[string]any{"kind": OverrideFormat, "contract": c.Digest, "override": cjson.Digest(canon)})
	if err != nil {
		return nil, &Error{Code: CodeSyntax, Detail: err.Error(), Err: err}
	}
	out.Digest = d
	return &out, nil
}

// MillisToSeconds converts elapsed milliseconds to the whole seconds a time
// budget counts, rounding up: a budget of L seconds is exceeded exactly when
// more than L*1000 milliseconds have elapsed. Negative input counts as 0.
func MillisToSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	if ms > math.MaxInt64-999 {
		return math.MaxInt64/1000 + 1 // the remainder is non-zero
	}
	return (ms + 999) / 1000
}
