package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A drawn SQL literal of any of SQLite's storage classes, near the values
// the record's columns hold.
func drawLiteral(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 4).Draw(t, label+" class") {
	case 0:
		return "NULL"
	case 1:
		return strconv.FormatInt(rapid.SampledFrom([]int64{-1, 0, 1, 2, 3, 4, 7, 255, 256, 1 << 40, -1 << 62}).Draw(t, label+" int"), 10)
	case 2:
		return rapid.SampledFrom([]string{"0.0", "1.5", "-2.0", "1e300"}).Draw(t, label+" float")
	case 3:
		s := rapid.SampledFrom([]string{"", "control", "accepted", "control.rejected", "1", "x", "é",
			"sha256:" + strings.Repeat("ab", 32), "sha256:zz"}).Draw(t, label+" text")
		return "'" + s + "'"
	default:
		n := rapid.SampledFrom([]int{0, 1, 31, 32, 33}).Draw(t, label+" blob length")
		return "x'" + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, label+" blob")) + "'"
	}
}

// readAll reads every cell of c's row by each of the cells' readers, and
// the hash columns from every place, with whether each reader found the
// value bad.
func readAll(c *cells) []any {
	var out []any
	var h [3]any
	for i := range recordWidth {
		c.bad = false
		s := c.str(i)
		out = append(out, s, c.bad)
		c.bad = false
		n := c.i64(i)
		out = append(out, n, c.bad)
		c.bad = false
		k := c.kind(i)
		out = append(out, k, c.bad)
		c.bad = false
		b := c.blob(i)
		out = append(out, b, b == nil, c.bad)
		if i+3 <= recordWidth {
			c.bad = false
			var d [3]string
			c.hashes(i, [3]*string{&d[0], &d[1], &d[2]}, &h)
			out = append(out, d, c.bad)
		}
	}
	return out
}

// The cells of a row read on a held connection, where SQLite holds them,
// are what the same readers make of the driver's values for the same row:
// every reader on every storage class, empty texts and BLOBs, hash sums
// of every length. (The record tables are STRICT, so most of these rows
// cannot be stored; the readers must agree on them all the same.)
func TestLibCellsAreTheDriverValues(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cells.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lc, err := openLibConn(s.rrecs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.close()
	rapid.Check(t, func(t *rapid.T) {
		lits := make([]string, recordWidth)
		for i := range lits {
			lits[i] = drawLiteral(t, fmt.Sprint("cell ", i))
		}
		query := "SELECT " + strings.Join(lits, ", ")
		var got, want []any
		st, err := lc.prepare(query)
		if err != nil {
			t.Fatal(err)
		}
		var c cells
		ok, failed := st.query(ctx, nil, &c, func(c *cells) bool {
			got = readAll(c)
			return true
		})
		if !ok || failed || got == nil {
			t.Fatalf("%s: read %v, failed %v", query, ok, failed)
		}
		var d cells
		if !s.queryRecordsDriver(ctx, query, nil, &d, func(c *cells) bool {
			want = readAll(c)
			return true
		}) {
			t.Fatalf("%s: not read through the driver", query)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", query, got, want)
		}
	})
}

// keep copies what it is given, nil as nil, each copy cut from a chunk
// with its length as its capacity, and apart from the others (an append to one or a change to
// the bytes copied leaves the rest), and cuts small ones from shared
// chunks: a hundred 1 KB bodies in a few allocations, not a hundred.
func TestKeepCutsFromChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c cells
		var src, kept [][]byte
		for range rapid.IntRange(1, 40).Draw(t, "bodies") {
			var b []byte
			if n := rapid.SampledFrom([]int{-1, 1, 2, 100, bodyChunk/8 - 1, bodyChunk / 8, bodyChunk/8 + 1, bodyChunk}).Draw(t, "size"); n >= 0 {
				b = []byte(strings.Repeat(string(rune('a'+len(src)%26)), n))
			}
			k := c.keep(b)
			if (b == nil) != (k == nil) || string(k) != string(b) || len(b) <= bodyChunk/8 && cap(k) != len(k) {
				t.Fatalf("keep of %d bytes (nil %v): %d bytes, capacity %d, nil %v", len(b), b == nil, len(k), cap(k), k == nil)
			}
			src, kept = append(src, b), append(kept, k)
		}
		want := make([]string, len(kept))
		for i, k := range kept {
			want[i] = string(k)
		}
		for i := range kept {
			for j := range src[i] {
				src[i][j] = '#'
			}
			kept[i] = append(kept[i], '!')
		}
		for i, k := range kept {
			if string(k[:len(k)-1]) != want[i] {
				t.Fatalf("body %d changed by a change elsewhere", i)
			}
		}
	})
	body := []byte(strings.Repeat("x", 1024))
	allocs := testing.AllocsPerRun(5, func() {
		var c cells
		for range 100 {
			c.keep(body)
		}
	})
	if allocs > 4 {
		t.Fatalf("%v allocations for 100 bodies of 1 KB", allocs)
	}
}

// The lent chunks hand out each byte at most once per call: what copy
// returns is what it was given, with its length as its capacity, apart
// from every other copy of the call (a change to one, or an append, leaves
// the rest); a new call starts again from the first chunk and adds a chunk
// only where the ones lent are full.
func TestLenderCutsEachByteOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var mem [][]byte
		for call := range rapid.IntRange(1, 4).Draw(t, "calls") {
			l := lendChunks(mem)
			var kept [][]byte
			var want []string
			total := 0
			for range rapid.IntRange(1, 30).Draw(t, "bodies") {
				n := rapid.SampledFrom([]int{0, 1, 100, bodyChunk/8 + 1, bodyChunk - 1, bodyChunk, bodyChunk + 1, 3 * bodyChunk}).Draw(t, "size")
				b := []byte(strings.Repeat(string(rune('a'+len(kept)%26)), n))
				k := l.copy(b)
				if k == nil || string(k) != string(b) || cap(k) != len(k) {
					t.Fatalf("call %d: copy of %d bytes: %d bytes, capacity %d, nil %v", call, n, len(k), cap(k), k == nil)
				}
				kept, want, total = append(kept, k), append(want, string(b)), total+n
			}
			for i := range kept {
				kept[i] = append(kept[i], '!')
			}
			for i, k := range kept {
				if string(k[:len(k)-1]) != want[i] {
					t.Fatalf("call %d: body %d changed by a change elsewhere", call, i)
				}
			}
			// No chunk but the last is added while an earlier one had
			// room, so the chunks lent hold no more than the bytes cut and
			// a chunk's worth of room per chunk.
			size := 0
			for _, c := range l.chunks {
				size += cap(c)
			}
			if size > total+len(l.chunks)*max(bodyChunk, 3*bodyChunk) {
				t.Fatalf("call %d: %d bytes of chunks for %d bytes", call, size, total)
			}
			mem = l.chunks
		}
	})
	// A call that fits in the chunks lent allocates nothing.
	body := []byte(strings.Repeat("x", 1024))
	var mem [][]byte
	read := func() {
		l := lendChunks(mem)
		for range 100 {
			l.copy(body)
		}
		mem = l.chunks
	}
	read()
	if allocs := testing.AllocsPerRun(5, read); allocs != 0 {
		t.Fatalf("%v allocations for 100 bodies of 1 KB in chunks lent", allocs)
	}
}

// The texts cutText cuts are what it was given, each apart from the
// others though most share an allocation: a change to the bytes given,
// or to the scratch they were gathered in, leaves every string cut; and
// rows of short texts share one allocation for many rows.
func TestCutTextKeepsEachRowsTexts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c cells
		var got, want []string
		scratch := make([]byte, 0, 2*textChunk)
		for range rapid.IntRange(1, 60).Draw(t, "rows") {
			n := rapid.SampledFrom([]int{0, 1, 7, 100, textChunk/8 - 1, textChunk / 8, textChunk/8 + 1, textChunk}).Draw(t, "size")
			scratch = scratch[:0]
			for i := range n {
				scratch = append(scratch, byte('a'+(len(got)+i)%26))
			}
			want = append(want, string(scratch))
			got = append(got, c.cutText(scratch))
			for i := range scratch {
				scratch[i] = '#'
			}
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("row %d: cut %q, given %q", i, got[i], want[i])
			}
		}
	})
	row := []byte(strings.Repeat("x", 60))
	allocs := testing.AllocsPerRun(5, func() {
		var c cells
		for range 60 {
			c.cutText(row)
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations for 60 rows of 60 bytes", allocs)
	}
}
