package cjson

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// prefixInputs draws preimages that share leading bytes with one another
// in every way a Prefix meets: the same tag then different bytes at every
// offset around the block boundaries, whole equal preimages, preimages
// shorter than a block, exactly whole blocks, and unrelated ones between
// them.
func prefixInputs(r *rand.Rand, n int) [][]byte {
	tags := make([][]byte, 3)
	for i := range tags {
		tags[i] = make([]byte, 64*prefixBlocks+100)
		for j := range tags[i] {
			tags[i][j] = byte('a' + r.IntN(26))
		}
	}
	out := make([][]byte, 0, n)
	for range n {
		tag := tags[r.IntN(len(tags))]
		shared := r.IntN(len(tag) + 1)
		switch r.IntN(4) {
		case 0: // around a block boundary
			shared = min(len(tag), 64*r.IntN(prefixBlocks+2)+r.IntN(3)-1)
			shared = max(shared, 0)
		case 1: // the whole tag, nothing after it
			out = append(out, append([]byte(nil), tag[:64*r.IntN(prefixBlocks+2)]...))
			continue
		}
		b := append([]byte(nil), tag[:shared]...)
		for range r.IntN(300) {
			b = append(b, byte(r.IntN(256)))
		}
		out = append(out, b)
	}
	return out
}

// TestPrefixIsSum256 holds a Prefix's sums to sha256.Sum256 of the same
// bytes, through Sum and SumWritten, and checks that it does resume.
func TestPrefixIsSum256(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var c Prefix
	resumed := 0
	for i, b := range prefixInputs(r, 20000) {
		want := sha256.Sum256(b)
		if st := c.last.Load(); st != nil && st.match(b) > 0 {
			resumed++
		}
		var got [sha256.Size]byte
		if i%2 == 0 {
			got = c.Sum(b)
		} else {
			got = c.SumWritten(func(buf []byte) []byte { return append(buf, b...) })
		}
		if got != want {
			t.Fatalf("input %d (%d bytes): Prefix sum %x, Sum256 %x", i, len(b), got, want)
		}
	}
	if resumed < 3000 {
		t.Fatalf("only %d of 20000 sums resumed", resumed)
	}
}

// TestPrefixDigestsAreCjsons holds DigestWritten and HexDigestWritten to
// the package functions.
func TestPrefixDigestsAreCjsons(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	var c Prefix
	for _, b := range prefixInputs(r, 2000) {
		w := func(buf []byte) []byte { return append(buf, b...) }
		if got, want := c.DigestWritten(w), DigestWritten(w); got != want {
			t.Fatalf("DigestWritten %s, want %s", got, want)
		}
		if got, want := c.HexDigestWritten(w), HexDigestWritten(w); got != want {
			t.Fatalf("HexDigestWritten %s, want %s", got, want)
		}
	}
}

// TestPrefixConcurrent shares one Prefix between goroutines hashing
// different families of preimages (run with -race).
func TestPrefixConcurrent(t *testing.T) {
	var c Prefix
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for _, b := range prefixInputs(r, 3000) {
				if got, want := c.Sum(b), sha256.Sum256(b); got != want {
					t.Errorf("goroutine %d: %x, want %x", g, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkPrefix(b *testing.B) {
	for _, size := range []int{200, 600, 3600} {
		msg := bytes.Repeat([]byte("x"), size)
		msg[64*3+5] = 'y' // three whole blocks shared
		b.Run("sum256/"+strconv.Itoa(size), func(b *testing.B) {
			for b.Loop() {
				msg[size-1]++
				sha256.Sum256(msg)
			}
		})
		b.Run("prefix/"+strconv.Itoa(size), func(b *testing.B) {
			var c Prefix
			c.Sum(msg)
			for b.Loop() {
				msg[size-1]++
				c.Sum(msg)
			}
		})
	}
}
