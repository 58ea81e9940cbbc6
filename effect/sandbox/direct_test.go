package sandbox_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// The in-process adapter must classify exactly as the HTTP adapter does
// against the same sandbox behaviour.
func TestDirectAdapterMatchesHTTP(t *testing.T) {
	type step struct {
		key     string
		payload string
		fault   *sandbox.Fault
	}
	other := `{"amount":1}`
	steps := []step{
		{"effect:a", payload, nil},
		{"effect:a", payload, nil}, // replay
		{"effect:a", other, nil},   // conflict
		{"effect:b", payload, &sandbox.Fault{Key: "effect:b", Times: 1, Status: 503}}, // transient
		{"effect:b", payload, nil}, // retry applies
		{"effect:c", payload, &sandbox.Fault{Key: "effect:c", Times: 1, Status: 422}}, // permanent
		{"effect:d", payload, &sandbox.Fault{Key: "effect:d", Times: 1, Drop: true}},  // unknown
		{"effect:d", payload, nil}, // replay after drop
	}
	type seen struct {
		outcome  effect.Outcome
		code     string
		replayed bool
		lookup   effect.LookupStatus
	}
	run := func(ctx context.Context, a effect.Adapter, s *sandbox.Sandbox) []seen {
		var out []seen
		for _, st := range steps {
			if st.fault != nil {
				if err := s.Inject(*st.fault); err != nil {
					t.Fatal(err)
				}
			}
			r, err := a.Execute(ctx, fixture.Intent(st.key, st.payload))
			if err != nil {
				t.Fatal(err)
			}
			l, err := a.Lookup(context.Background(), st.key, r.ContentDigest)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, seen{r.Outcome, r.Code, r.Replayed, l.Status})
		}
		return out
	}
	overHTTP := start(t, sandbox.Options{})
	viaHTTP := run(context.Background(), adapterFor(t, overHTTP.EffectsURL), overHTTP.Sandbox)
	inProc, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A context that can never end is answered without a goroutine; one
	// that could end (but does not) through one. Both as over HTTP.
	viaDirect := run(context.Background(), inProc.Adapter(), inProc)
	inProc2, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	viaDirectCancellable := run(cctx, inProc2.Adapter(), inProc2)
	for i := range steps {
		h, d, c := viaHTTP[i], viaDirect[i], viaDirectCancellable[i]
		// Transport details differ in wording only; the classes and codes must agree.
		if h != d || h != c {
			t.Errorf("step %d (%s): HTTP saw %+v, in-process %+v and %+v", i, steps[i].key, h, d, c)
		}
	}
	if len(overHTTP.Mutations()) != 3 || len(inProc.Mutations()) != 3 {
		t.Errorf("mutations: %d over HTTP, %d in process", len(overHTTP.Mutations()), len(inProc.Mutations()))
	}
	if viaDirect[6].outcome != effect.Unknown || viaDirect[6].lookup != effect.ConfirmedSuccess || viaDirect[2].code != httpwire.CodeKeyConflict {
		t.Errorf("in-process classes: %+v", viaDirect)
	}
}

func TestContentDigestBeforeIO(t *testing.T) {
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := fixture.Intent("effect:cd", payload)
	a := s.Adapter()
	want, err := a.(effect.ContentDigester).ContentDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Mutations()) != 0 || s.Stats().Requests != 0 {
		t.Fatal("naming the content digest reached the destination")
	}
	r, _ := a.Execute(context.Background(), in)
	if r.ContentDigest != want || s.Mutations()[0].ContentDigest != want {
		t.Errorf("announced %s, sent %s, recorded %s", want, r.ContentDigest, s.Mutations()[0].ContentDigest)
	}
	h := start(t, sandbox.Options{})
	if got, err := adapterFor(t, h.EffectsURL).ContentDigest(in); err != nil || got != want {
		t.Errorf("the HTTP adapter names %s, the in-process one %s (%v)", got, want, err)
	}
	if _, err := a.(effect.ContentDigester).ContentDigest(fixture.Intent("effect:cd", `{"x":1.5}`)); err == nil {
		t.Error("a float payload has a content digest")
	}
}

func TestClosedStateAppliesNothing(t *testing.T) {
	s, err := sandbox.New(sandbox.Options{StatePath: t.TempDir() + "/state.json"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, _ := s.Adapter().Execute(context.Background(), fixture.Intent("effect:after-close", payload))
	if r.Outcome != effect.FailedTransient || len(s.Mutations()) != 0 {
		t.Errorf("after Close: %+v, %d mutations", r, len(s.Mutations()))
	}
}

func TestDirectAdapterTimeoutIsUnknown(t *testing.T) {
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Inject(sandbox.Fault{Key: "effect:slow", Times: 1, DelayMillis: 1000})
	a := s.Adapter()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r, _ := a.Execute(ctx, fixture.Intent("effect:slow", payload))
	if r.Outcome != effect.Unknown {
		t.Fatalf("%+v", r)
	}
	res, err := effect.Reconcile(context.Background(), a, "effect:slow", r.ContentDigest, effect.Plan{Backoff: []time.Duration{0, 500 * time.Millisecond, time.Second, time.Second, 2 * time.Second}})
	if err != nil || res.Status != effect.ConfirmedSuccess || res.Lookups[0].Status != effect.StillUnknown {
		t.Fatalf("%+v %v", res, err)
	}
	// A context that is already over hands nothing to the sandbox.
	done, stop := context.WithCancel(context.Background())
	stop()
	if r, _ := a.Execute(done, fixture.Intent("effect:never", payload)); r.Outcome != effect.FailedTransient || len(s.Mutations()) != 1 {
		t.Errorf("cancelled before the attempt: %+v", r)
	}
}

func BenchmarkDirectExecute(b *testing.B) {
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a := s.Adapter()
	ins := make([]effect.Intent, 4096)
	for i := range ins {
		ins[i] = fixture.Intent("effect:d"+strconv.Itoa(i), payload)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(ins) {
			b.StopTimer()
			s, _ = sandbox.New(sandbox.Options{})
			a, i = s.Adapter(), 0
			b.StartTimer()
		}
		if r, _ := a.Execute(context.Background(), ins[i]); r.Outcome != effect.Succeeded {
			b.Fatalf("%+v", r)
		}
		i++
	}
}

func TestLogsOneLinePerRequest(t *testing.T) {
	var buf bytes.Buffer
	s, err := sandbox.New(sandbox.Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Adapter()
	a.Execute(context.Background(), fixture.Intent("effect:l", payload))
	a.Execute(context.Background(), fixture.Intent("effect:l", payload))
	a.Execute(context.Background(), fixture.Intent("effect:l", `{"amount":2}`))
	s.Inject(sandbox.Fault{Key: "effect:m", Times: 1, Drop: true})
	a.Execute(context.Background(), fixture.Intent("effect:m", payload))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg=applied key=effect:l sequence=1 content_digest=sha256:`,
		`level=INFO msg=replayed key=effect:l sequence=1 content_digest=sha256:`,
		`level=INFO msg=refused key=effect:l code=IDEMPOTENCY_KEY_CONFLICT status=409`,
		`level=INFO msg="applied, answer dropped" key=effect:m`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s", buf.String())
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d: %q, want prefix %q", i, lines[i], want[i])
		}
	}
}
