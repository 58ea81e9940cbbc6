package postgres

import (
	"bytes"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// chainOf's sums, texts and last hash are the chain hashes store.ChainHash
// gives event by event from the head's text, whatever the head's hash
// (canonical or not) and the events' digests.
func TestChainOfIsChainHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prev := rapid.OneOf(
			rapid.Just(store.GenesisHash),
			rapid.Custom(func(t *rapid.T) string { return store.BodyDigest(rapid.SliceOf(rapid.Byte()).Draw(t, "body")) }),
			rapid.String(),
		).Draw(t, "prev")
		head := rapid.Int64Range(0, 1<<40).Draw(t, "head")
		n := rapid.IntRange(0, 20).Draw(t, "n")
		evs := make([]store.Event, n)
		for i := range evs {
			evs[i].Digest = rapid.OneOf(rapid.Just(store.BodyDigest([]byte(strconv.Itoa(i)))), rapid.String()).Draw(t, "digest")
		}
		c := chainOf(prev, head, evs)
		if c.len() != n {
			t.Fatalf("%d chain hashes for %d events", c.len(), n)
		}
		h := prev
		for i, ev := range evs {
			h = store.ChainHash(h, head+int64(i)+1, ev.Digest)
			if got := c.text(i); got != h {
				t.Fatalf("event %d: chain hash %s, want %s", i, got, h)
			}
			if !bytes.Equal(c.sum(i), hashSum(h)) {
				t.Fatalf("event %d: sum %x, want that of %s", i, c.sum(i), h)
			}
		}
		if n > 0 && c.last != h || n == 0 && c.last != "" {
			t.Fatalf("last %q, want %q", c.last, h)
		}
		// The events' chain column holds the sums, none as text.
		col := newHashColumns(n)
		for i := range n {
			col.addSum(c.sum(i))
		}
		for i := range n {
			if !bytes.Equal(col.sums[i], c.sum(i)) || col.texts()[i] != nil {
				t.Fatalf("column entry %d: %x, %v", i, col.sums[i], col.texts()[i])
			}
		}
	})
}
