package sealed

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"flrh.dev/flrh/store"
)

func keyOf(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

// A Ring seals under its keyring's primary key and opens what any of
// its keys sealed; swapped for a keyring with a new key first, it seals
// under the new one and still opens the old records; a keyring without
// the key it seals under now is refused and changes nothing.
func TestRingSwap(t *testing.T) {
	k1, _ := New(keyOf(1))
	r := NewRing(k1)
	ref := store.SealRef{RunID: "r", Kind: store.SealCheckpoint, Seq: 1}
	old, err := r.Seal(ref, []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	rotated, _ := New(keyOf(2), keyOf(1))
	if err := r.Swap(rotated); err != nil {
		t.Fatal(err)
	}
	if r.Primary() != KeyID(keyOf(2)) || r.Keyring() != rotated {
		t.Fatalf("primary %s after the swap", r.Primary())
	}
	sealedNew, _ := r.Seal(ref, []byte("after"))
	if id, _ := store.SealedKeyID(sealedNew); id != KeyID(keyOf(2)) {
		t.Fatalf("sealed under %s", id)
	}
	if got, err := r.Open(ref, old); err != nil || string(got) != "before" {
		t.Fatalf("the old record: %q, %v", got, err)
	}
	// The current key dropped: refused, nothing changed.
	other, _ := New(keyOf(3), keyOf(1))
	if err := r.Swap(other); err == nil || !strings.Contains(err.Error(), KeyID(keyOf(2))) {
		t.Fatalf("a keyring without the current key: %v", err)
	}
	if r.Primary() != KeyID(keyOf(2)) {
		t.Fatalf("primary %s after a refused swap", r.Primary())
	}
	// After a reseal, the old key may go: the current one is first.
	alone, _ := New(keyOf(2))
	if err := r.Swap(alone); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ref, old); codeOf(err) != store.CodeSealed {
		t.Fatalf("a record under a dropped key: %v", err)
	}
	if got, err := r.Open(ref, sealedNew); err != nil || string(got) != "after" {
		t.Fatalf("a record under the current key: %q, %v", got, err)
	}
}

// Seals and opens racing swaps each use one whole keyring: every record
// sealed opens with the keyring that holds both keys.
func TestRingSwapsWhileUsed(t *testing.T) {
	a, _ := New(keyOf(1), keyOf(2))
	b, _ := New(keyOf(2), keyOf(1))
	r := NewRing(a)
	both, _ := New(keyOf(1), keyOf(2))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			next := []*Keyring{a, b}[i%2]
			_ = r.Swap(next) // both hold both keys: never refused
		}
	})
	ref := store.SealRef{RunID: "r", Kind: "trace/x", Seq: 7}
	for i := range 2000 {
		s, err := r.Seal(ref, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := both.Open(ref, s); err != nil || got[0] != byte(i) {
			t.Fatalf("record %d: %v", i, err)
		}
		if _, err := r.Open(ref, s); err != nil {
			t.Fatalf("record %d through the ring: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}
