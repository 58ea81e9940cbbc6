package sqlite

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// hashCol is the plain reading of one column packHash wrote, the oracle
// for unpackHashes: 32 bytes read back as their canonical text, text as it
// is, anything else an error.
func hashCol(src any) (string, error) {
	switch v := src.(type) {
	case []byte:
		if len(v) != 32 {
			return "", errHashColumn{v}
		}
		return hashPrefix + hex.EncodeToString(v), nil
	case string:
		return v, nil
	}
	return "", errHashColumn{src}
}

// drawHash is a canonical hash, one a character away from canonical, or
// any text.
func drawHash(t *rapid.T, label string) string {
	s := store.BodyDigest(rapid.SliceOf(rapid.Byte()).Draw(t, label+" body"))
	switch rapid.IntRange(0, 2).Draw(t, label+" form") {
	case 1:
		i := rapid.IntRange(0, len(s)-1).Draw(t, label+" at")
		s = s[:i] + rapid.SampledFrom([]string{"A", "F", "g", ":", "0", "é", ""}).Draw(t, label+" with") + s[i+1:]
	case 2:
		s = rapid.String().Draw(t, label+" text")
	}
	return s
}

// Every string a hash column is given reads back as it was: canonical
// hashes through their 32 bytes, anything else as text; three at once
// (one string for all) exactly as one by one.
func TestHashColumnRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var want [3]string
		var vals [3]any
		for i := range want {
			want[i] = drawHash(t, fmt.Sprint("hash ", i))
			vals[i] = packHash(want[i])
			if b, ok := vals[i].([]byte); ok && (len(b) != 32 || want[i][:len(hashPrefix)] != hashPrefix) {
				t.Fatalf("%q packed to %d bytes", want[i], len(b))
			}
			if got, err := hashCol(vals[i]); err != nil || got != want[i] {
				t.Fatalf("%q read back as %q (%v)", want[i], got, err)
			}
		}
		var got [3]string
		if err := unpackHashes([3]*string{&got[0], &got[1], &got[2]}, &vals); err != nil || got != want {
			t.Fatalf("%q read back as %q (%v)", want, got, err)
		}
		// A value packHash never writes fails the whole read, as it fails
		// the plain one.
		bad := vals
		at := rapid.IntRange(0, 2).Draw(t, "bad at")
		bad[at] = rapid.SampledFrom([]any{[]byte{1, 2}, make([]byte, 33), int64(7), nil, 1.5}).Draw(t, "bad")
		if _, err := hashCol(bad[at]); err == nil {
			t.Fatalf("the oracle read %v", bad[at])
		}
		if err := unpackHashes([3]*string{&got[0], &got[1], &got[2]}, &bad); err == nil {
			t.Fatalf("%v read without error", bad)
		}
	})
}

// A tick's trace frame splits back into its records, and any frame cut,
// padded or numbered for another count is refused.
func TestTraceFrame(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		var frame []byte
		var want []traceRecord
		for i := 0; i < n; i++ {
			r := traceRecord{kind: rapid.String().Draw(t, "kind"), body: rapid.SliceOf(rapid.Byte()).Draw(t, "body")}
			want = append(want, r)
			frame = appendTraceRecord(frame, r.kind, r.body)
		}
		got, err := splitTrace(frame, int64(n))
		if err != nil || len(got) != n {
			t.Fatalf("split: %d records, %v", len(got), err)
		}
		for i := range got {
			if got[i].kind != want[i].kind || !bytes.Equal(got[i].body, want[i].body) {
				t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if _, err := splitTrace(frame, int64(n+1)); err == nil {
			t.Fatal("a frame read as one record more than it holds")
		}
		if n > 1 {
			if _, err := splitTrace(frame, int64(n-1)); err == nil {
				t.Fatal("a frame read as one record fewer than it holds")
			}
		}
		if cut := rapid.IntRange(0, len(frame)-1).Draw(t, "cut"); true {
			if _, err := splitTrace(frame[:cut], int64(n)); err == nil {
				t.Fatalf("a frame cut at %d of %d bytes read", cut, len(frame))
			}
		}
		if _, err := splitTrace(append(frame[:len(frame):len(frame)], 0), int64(n)); err == nil {
			t.Fatal("a frame with a byte more read")
		}
	})
}

// Damaged rows in the version-6 layout read as CORRUPT, never as other
// records: a hash of the wrong size, a trace row cut short or numbered for
// more records than it holds.
func TestDamagedLayoutReadsCorrupt(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, edit string
		trace      bool
	}{
		{"short hash", `UPDATE events SET chain_hash = x'00ff' WHERE seq = 2`, false},
		{"integer hash", `UPDATE events SET digest = 7 WHERE seq = 1`, false},
		{"trace cut", `UPDATE trace SET records = substr(records, 1, length(records) - 1)`, true},
		{"trace miscounted", `UPDATE trace SET last_seq = last_seq + 1`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			l := leasedRun(t, s)
			tick := store.Tick{Events: []store.Event{storetest.Ev("E", `{"a":1}`), storetest.Ev("E", `{"a":2}`)}}
			for i := 0; i < 3; i++ {
				tick.Trace = append(tick.Trace, store.TraceRecord{Kind: fmt.Sprint("k", i), Body: []byte(fmt.Sprintf(`{"t":%d}`, i))})
			}
			if err := s.Commit(ctx, l, tick); err != nil {
				t.Fatal(err)
			}
			read := func() error {
				if c.trace {
					tr, err := s.Trace(ctx, "r")
					if err == nil && (len(tr) != 3 || tr[2].Kind != "k2" || string(tr[2].Body) != `{"t":2}`) {
						t.Fatalf("trace %+v", tr)
					}
					return err
				}
				evs, err := s.Events(ctx, "r", 0)
				if err == nil && (len(evs) != 2 || evs[1].PrevHash != evs[0].ChainHash) {
					t.Fatalf("events %+v", evs)
				}
				return err
			}
			if err := read(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().Exec(`DROP TRIGGER events_no_update; DROP TRIGGER trace_no_update`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().Exec(c.edit); err != nil {
				t.Fatal(err)
			}
			if err := read(); store.CodeOf(err) != store.CodeCorrupt {
				t.Fatalf("read after %s: %v", c.edit, err)
			}
		})
	}
}
