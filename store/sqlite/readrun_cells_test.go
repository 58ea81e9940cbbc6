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
