package httpadapter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// benchExecute measures one effect attempt end to end over loopback: build
// the request, POST it, the sandbox validates and applies it (and, with a
// state file, rewrites its ledger durably), the adapter validates the answer.
func benchExecute(b *testing.B, opts sandbox.Options) {
	s, err := sandbox.Start(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a, err := httpadapter.New(httpadapter.Config{URL: s.EffectsURL, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ins := make([]effect.Intent, 0, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if len(ins) == 0 || i%1024 == 0 {
			ins = ins[:0]
			for j := range 1024 {
				ins = append(ins, fixture.Intent(fmt.Sprintf("effect:b%d", i+j), payload))
			}
		}
		r, err := a.Execute(context.Background(), ins[i%1024])
		if err != nil || r.Outcome != effect.Succeeded {
			b.Fatalf("%+v %v", r, err)
		}
		i++
	}
}

func BenchmarkExecuteInMemory(b *testing.B) { benchExecute(b, sandbox.Options{}) }

// With a state file every mutation rewrites the whole ledger and fsyncs it,
// so the cost grows with the ledger; the sandbox is a test destination, not
// a store.
func BenchmarkExecuteDurableLedger(b *testing.B) {
	benchExecute(b, sandbox.Options{StatePath: filepath.Join(b.TempDir(), "ledger.json"), MaxMutations: 1 << 20})
}

func BenchmarkLookup(b *testing.B) {
	s, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a, _ := httpadapter.New(httpadapter.Config{URL: s.EffectsURL})
	in := fixture.Intent("effect:look", payload)
	r, _ := a.Execute(context.Background(), in)
	b.ReportAllocs()
	for b.Loop() {
		l, err := a.Lookup(context.Background(), "effect:look", r.ContentDigest)
		if err != nil || l.Status != effect.ConfirmedSuccess {
			b.Fatalf("%+v %v", l, err)
		}
	}
}
