package authority

import (
	"bytes"
	"encoding/json"
	"flrh.dev/flrh/mrp"
	"fmt"
	"reflect"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// TestCheckBatchShapeSmallIsMaps holds the scanning shape check of small
// batches to the set-based one it stands in for: over batches drawn from a
// few ids each (so that duplicates, strays and missing pairs are common),
// both give the same rejection or none.
func TestCheckBatchShapeSmallIsMaps(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	base := in.Batch.Proposals[0]
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, smallBatch).Draw(rt, "n")
		id := func(label, prefix string) string {
			return fmt.Sprintf("%s:%d", prefix, rapid.IntRange(0, n+1).Draw(rt, label))
		}
		var b PublishedBatch
		for i := 0; i < n; i++ {
			p := base
			p.ProposalID = id("proposal", "proposal")
			if rapid.IntRange(0, 9).Draw(rt, "malformed") == 0 {
				p.ActionDigest = "sha256:nothex"
			}
			if rapid.IntRange(0, 9).Draw(rt, "canon") == 0 {
				p.Versions.Canonicalization = "other"
			}
			b.Proposals = append(b.Proposals, p)
			b.Verdicts = append(b.Verdicts, protocol.EligibilityVerdict{ProposalID: id("for", "proposal"), VerdictID: id("verdict", "verdict")})
			b.Batch.ProposalIDs = append(b.Batch.ProposalIDs, id("pid", "proposal"))
			b.Batch.EligibilityVerdictIDs = append(b.Batch.EligibilityVerdictIDs, id("vid", "verdict"))
		}
		if rapid.Bool().Draw(rt, "consistent") {
			// Mostly well paired, so the later checks are reached too.
			for i := range b.Proposals {
				b.Batch.ProposalIDs[i] = b.Proposals[i].ProposalID
				b.Verdicts[i].ProposalID = b.Proposals[(i+1)%n].ProposalID
				b.Batch.EligibilityVerdictIDs[i] = b.Verdicts[i].VerdictID
			}
		}
		got, want := checkBatchShapeSmall(b), checkBatchShapeMaps(b)
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("small %+v, maps %+v", got, want)
		}
	})
}

// TestStrArenaStringsStay holds the arena's strings to their definitions:
// whatever is carved later, and however often the buffer fills, every
// string handed out still reads as the bytes or the concatenation it was
// made from.
func TestStrArenaStringsStay(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var arena strArena
		a := &arena
		if rapid.IntRange(0, 9).Draw(rt, "nil") == 0 {
			a = nil
		}
		var got, want []string
		for range rapid.IntRange(0, 60).Draw(rt, "n") {
			x := rapid.StringN(0, 300, -1).Draw(rt, "x")
			y := []byte(rapid.StringN(0, 300, -1).Draw(rt, "y"))
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				got, want = append(got, a.bytes(y)), append(want, string(y))
			case 1:
				got, want = append(got, a.concat(x, y)), append(want, x+string(y))
			default:
				got, want = append(got, a.cat(x, string(y), x)), append(want, x+string(y)+x)
			}
		}
		for k := range got {
			if got[k] != want[k] {
				rt.Fatalf("string %d: %q, want %q", k, got[k], want[k])
			}
		}
	})
}

// TestAuthorizeListsAreSeparate: the lists a decision returns share
// arrays (one for a one-proposal batch's records, one for the gates'
// results, signals and reasons, one for an intent's evidence), so
// appending to any of them must change nothing else in the decision,
// including past the room each array leaves (more signals and
// transitions than the arrays hold).
func TestAuthorizeListsAreSeparate(t *testing.T) {
	for _, name := range []string{"plain", "signals", "safe mode"} {
		t.Run(name, func(t *testing.T) {
			in, _ := fixtureInput(t, "internal")
			switch name {
			case "signals":
				for k := range 3 {
					in.Signals = append(in.Signals, Signal{Tier: 4, Kind: KindAttunement, Source: fmt.Sprintf("tone%d", k), Reason: Reason{Rule: "pace", Facts: []string{}, Absent: []string{}}})
				}
			case "safe mode":
				in.Signals = append(in.Signals, Signal{Tier: 0, Kind: KindWatchdog, Source: "watchdog", Reason: Reason{Rule: "fired", Facts: []string{}, Absent: []string{}}})
			}
			d, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			if name != "plain" && len(d.FHR.Signals)+len(d.FHR.Transitions) < 3 {
				t.Fatalf("%d signals and %d transitions: the arrays' room is not exceeded", len(d.FHR.Signals), len(d.FHR.Transitions))
			}
			before, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			o := &d.Outcomes[0]
			_ = append(d.Outcomes, Outcome{Kind: "sentinel"}, Outcome{Kind: "sentinel"})
			_ = append(d.FHR.Signals, mrp.SignalRecord{Rule: "sentinel"}, mrp.SignalRecord{Rule: "sentinel"})
			_ = append(d.FHR.Resolutions, mrp.ResolutionRecord{Outcome: "sentinel"}, mrp.ResolutionRecord{Outcome: "sentinel"})
			_ = append(d.FHR.Tickets, mrp.TicketView{}, mrp.TicketView{})
			_ = append(d.FHR.Transitions, mrp.Entry{Cause: "sentinel"}, mrp.Entry{Cause: "sentinel"})
			_ = append(o.Evaluation.Gates, GateResult{Gate: "sentinel"}, GateResult{Gate: "sentinel"})
			_ = append(o.Evaluation.Signals, Signal{Source: "sentinel"}, Signal{Source: "sentinel"}, Signal{Source: "sentinel"})
			_ = append(o.Evaluation.RiskReasons, Reason{Rule: "sentinel"})
			_ = append(o.Resolution.Signals, Signal{Source: "sentinel"}, Signal{Source: "sentinel"}, Signal{Source: "sentinel"})
			for _, g := range o.Evaluation.Gates {
				_ = append(g.Reasons, Reason{Rule: "sentinel"}, Reason{Rule: "sentinel"})
			}
			_ = append(o.Ticket.SideEffects, "sentinel", "sentinel", "sentinel", "sentinel", "sentinel")
			if o.Intent != nil {
				_ = append(o.Intent.Preconditions, "sentinel", "sentinel", "sentinel")
			}
			after, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Fatalf("appending to one list changed another:\n%s\n%s", before, after)
			}
		})
	}
}

// TestHasFingerprintIsFingerprint holds the fingerprint check to its
// definition, over keyrings of ids that may hold the separator and
// fingerprints of their own, of other keyrings, and arbitrary ones.
func TestHasFingerprintIsFingerprint(t *testing.T) {
	id := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', ','}), 0, 3, -1)
	ring := rapid.Custom(func(t *rapid.T) Keyring {
		k := Keyring{}
		for _, s := range rapid.SliceOfN(id, 0, 4).Draw(t, "ids") {
			k[s] = nil
		}
		return k
	})
	rapid.Check(t, func(rt *rapid.T) {
		k := ring.Draw(rt, "keyring")
		var fp string
		switch rapid.IntRange(0, 2).Draw(rt, "fp") {
		case 0:
			fp = k.Fingerprint()
		case 1:
			fp = ring.Draw(rt, "other").Fingerprint()
		default:
			fp = rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', ','}), 0, 12, -1).Draw(rt, "arbitrary")
		}
		if got, want := k.hasFingerprint(fp), k.Fingerprint() == fp; got != want {
			rt.Fatalf("hasFingerprint(%q) = %v for %v", fp, got, k)
		}
	})
}
