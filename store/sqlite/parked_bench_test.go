package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// BenchmarkUnpark measures what a delivery taken costs the parking when
// it was never parked (nearly every delivery): read-first is
// UnparkDelivery, which reads before it writes; delete-only is the
// DELETE it would otherwise commit, synced, every time.
func BenchmarkUnpark(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		if err := s.ParkDelivery(ctx, store.ParkedDelivery{Key: fmt.Sprintf("shop:p-%d", i), Hook: "shop", Body: []byte(`{"amount":900}`), Status: 422}, 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read-first", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.UnparkDelivery(ctx, fmt.Sprintf("shop:m-%d", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("delete-only", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			key := fmt.Sprintf("shop:m-%d", i)
			if err := s.write(ctx, "unpark delivery", "", func(ctx context.Context, tx *wtx, _ time.Time) error {
				_, err := s.exec(ctx, tx, `DELETE FROM parked_deliveries WHERE key = ?`, key)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParkDelivery measures parking a delivery refused: one synced
// write, the hook's oldest beyond keep dropped in it.
func BenchmarkParkDelivery(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := []byte(`{"order":"o7","refund":"r-7","customer":"fay"}`)
	for i := 0; b.Loop(); i++ {
		if err := s.ParkDelivery(ctx, store.ParkedDelivery{Key: fmt.Sprintf("shop:m-%d", i), Hook: "shop", Body: body, Status: 422, Reason: "the input: nothing at {/amount}"}, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
