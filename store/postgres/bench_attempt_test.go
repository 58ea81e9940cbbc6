package postgres

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkBeginAttempt begins the first attempt of one committed intent
// per operation, one writer on one connection (the server's fsync settings
// apply). The intents are committed beforehand, outside the timing.
func BenchmarkBeginAttempt(b *testing.B) { benchBeginAttempt(b, "") }

// BenchmarkBeginAttemptAsync is BenchmarkBeginAttempt with the session's
// synchronous_commit off: what remains is round trips and CPU.
func BenchmarkBeginAttemptAsync(b *testing.B) { benchBeginAttempt(b, "synchronous_commit=off") }

func benchBeginAttempt(b *testing.B, param string) {
	s, l, app := benchRun(b, param)
	// One intent per operation and one to prepare the statements with,
	// committed 100 to a tick.
	n := b.N + 1
	var head int64
	for i := 0; i < n; i += 100 {
		var ins []store.Intent
		for j := i; j < n && j < i+100; j++ {
			body := []byte(fmt.Sprintf(`{"pay":%d}`, j))
			ins = append(ins, store.Intent{ID: fmt.Sprintf("i%d", j), EffectType: "pay", IdempotencyKey: fmt.Sprintf("k%d", j),
				ContentDigest: store.BodyDigest(body), Body: body, Digest: store.BodyDigest(body)})
		}
		must(b, s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"i":%d}`, i))}, Intents: ins}))
		head++
	}
	if _, err := s.BeginAttempt(ctx, l, fmt.Sprintf("i%d", b.N)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	srv0 := serverCPU(b, s, app)
	for i := 0; i < b.N; i++ {
		at, err := s.BeginAttempt(ctx, l, fmt.Sprintf("i%d", i))
		if err != nil || at.N != 1 {
			b.Fatalf("attempt %+v: %v", at, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(serverCPU(b, s, app)-srv0)/float64(b.N), "server-cpu-ns/op")
}
