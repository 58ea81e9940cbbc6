package protocol

import (
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/cputime"
)

func BenchmarkValidate(b *testing.B) {
	for _, id := range []string{"effect-intent", "action-receipt", "fact-delta"} {
		text := mustRead("valid", id)
		kind, _ := KindOf(text)
		b.Run(id, func(b *testing.B) { benchValidate(b, kind, text) })
	}
}

// BenchmarkValidateRecorded validates the intent and the receipt of a
// recorded run (the large approved refund), in their canonical bytes, as
// verify reads them from a store.
func BenchmarkValidateRecorded(b *testing.B) {
	g := recordedGolden(b)
	for _, c := range []struct{ name, kind, ptr string }{
		{"intent", KindEffectIntent, "intents"},
		{"receipt", KindActionReceipt, "receipts"},
	} {
		body := g[c.ptr].([]any)[0].(map[string]any)["body"]
		text, err := cjson.Encode(body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) { benchValidate(b, c.kind, text) })
	}
}

func recordedGolden(tb testing.TB) map[string]any {
	text, err := readFile("../testdata/golden/refund-large-approved.json")
	if err != nil {
		tb.Fatal(err)
	}
	v, err := cjson.Decode(text)
	if err != nil {
		tb.Fatal(err)
	}
	return v.(map[string]any)
}

// benchValidate reports CPU time per validation beside wall time, because
// the machine the benchmarks run on is shared.
func benchValidate(b *testing.B, kind string, text []byte) {
	b.ReportAllocs()
	cpu := cputime.Used()
	for b.Loop() {
		if err := Validate(kind, text); err != nil {
			b.Fatal(err)
		}
	}
	if used := cputime.Used() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkDecodeEffectIntent(b *testing.B) {
	text := mustRead("valid", "effect-intent")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode[EffectIntent](text); err != nil {
			b.Fatal(err)
		}
	}
}
