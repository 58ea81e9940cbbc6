package protocol

import "testing"

func BenchmarkValidate(b *testing.B) {
	for _, id := range []string{"effect-intent", "action-receipt", "fact-delta"} {
		text := mustRead("valid", id)
		kind, _ := KindOf(text)
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(kind, text); err != nil {
					b.Fatal(err)
				}
			}
		})
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
