package mrp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"flrh.dev/flrh/cjson"

	"pgregory.net/rapid"
)

// sealSum gives sha256.Sum256 of the whole input: inputs that begin with
// a midstate's prefix, with one of its bytes changed, or stop short of
// it, followed by anything.
func TestSealSumIsSum256(t *testing.T) {
	for _, m := range fhrMidstates {
		if m == nil || len(m.Prefix())%64 != 0 {
			t.Fatalf("midstate %+v: want a prefix of whole blocks", m)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		b := []byte(fhrMidstates[rapid.IntRange(0, len(fhrMidstates)-1).Draw(rt, "which")].Prefix())
		switch rapid.IntRange(0, 2).Draw(rt, "how") {
		case 1:
			b[rapid.IntRange(0, len(b)-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		case 2:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(rt, "cut")]
		}
		b = append(b, rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "rest")...)
		opening := rapid.IntRange(-1, len(b)+2).Draw(rt, "opening")
		// Twice: the second may continue from the opening the first kept.
		for range 2 {
			if got, want := sealSum(b, opening, fhrMidstates[:]), sha256.Sum256(b); got != want {
				rt.Fatalf("sealSum(%q, %d) = %x, want %x", b, opening, got, want)
			}
		}
	})
}

// An FHR with its deep and no-progress budgets unused is sealed from the
// two-block midstate, one with those budgets in use from none; both seals
// are the digest of the record's canonical bytes.
func TestSealFromMidstateIsTheDigest(t *testing.T) {
	for _, b := range []Budgets{{}, {SessionUsed: 3}, {NoProgressRun: 1}, {DeepLimit: 2}, {EscalateOnNoProgress: true}} {
		f, err := FHR{Turn: 1, Budgets: b, State: Decide}.Seal()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := f.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		g := f
		g.Digest = ""
		pre, err := g.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(pre)
		if want := "sha256:" + hex.EncodeToString(sum[:]); f.Digest != want {
			t.Fatalf("budgets %+v: seal %s, want %s (record %s)", b, f.Digest, want, raw)
		}
	}
}

// openingFHR draws a record from a few that share openings (small
// budgets, a previous digest or none, a first resolution's verdict) with
// tails that differ: sealed in turn, they continue from learnt openings,
// keep new ones and evict old ones.
func openingFHR(rt *rapid.T) FHR {
	prev := rapid.SampledFrom([]string{"", "sha256:" + strings.Repeat("ab", 32), "sha256:" + strings.Repeat("cd", 32)}).Draw(rt, "prev")
	used := rapid.IntRange(0, 3).Draw(rt, "used")
	f := FHR{Turn: int64(used), Prev: prev, State: Decide, Budgets: Budgets{SessionUsed: used, TurnUsed: used, SessionLimit: rapid.IntRange(0, 1).Draw(rt, "limit")}}
	ticket := "ticket:" + strings.Repeat(rapid.SampledFrom([]string{"0", "1", "e"}).Draw(rt, "digit"), rapid.IntRange(0, 64).Draw(rt, "len"))
	for i := rapid.IntRange(0, 2).Draw(rt, "resolutions"); i > 0; i-- {
		f.Resolutions = append(f.Resolutions, ResolutionRecord{Ticket: ticket, HighestTier: 1, Decision: rapid.SampledFrom([]string{"ALLOW", "REFUSE"}).Draw(rt, "decision"),
			Move: MoveProceed, Options: []string{}, Outcome: rapid.SampledFrom([]string{"INTENT", "HELD"}).Draw(rt, "outcome")})
		f.Tickets = append(f.Tickets, TicketView{TicketID: ticket, Status: "READY"})
	}
	return f
}

// Seals continued from learnt openings are the digests of the records'
// whole preimages, as the member-by-member writer hashes them, through
// Seal, SealIn and SealAppend alike, sealed once or again.
func TestSealFromLearntOpeningsIsTheDigest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := openingFHR(rt)
		want, err := memberSeal(f)
		if err != nil {
			rt.Fatal(err)
		}
		for range 2 {
			got, err := f.Seal()
			if err != nil || got.Digest != want {
				rt.Fatalf("Seal %s (%v), want %s", got.Digest, err, want)
			}
			var sb strings.Builder
			if got, err = f.SealIn(&sb); err != nil || got.Digest != want {
				rt.Fatalf("SealIn %s (%v), want %s", got.Digest, err, want)
			}
			pre := []byte(rapid.StringMatching(`[a-z]{0,70}`).Draw(rt, "before"))
			if got, _, _, err = f.SealAppend(pre); err != nil || got.Digest != want {
				rt.Fatalf("SealAppend after %d bytes %s (%v), want %s", len(pre), got.Digest, err, want)
			}
		}
	})
}

// A first record's opening ends at its first resolution's ticket id; a
// later record (with a previous digest) or one without resolutions has
// none (0); SealAppend's is counted from the preimage's first byte.
func TestFHROpeningEnd(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := openingFHR(rt)
		f.Kind = "FHR"
		at := 0
		w := fhrWriter{}
		w.fhr(f)
		if f.Prev == "" && len(f.Resolutions) > 0 {
			at = bytes.Index(w.B, []byte(`"resolutions":[{`))
			at += bytes.Index(w.B[at:], []byte(`"ticket":"`)) + len(`"ticket":"`)
		}
		if w.openEnd != at {
			rt.Fatalf("opening ends at %d, want %d in %s", w.openEnd, at, w.B)
		}
		pre := []byte(rapid.StringMatching(`[a-z]{0,70}`).Draw(rt, "before"))
		a := fhrWriter{Members: cjson.Members{B: pre}}
		a.fhr(f)
		if at != 0 && a.openEnd-len(pre) != at {
			rt.Fatalf("after %d bytes, opening ends at %d, want %d", len(pre), a.openEnd-len(pre), at)
		}
	})
}

// Seals from many goroutines at once, learning and evicting openings,
// are each the digest of the record's whole preimage.
func TestFHROpeningsConcurrent(t *testing.T) {
	var fs []FHR
	var want []string
	for used := range 6 {
		for _, prev := range []string{"", "sha256:" + strings.Repeat("ef", 32)} {
			f := FHR{Turn: 1, Prev: prev, Budgets: Budgets{SessionUsed: used, TurnUsed: used}, State: Decide,
				Resolutions: []ResolutionRecord{{Ticket: "ticket:" + strings.Repeat("9", 64), Decision: "ALLOW", Options: []string{}, Outcome: "INTENT"}}}
			d, err := memberSeal(f)
			if err != nil {
				t.Fatal(err)
			}
			fs, want = append(fs, f), append(want, d)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				k := (i*7 + g) % len(fs)
				if got, err := fs[k].Seal(); err != nil || got.Digest != want[k] {
					errs <- fmt.Sprintf("record %d: %s (%v), want %s", k, got.Digest, err, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
