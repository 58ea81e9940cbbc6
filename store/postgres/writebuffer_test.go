package postgres

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// The write buffer hands the encoder its own memory holding the messages
// already encoded, whether they are in another buffer or in the write
// buffer itself; one too small to hold them leaves the encoder's.
func TestWriteBufferKeepsWhatWasEncoded(t *testing.T) {
	w := &writeBuffer{buf: make([]byte, 0, 64)}
	for _, dst := range [][]byte{nil, {}, []byte("Bxyz"), bytes.Repeat([]byte{7}, 64)} {
		got, err := w.Encode(dst)
		if err != nil || !bytes.Equal(got, dst) || cap(got) != 64 || &got[:1][0] != &w.buf[:1][0] {
			t.Fatalf("Encode(%q) = %q (cap %d), %v: want its bytes in the write buffer", dst, got, cap(got), err)
		}
	}
	own := append(w.buf[:0], "Pabc"...)
	if got, _ := w.Encode(own); string(got) != "Pabc" || &got[0] != &w.buf[:1][0] {
		t.Fatalf("Encode of the write buffer itself = %q, want it as it was", got)
	}
	big := bytes.Repeat([]byte{1}, 65)
	if got, _ := w.Encode(big); &got[0] != &big[0] {
		t.Fatal("a write buffer too small for what was encoded replaced it")
	}
	if w.Decode(nil) == nil {
		t.Fatal("a write buffer was decoded")
	}
}

// A tick committed in one round trip encodes its messages into the write
// buffer its connection keeps: with a 48 KB checkpoint, a commit
// allocates well under the checkpoint's size, where the encoder regrew
// its own buffer from 1 KB to the round trip's size at each commit (about
// twice the checkpoint's size allocated a commit). What the server stored
// is what was committed.
func TestDirectCommitKeepsItsWriteBuffer(t *testing.T) {
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 48<<10)
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	cp := []byte(fmt.Sprintf(`{"b":%q}`, fmt.Sprintf("%x", body)))[:len(body)]
	cp[len(cp)-2], cp[len(cp)-1] = '"', '}'
	head := int64(0)
	commit := func() {
		tick := store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"i":%d}`, head))},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
		must(t, s.Commit(ctx, l, tick))
		head++
	}
	for range 3 {
		commit()
	}
	const n = 20
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		commit()
	}
	runtime.ReadMemStats(&m1)
	per := (m1.TotalAlloc - m0.TotalAlloc) / n
	if per > uint64(len(cp))/2 {
		t.Fatalf("a commit of a %d-byte checkpoint allocated %d bytes, want at most %d", len(cp), per, len(cp)/2)
	}
	var stored []byte
	must(t, s.pool.QueryRow(ctx, `SELECT body FROM checkpoints WHERE run_id = 'r' ORDER BY n DESC LIMIT 1`).Scan(&stored))
	if !bytes.Equal(stored, cp) {
		t.Fatal("the stored checkpoint is not the one committed")
	}
}
