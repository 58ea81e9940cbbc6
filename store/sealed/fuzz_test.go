package sealed

import (
	"bytes"
	"errors"
	"testing"

	"flrh.dev/flrh/store"
)

// FuzzOpen reads arbitrary stored bytes as a sealed record, as a store
// does for every checkpoint and trace record it reads back: Open never
// panics, and refuses with a *store.SealError whose code is CodeSealed or
// CodeCorrupt. A record sealed under the same ref opens to its plain
// text, and does not open under another position.
func FuzzOpen(f *testing.F) {
	k := testKeyring(f)
	ref := store.SealRef{RunID: "run-1", Kind: store.SealCheckpoint, Seq: 1}
	sealed, err := k.Seal(ref, []byte(`{"a":1}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, "run-1", store.SealCheckpoint, int64(1), []byte(`{"a":1}`))
	f.Add(sealed[:len(sealed)-1], "run-1", store.SealCheckpoint, int64(1), []byte{})
	f.Add([]byte(store.SealedPrefix), "r", store.SealTrace+"/h.fhr", int64(2), []byte("x"))
	f.Add([]byte(store.SealedPrefix+"\xff"), "r", "", int64(0), []byte(nil))
	f.Add([]byte(`{"in":"clear"}`), "r", store.SealCheckpoint, int64(-1), []byte("y"))
	f.Fuzz(func(t *testing.T, stored []byte, run, kind string, seq int64, plain []byte) {
		ref := store.SealRef{RunID: run, Kind: kind, Seq: seq}
		typed := func(what string, err error) {
			t.Helper()
			var se *store.SealError
			if !errors.As(err, &se) || se.Code != store.CodeSealed && se.Code != store.CodeCorrupt {
				t.Fatalf("%s: error %T %v, want a *store.SealError of code sealed or corrupt", what, err, err)
			}
		}
		if _, err := k.Open(ref, stored); err != nil {
			typed("open the stored bytes", err)
		}
		body, err := k.Seal(ref, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Open(ref, body)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %q, %v; sealed %q", got, err, plain)
		}
		moved := ref
		moved.Seq++
		if _, err := k.Open(moved, body); err == nil {
			t.Fatal("a record opened at another position")
		} else {
			typed("open at another position", err)
		}
		// Every truncation of a sealed body is refused, typed.
		for _, n := range []int{0, len(store.SealedPrefix), len(store.SealedPrefix) + 1, len(body) / 2, len(body) - 1} {
			if n < 0 || n >= len(body) {
				continue
			}
			if _, err := k.Open(ref, body[:n]); err == nil {
				t.Fatalf("a body truncated to %d bytes opened", n)
			} else {
				typed("open a truncated body", err)
			}
		}
		// The stored bytes put after a real header are refused, typed.
		header := body[:len(store.SealedPrefix)+1+int(body[len(store.SealedPrefix)])]
		if _, err := k.Open(ref, append(bytes.Clone(header), stored...)); err != nil {
			typed("open the stored bytes after a real header", err)
		}
	})
}

// FuzzParseKeys reads arbitrary key text: no panic, and a key ring from
// any text it accepts.
func FuzzParseKeys(f *testing.F) {
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	f.Add("# comment\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,_____________________________________________w")
	f.Add("not base64")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		keys, err := ParseKeys(text)
		if err != nil {
			return
		}
		for i, key := range keys {
			if len(key) != KeySize {
				t.Fatalf("key %d is %d bytes", i+1, len(key))
			}
		}
		if _, err := Parse(text); err != nil {
			t.Fatalf("ParseKeys accepts, Parse refuses: %v", err)
		}
	})
}

func testKeyring(tb testing.TB) *Keyring {
	tb.Helper()
	k, err := New(bytes.Repeat([]byte{7}, KeySize), bytes.Repeat([]byte{9}, KeySize))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
