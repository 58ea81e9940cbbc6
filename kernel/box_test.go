package kernel

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/protocol"

	"flrh.dev/flrh/internal/racebuild"
)

// TestTransitionPartsAreItsOwn holds what a transition's box shares: its
// fact and proposal lists have the emission's counts as capacity (so an
// append by a caller copies rather than writes over a neighbour), the
// next snapshot's logical time and event id are the event's values in
// storage of the transition's own, and no two transitions share any of
// it.
func TestTransitionPartsAreItsOwn(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	for _, notify := range []bool{true, false} {
		ev := shopEvent(s, "evt:1", 7, "order.placed/1", order("order:1", 30, notify))
		a, err := Step(d, s, ev)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Step(d, s, ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []*Transition{a, b} {
			if len(tr.FactDeltas) != 1 || cap(tr.FactDeltas) != 1 || cap(tr.EffectProposals) != len(tr.EffectProposals) {
				t.Fatalf("notify %v: facts %d/%d, proposals %d/%d", notify,
					len(tr.FactDeltas), cap(tr.FactDeltas), len(tr.EffectProposals), cap(tr.EffectProposals))
			}
			if tr.EffectProposals == nil {
				t.Fatalf("notify %v: proposals nil, want empty", notify)
			}
			if *tr.NextSnapshot.LastEventID != "evt:1" || *tr.NextSnapshot.LastLogicalTime != 7 {
				t.Fatalf("next snapshot names %s at %d", *tr.NextSnapshot.LastEventID, *tr.NextSnapshot.LastLogicalTime)
			}
		}
		if a.NextSnapshot.LastEventID == b.NextSnapshot.LastEventID || a.NextSnapshot.LastLogicalTime == b.NextSnapshot.LastLogicalTime ||
			&a.FactDeltas[0] == &b.FactDeltas[0] {
			t.Fatalf("notify %v: two transitions share their parts", notify)
		}
		if notify && &a.EffectProposals[0] == &b.EffectProposals[0] {
			t.Fatal("two transitions share their proposal")
		}
		// A caller's append leaves the transition's lists as they were.
		before := a.FactDeltas[0].DerivationID
		grown := append(a.FactDeltas, protocol.FactDelta{DerivationID: "derivation:other"})
		grown[0].DerivationID = "changed"
		if a.FactDeltas[0].DerivationID != before {
			t.Fatal("an append wrote into the transition's facts")
		}
		*a.NextSnapshot.LastLogicalTime = 99
		if *b.NextSnapshot.LastLogicalTime != 7 {
			t.Fatal("transitions share the next snapshot's logical time")
		}
	}
}

// TestDeclarativeStepAllocations holds the allocations of a declarative
// step emitting one fact and one proposal: the transition, the next
// snapshot's logical time and event id and the two lists' elements are
// one allocation (three more without the box), and its six ids and
// digests (derivation id, proposal id and dedup key, the prior and next
// snapshots' and the transition's digests) another, sized for them
// (five more without stepStrings, one more if it were sized short); the
// fact's and proposal's canonical bytes are in a pooled canonRoom (two
// more without). The shop's destination, made only of literals, is the
// one rendered at Load (two more if rendered again).
const declarativeStepAllocs = 21

func TestDeclarativeStepAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("the race detector drops pooled buffers: allocation counts do not hold")
	}
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	ev := shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true))
	if _, err := Step(d, s, ev); err != nil {
		t.Fatal(err)
	}
	got := testing.AllocsPerRun(50, func() {
		if _, err := Step(d, s, ev); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations a step", got)
	if got > declarativeStepAllocs {
		t.Fatalf("%v allocations a step, want at most %d", got, declarativeStepAllocs)
	}
}

// drawStepStrings is nil (each string its own), an empty stepStrings
// (growing as strings are carved) or one holding strings already.
func drawStepStrings(t *rapid.T) *stepStrings {
	switch rapid.IntRange(0, 2).Draw(t, "strings") {
	case 0:
		return nil
	case 1:
		return new(stepStrings)
	}
	ss := new(stepStrings)
	ss.sb.Grow(stepStringsSize(1, 1, true, true))
	ss.of([]byte("derivation:earlier"))
	return ss
}

// A step's strings carved from one allocation are each what they were
// as strings of their own, and carving one leaves the others as they
// were: over drawn digests and ids carved in turn, each compared with
// its bytes once all are carved.
func TestStepStringsKeepEach(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := drawStepStrings(t)
		var want, got []string
		for i := rapid.IntRange(1, 8).Draw(t, "n"); i > 0; i-- {
			p := []byte(rapid.StringMatching(`[a-z:0-9]{0,80}`).Draw(t, "s"))
			got = append(got, ss.of(p))
			want = append(want, string(p))
			if len(p) > 0 { // the caller's bytes are its own again
				p[0] = 'X'
			}
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("string %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}

// stepStringsSize is the length of the strings a step carves: over steps
// with and without a proposal, the ids and digests of each transition.
func TestStepStringsSizeIsExact(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	for _, notify := range []bool{true, false} {
		tr, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, notify)))
		if err != nil {
			t.Fatal(err)
		}
		next, err := tr.NextSnapshot.Digest()
		if err != nil {
			t.Fatal(err)
		}
		n := len(tr.PriorSnapshotDigest) + len(next) + len(tr.TransitionDigest) + idsSize(tr)
		if want := stepStringsSize(len(tr.FactDeltas), len(tr.EffectProposals), true, true); n != want {
			t.Fatalf("notify %v: the step's strings are %d bytes, sized %d", notify, n, want)
		}
		// A step without digests carves the ids alone.
		ut, _, err := StepUntraced(d, s, nil, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, notify)))
		if err != nil {
			t.Fatal(err)
		}
		n = idsSize(ut)
		if want := stepStringsSize(len(ut.FactDeltas), len(ut.EffectProposals), true, false); n != want {
			t.Fatalf("notify %v: the untraced step's strings are %d bytes, sized %d", notify, n, want)
		}
	}
}

// drawCanonRoom is nil (bytes of their own), a room whose buffer holds
// junk where the pieces will be lent, or one nearly full (pieces that do
// not fit are allocated).
func drawCanonRoom(t *rapid.T) *canonRoom {
	switch rapid.IntRange(0, 2).Draw(t, "room") {
	case 0:
		return nil
	case 1:
		r := &canonRoom{b: make([]byte, canonRoomSize)}
		for i := range r.b {
			r.b[i] = byte(rapid.IntRange(0, 255).Draw(t, "junk"))
			if i > 8 {
				r.b[i] = r.b[i%8]
			}
		}
		r.b = r.b[:0]
		return r
	}
	r := &canonRoom{b: make([]byte, canonRoomSize-rapid.IntRange(0, 64).Draw(t, "left"), canonRoomSize)}
	return r
}

// A step whose pooled room holds what an earlier use left (junk in every
// byte) gives the transition it gives from a clean one.
func TestCanonRoomLeftDirty(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	ev := shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true))
	clean, err := Step(d, s, ev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := clean.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for junk := range 4 {
		r := canonRooms.Get().(*canonRoom)
		r.b = r.b[:cap(r.b)]
		for i := range r.b {
			r.b[i] = byte(junk*61 + i)
		}
		r.release()
		tr, err := Step(d, s, ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("after junk %d: %s\nwant %s", junk, got, want)
		}
	}
}

// idsSize is the length of the ids a step's transition carves: its fact
// deltas' derivation ids and its proposals' ids and dedup keys.
func idsSize(tr *Transition) int {
	n := 0
	for _, f := range tr.FactDeltas {
		n += len(f.DerivationID)
	}
	for _, p := range tr.EffectProposals {
		n += len(p.ProposalID) + len(p.ProposalDedupKey)
	}
	return n
}
