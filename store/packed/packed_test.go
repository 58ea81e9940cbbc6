package packed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// body is a checkpoint-like body with n digests.
func body(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"flrh.runner.checkpoint","open":[`)
	for i := range n {
		s := sha256.Sum256([]byte(fmt.Sprint(i)))
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"digest":"sha256:%x","id":"ticket:%x","n":%d}`, s, s, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func TestRoundTrip(t *testing.T) {
	var p Packer
	for _, n := range []int{0, 1, 2, 10, 100} {
		b := body(n)
		st := p.Pack(b)
		if n >= 2 && !Is(st) {
			t.Fatalf("%d digests: %d bytes not packed", n, len(b))
		}
		if !Is(st) {
			if !bytes.Equal(st, b) {
				t.Fatalf("%d digests: left as it is, but changed", n)
			}
			continue
		}
		if st[len(Prefix)]&FlagSums == 0 {
			t.Fatalf("%d digests: packed without FlagSums", n)
		}
		got, err := Unpack(nil, st)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d digests: %v, round trip differs", n, err)
		}
		if n == 100 && len(st)*2 > len(b) {
			t.Fatalf("100 digests: %d of %d bytes", len(st), len(b))
		}
	}
}

func TestBodiesLeftAsTheyAre(t *testing.T) {
	var p Packer
	for _, b := range [][]byte{
		nil, []byte("{}"), []byte(`{"a":1}`),
		append([]byte(Prefix), body(5)...), // starts with NUL: never packed
		func() []byte { // incompressible
			var b []byte
			for i := range 10 {
				s := sha256.Sum256([]byte{byte(i)})
				b = append(b, s[:]...)
			}
			return b
		}(),
	} {
		if st := p.Pack(b); !bytes.Equal(st, b) || (len(b) > 0 && &st[0] != &b[0]) {
			t.Fatalf("%q packed", b)
		}
	}
	// A body holding 0x01 is packed without FlagSums.
	b := append(body(20), "\x01"...)
	st := p.Pack(b)
	if !Is(st) || st[len(Prefix)] != 0 {
		t.Fatalf("flags %#x", st[len(Prefix)])
	}
	if got, err := Unpack(nil, st); err != nil || !bytes.Equal(got, b) {
		t.Fatal(err)
	}
}

// TestRoundTripAny: whatever is packed unpacks to what it was.
// packedOrSame packs b with a new Packer: ok when it was packed, and a
// failure of t when it was left as it is but changed.
func packedOrSame(t interface{ Fatal(...any) }, b []byte) (st []byte, ok bool) {
	var p Packer
	st = p.Pack(b)
	if !Is(st) {
		if !bytes.Equal(st, b) {
			t.Fatal("left as it is, but changed")
		}
		return st, false
	}
	return st, true
}

func TestRoundTripAny(t *testing.T) {
	alphabet := []byte(":0123456789abcdefx\x01\"{}")
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.OneOf(
			rapid.Map(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 80), func(b []byte) string { return string(b) }),
			rapid.Map(rapid.SliceOfN(rapid.Byte(), 32, 32), func(b []byte) string { return ":" + hex.EncodeToString(b) }),
			rapid.Just(`"digest":"sha256:`),
		)).Draw(t, "parts")
		b := []byte(strings.Join(parts, ""))
		st, ok := packedOrSame(t, b)
		if !ok {
			return
		}
		got, err := Unpack([]byte("junk"), st)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%v: %q != %q", err, got, b)
		}
	})
}

func TestCorrupt(t *testing.T) {
	st := Pack(body(30))
	cases := map[string][]byte{
		"no prefix":     st[1:],
		"prefix only":   []byte(Prefix),
		"unknown flags": append(append([]byte(Prefix), 0x02), st[len(Prefix)+1:]...),
		"cut short":     st[:len(st)-5],
		"huge claim":    append([]byte(Prefix), 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"no flag sums":  append(append([]byte(Prefix), 0), st[len(Prefix)+1:]...),
	}
	for i := len(Prefix) + 1; i < len(st); i += 7 {
		b := bytes.Clone(st)
		b[i] ^= 0x5a
		cases[fmt.Sprint("byte ", i)] = b
	}
	for name, b := range cases {
		got, err := Unpack(nil, b)
		if err == nil {
			if name == "no flag sums" || strings.HasPrefix(name, "byte ") {
				// A damaged literal decodes to other bytes: the reader's
				// digest check finds it.
				if bytes.Equal(got, body(30)) {
					t.Fatalf("%s: unpacks to the body", name)
				}
				continue
			}
			t.Fatalf("%s: no error", name)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v is not ErrCorrupt", name, err)
		}
	}
}

func FuzzUnpack(f *testing.F) {
	f.Add(Pack(body(3)))
	f.Add(Pack(body(30)))
	f.Add(Pack(append(body(10), 1)))
	f.Add([]byte(Prefix + "\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Unpack(nil, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v is not ErrCorrupt", err)
			}
			return
		}
		if len(got) > MaxRatio*len(b) {
			t.Fatalf("%d bytes from %d", len(got), len(b))
		}
		// What unpacks packs again to something that unpacks the same.
		if again := Pack(got); Is(again) {
			if back, err := Unpack(nil, again); err != nil || !bytes.Equal(back, got) {
				t.Fatalf("repacked: %v", err)
			}
		}
	})
}

func BenchmarkPack(b *testing.B) {
	src := body(36)
	var p Packer
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		p.Pack(src)
	}
}

func BenchmarkUnpack(b *testing.B) {
	st := Pack(body(36))
	var dst []byte
	b.SetBytes(int64(len(st)))
	for b.Loop() {
		dst, _ = Unpack(dst, st)
	}
}

// A Packer keeps its buffers: packing allocates nothing once they have
// grown, whether a body is packed or left as it is.
func TestPackKeepsItsBuffers(t *testing.T) {
	var p Packer
	plain := append([]byte(`{"s":"`), bytes.Repeat([]byte("s"), 8<<10)...) // packs past MaxRatio: left as it is
	b := body(40)
	p.Pack(plain)
	p.Pack(b)
	if n := testing.AllocsPerRun(20, func() { p.Pack(b); p.Pack(plain) }); n != 0 {
		t.Fatalf("%v allocations a pair", n)
	}
	if st := p.Pack(plain); !bytes.Equal(st, plain) {
		t.Fatal("a body packing past MaxRatio was packed")
	}
}

// FuzzPack: whatever is packed unpacks to itself.
func FuzzPack(f *testing.F) {
	f.Add(body(3))
	f.Add([]byte(`{"a":"sha256:` + strings.Repeat("0", 64) + `","b":1234567890123}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := packedOrSame(t, b)
		if !ok {
			return
		}
		if got, err := Unpack(nil, st); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%v: round trip differs", err)
		}
	})
}
