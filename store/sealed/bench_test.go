package sealed

import (
	"bytes"
	"fmt"
	"testing"

	"flrh.dev/flrh/store"
)

// BenchmarkSealOpen measures sealing and opening one record body.
func BenchmarkSealOpen(b *testing.B) {
	k, err := New(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	ref := store.SealRef{RunID: "run-1", Kind: store.SealCheckpoint, Seq: 42}
	for _, size := range []int{1 << 10, 32 << 10} {
		body := bytes.Repeat([]byte("x"), size)
		sealed, _ := k.Seal(ref, body)
		b.Run(fmt.Sprintf("seal/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := k.Seal(ref, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("open/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := k.Open(ref, sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
