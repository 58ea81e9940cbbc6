package authority

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unicode"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"

	"pgregory.net/rapid"
)

// The hand-written fast paths of the decision path are held equal to their
// plain definitions here.

// nearBytes draws bytes around every boundary isDigest tests.
var nearBytes = []byte{0x00, 0x1f, 0x20, 0x21, '"', 0x23, '0', '9', ':', '\\', 'a', 'f', 'g', 's', 'h', 'A', 'F', 0x7e, 0x7f, 0x80, 0xc3, 0xff}

func nearString(t *rapid.T, label string) string {
	bs := rapid.SliceOfN(rapid.SampledFrom(nearBytes), 0, 80).Draw(t, label)
	return string(bs)
}

func TestFactStringsMatchLogic(t *testing.T) {
	value := rapid.Custom(func(t *rapid.T) logic.Value {
		if rapid.Bool().Draw(t, "sym") {
			// Printable ASCII (plain, or not for a quote or a backslash)
			// and strings with bytes logic's quoting escapes.
			return logic.Sym(rapid.OneOf(rapid.String(), rapid.StringMatching(`[ -~]{0,80}`), rapid.StringOf(rapid.SampledFrom([]rune{'a', '"', '\\', '\n', '\t', '\r', 'é', 0}))).Draw(t, "s"))
		}
		return logic.Num(rapid.Int64().Draw(t, "n"))
	})
	fact := rapid.Custom(func(t *rapid.T) logic.Fact {
		return logic.Fact{Rel: rapid.StringMatching(`[a-z_]{1,8}`).Draw(t, "rel"), Neg: rapid.Bool().Draw(t, "neg"), Args: rapid.SliceOfN(value, 0, 5).Draw(t, "args")}
	})
	rapid.Check(t, func(t *rapid.T) {
		fs := rapid.SliceOfN(fact, 0, 20).Draw(t, "facts")
		got := factStrings(fs)
		if len(got) != len(fs) {
			t.Fatalf("%d strings for %d facts", len(got), len(fs))
		}
		for k, f := range fs {
			if got[k] != f.String() {
				t.Fatalf("fact %d: %q, want %q", k, got[k], f.String())
			}
		}
	})
}

// TestFactStringsSharedSymbolsMatchLogic is TestFactStringsMatchLogic
// with the facts' symbols drawn from a few, as a ticket's facts all
// carry its id: a symbol met again is written without a second test only
// when the first found it plain.
func TestFactStringsSharedSymbolsMatchLogic(t *testing.T) {
	sym := rapid.OneOf(rapid.StringMatching(`[ -~]{0,80}`), rapid.StringOf(rapid.SampledFrom([]rune{'a', '"', '\\', '\n', 'é', 0})), rapid.String())
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SliceOfN(sym, 1, 3).Draw(t, "pool")
		value := rapid.Custom(func(t *rapid.T) logic.Value {
			if rapid.IntRange(0, 4).Draw(t, "kind") == 0 {
				return logic.Num(rapid.Int64().Draw(t, "n"))
			}
			return logic.Sym(rapid.SampledFrom(pool).Draw(t, "s"))
		})
		fs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) logic.Fact {
			return logic.Fact{Rel: rapid.StringMatching(`[a-z_]{1,8}`).Draw(t, "rel"), Neg: rapid.Bool().Draw(t, "neg"), Args: rapid.SliceOfN(value, 0, 4).Draw(t, "args")}
		}), 1, 12).Draw(t, "facts")
		got := factStrings(fs)
		for k, f := range fs {
			if got[k] != f.String() {
				t.Fatalf("fact %d: %q, want %q", k, got[k], f.String())
			}
		}
	})
}

// TestPublishedBatchSizeBoundsPreimage checks that the published batch's
// buffer estimate covers the preimage of the reference batches, so the
// digest never grows its buffer for plain input.
func TestPublishedBatchSizeBoundsPreimage(t *testing.T) {
	for _, name := range []string{"internal"} {
		in, _ := fixtureInput(t, name)
		b := in.Batch
		w := canonWriter{}
		w.publishedBatch(b)
		if got, bound := len(w.b), publishedBatchSize(b); got > bound || bound > 2*got+1024 {
			t.Errorf("%s: preimage %d bytes, estimate %d", name, got, bound)
		}
	}
}

// TestFlatASCIIImpliesEncodable checks that every parameter map flatASCII
// accepts is one cjson.Encode accepts, so skipping the encoder never
// admits a ticket the encoder would reject.
func TestFlatASCIIImpliesEncodable(t *testing.T) {
	value := rapid.OneOf(
		rapid.Just[any](nil), rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int64(), func(n int64) any { return n }), rapid.Map(rapid.Int(), func(n int) any { return n }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.StringOf(rapid.RuneFrom(nil, unicode.ASCII_Hex_Digit, unicode.Latin)), func(s string) any { return s }),
		rapid.Just[any]([]any{"a", "a"}), rapid.Just[any](1.5), rapid.Just[any](map[string]any{"x": 1.5}),
	)
	rapid.Check(t, func(t *rapid.T) {
		params := rapid.MapOfN(rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"kind", "amount", "é"})), value, 0, 6).Draw(t, "params")
		_, err := cjson.Encode(params)
		if flatASCII(params) && err != nil {
			t.Fatalf("flatASCII accepts %#v, which cjson rejects: %v", params, err)
		}
	})
}

// TestPooledBuffersUnderConcurrency runs Authorize from several goroutines
// at once: pooled preimage buffers must never be shared, so every result
// is byte-identical to the sequential one. Run it with -race.
func TestPooledBuffersUnderConcurrency(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	d, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				d, err := Authorize(in)
				got, _ := json.Marshal(d)
				if err != nil || string(got) != string(want) {
					errs <- fmt.Sprintf("concurrent Authorize differs: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestMustDigestAsMatchesPrefixedDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringMatching(`[a-z-]{0,40}:`).Draw(t, "prefix")
		val := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"e\u0301", "plain"})).Draw(t, "value")
		write := func() canonWriter {
			w := pooledWriter(64)
			w.open()
			w.str("k", val)
			w.close()
			return w
		}
		a, b := write(), write()
		if got, want := a.mustDigestAs(prefix), prefix+hexOf(b.mustDigest()); got != want {
			t.Fatalf("mustDigestAs(%q) = %q, want %q", prefix, got, want)
		}
	})
}

// appendQuoted writes what cjson.AppendString writes and reports ASCII
// exactly, for strings that are mostly plain with a few bytes at every
// boundary (so both the word skip and the byte path are taken), and for
// arbitrary strings.
