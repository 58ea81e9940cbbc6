package sandbox_test

import (
	"context"
	"reflect"
	"testing"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// ExecutePrepared of what Prepare returned does what Execute does, for
// both built-in adapters: the same receipts, the same requests applied
// (the sandbox's ledger and counters), through applies, replays,
// conflicts, injected failures and a dropped answer; and Prepare names
// the digest ContentDigest names, reaching nothing.
func TestExecutePreparedIsExecute(t *testing.T) {
	type step struct {
		key, payload string
		fault        *sandbox.Fault
	}
	steps := []step{
		{"effect:a", payload, nil},
		{"effect:a", payload, nil},
		{"effect:a", `{"amount":1}`, nil},
		{"effect:b", payload, &sandbox.Fault{Key: "effect:b", Times: 1, Status: 503}},
		{"effect:b", payload, nil},
		{"effect:c", payload, &sandbox.Fault{Key: "effect:c", Times: 1, Status: 422}},
		{"effect:d", payload, &sandbox.Fault{Key: "effect:d", Times: 1, Drop: true}},
		{"effect:d", payload, nil},
	}
	run := func(a effect.Adapter, s *sandbox.Sandbox, prepared bool) []effect.Receipt {
		var out []effect.Receipt
		for _, st := range steps {
			if st.fault != nil {
				if err := s.Inject(*st.fault); err != nil {
					t.Fatal(err)
				}
			}
			in := fixture.Intent(st.key, st.payload)
			var r effect.Receipt
			var err error
			if prepared {
				pr := a.(effect.Preparer)
				before := s.Stats().Requests
				p, perr := pr.Prepare(in)
				if perr != nil {
					t.Fatal(perr)
				}
				if d, _ := pr.ContentDigest(in); d != p.ContentDigest || s.Stats().Requests != before {
					t.Fatalf("Prepare named %s, ContentDigest %s, or reached the destination", p.ContentDigest, d)
				}
				r, err = pr.ExecutePrepared(context.Background(), in, p)
			} else {
				r, err = a.Execute(context.Background(), in)
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	newSandbox := func() *sandbox.Sandbox {
		s, err := sandbox.New(sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	direct, directPrepared := newSandbox(), newSandbox()
	want, got := run(direct.Adapter(), direct, false), run(directPrepared.Adapter(), directPrepared, true)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("in process: ExecutePrepared\n%+v\nExecute\n%+v", got, want)
	}
	if !reflect.DeepEqual(directPrepared.Mutations(), direct.Mutations()) || directPrepared.Stats() != direct.Stats() {
		t.Errorf("in process: ExecutePrepared applied %+v (%+v), Execute %+v (%+v)", directPrepared.Mutations(), directPrepared.Stats(), direct.Mutations(), direct.Stats())
	}
	overHTTP, overHTTPPrepared := start(t, sandbox.Options{}), start(t, sandbox.Options{})
	want = run(adapterFor(t, overHTTP.EffectsURL), overHTTP.Sandbox, false)
	got = run(adapterFor(t, overHTTPPrepared.EffectsURL), overHTTPPrepared.Sandbox, true)
	for i := range steps {
		// A dropped answer's transport error names the connection.
		w, g := want[i], got[i]
		w.Detail, g.Detail = "", ""
		if !reflect.DeepEqual(g, w) {
			t.Errorf("over HTTP, step %d: ExecutePrepared %+v, Execute %+v", i, got[i], want[i])
		}
	}
	if !reflect.DeepEqual(overHTTPPrepared.Mutations(), overHTTP.Mutations()) {
		t.Errorf("over HTTP: ExecutePrepared applied %+v, Execute %+v", overHTTPPrepared.Mutations(), overHTTP.Mutations())
	}
}
