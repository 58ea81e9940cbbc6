package sealed

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

func genRef() *rapid.Generator[store.SealRef] {
	return rapid.Custom(func(t *rapid.T) store.SealRef {
		return store.SealRef{
			RunID: rapid.StringMatching(`[a-z0-9:-]{1,12}`).Draw(t, "run"),
			Kind:  rapid.SampledFrom([]string{store.SealCheckpoint, store.SealTrace + "/h.fhr", store.SealTrace + "/mrp.journey"}).Draw(t, "kind"),
			Seq:   rapid.Int64Range(1, 1<<40).Draw(t, "seq"),
		}
	})
}

func codeOf(err error) store.Code {
	var se *store.SealError
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// Sealing round-trips any body for any record; flipping any bit of the
// sealed bytes, or opening them as any other record, fails.
func TestSealOpenProperties(t *testing.T) {
	k, err := New(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		ref := genRef().Draw(t, "ref")
		body := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "body")
		sealed, err := k.Seal(ref, body)
		if err != nil {
			t.Fatal(err)
		}
		if !store.IsSealed(sealed) {
			t.Fatalf("sealed bytes lack the prefix")
		}
		got, err := k.Open(ref, sealed)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		i := rapid.IntRange(0, len(sealed)-1).Draw(t, "byte")
		bit := rapid.IntRange(0, 7).Draw(t, "bit")
		flipped := bytes.Clone(sealed)
		flipped[i] ^= 1 << bit
		if _, err := k.Open(ref, flipped); err == nil {
			t.Fatalf("a flip of bit %d of byte %d opened", bit, i)
		}
		other := genRef().Draw(t, "other")
		if other != ref {
			if _, err := k.Open(other, sealed); codeOf(err) != store.CodeCorrupt {
				t.Fatalf("sealed for %v, opened as %v: %v", ref, other, err)
			}
		}
	})
}

// Two seals of one body differ: the nonce is fresh every time.
func TestFreshNonces(t *testing.T) {
	k, _ := New(bytes.Repeat([]byte{1}, KeySize))
	ref := store.SealRef{RunID: "r", Kind: store.SealCheckpoint, Seq: 1}
	a, _ := k.Seal(ref, []byte("same"))
	b, _ := k.Seal(ref, []byte("same"))
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same body are equal")
	}
}

func TestKeysAndRotation(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	if KeyID(k1) == KeyID(k2) || !strings.HasPrefix(KeyID(k1), "k1-") || len(KeyID(k1)) != 19 {
		t.Fatalf("key ids %s %s", KeyID(k1), KeyID(k2))
	}
	old, _ := New(k1)
	ref := store.SealRef{RunID: "r", Kind: store.SealCheckpoint, Seq: 3}
	sealed, _ := old.Seal(ref, []byte(`{"a":1}`))
	rotated, _ := New(k2, k1)
	if rotated.Primary() != KeyID(k2) {
		t.Fatalf("primary %s", rotated.Primary())
	}
	if got, err := rotated.Open(ref, sealed); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("rotated keyring cannot open the old record: %v", err)
	}
	newOnly, _ := New(k2)
	if _, err := newOnly.Open(ref, sealed); codeOf(err) != store.CodeSealed {
		t.Fatalf("a keyring without the sealing key: %v, want %s", err, store.CodeSealed)
	}
	if _, err := old.Open(ref, []byte(`{"a":1}`)); codeOf(err) != store.CodeSealed {
		t.Fatalf("plaintext under a keyring: %v, want %s", err, store.CodeSealed)
	}
	for _, bad := range [][]byte{nil, bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{1}, 33)} {
		if _, err := New(bad); err == nil {
			t.Fatalf("New accepted a %d-byte key", len(bad))
		}
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{0xfb}, KeySize), bytes.Repeat([]byte{0x3e}, KeySize)
	text := "# current first\n" + base64.StdEncoding.EncodeToString(k1) + "\n\n" + base64.RawURLEncoding.EncodeToString(k2) + "\n"
	keys, err := ParseKeys(text)
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], k1) || !bytes.Equal(keys[1], k2) {
		t.Fatalf("ParseKeys = %x, %v", keys, err)
	}
	if keys, err := ParseKeys(base64.StdEncoding.EncodeToString(k2) + "," + base64.StdEncoding.EncodeToString(k1)); err != nil || !bytes.Equal(keys[0], k2) {
		t.Fatalf("comma-separated: %v", err)
	}
	secretish := "c2VjcmV0LXRoYXQtaXMtdG9vLXNob3J0"
	for _, bad := range []string{"", "# only a comment\n", "not base64 at all!", secretish} {
		_, err := ParseKeys(bad)
		if err == nil {
			t.Fatalf("ParseKeys(%q) accepted", bad)
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Fatalf("the error quotes the key text: %v", err)
		}
	}
}
