package kernel

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/protocol"
)

// countingWrapper wraps a *Declarative, implements Wrapping and counts the
// calls of its own Profile.
type countingWrapper struct {
	*Declarative
	calls *int
}

func (w countingWrapper) Profile() Profile { *w.calls++; return w.Declarative.Profile() }

func (w countingWrapper) Wrapped() *Declarative { return w.Declarative }

// narrowing embeds a *Declarative but declares a profile of its own, without
// Wrapping: Step must read that profile.
type narrowing struct{ *Declarative }

func (n narrowing) Profile() Profile {
	p := n.Declarative.Profile()
	delete(p.EventTypes, "order.placed/1")
	return p
}

// TestWrappingReadsTheLoadedProfile: a *Declarative and a Wrapping of one
// step with the profile built at Load, giving what the fresh profile
// gives; a type that only embeds one has its own Profile read.
func TestWrappingReadsTheLoadedProfile(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	e := shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true))

	want := stepBytes(t, copying{d}, s, e) // copying calls Profile
	calls := 0
	if got := stepBytes(t, countingWrapper{d, &calls}, s, e); !bytes.Equal(got, want) {
		t.Fatalf("wrapped %s\nfresh   %s", got, want)
	}
	if calls != 0 {
		t.Errorf("Step called a Wrapping's Profile %d times", calls)
	}
	if got := stepBytes(t, d, s, e); !bytes.Equal(got, want) {
		t.Fatalf("declarative %s\nfresh       %s", got, want)
	}

	// A caller's edit of a returned profile reaches neither the domain nor
	// the kernel's steps.
	p := d.Profile()
	delete(p.EventTypes, "order.placed/1")
	p.StateMembers[0] = "other"
	if got := stepBytes(t, d, s, e); !bytes.Equal(got, want) {
		t.Fatalf("after editing a returned profile %s\nwant %s", got, want)
	}
	if q := d.Profile(); len(q.EventTypes["order.placed/1"]) == 0 || q.StateMembers[0] != "state" {
		t.Errorf("a returned profile shares the domain's: %+v", q)
	}

	// narrowing's profile refuses the event type its embedded domain accepts.
	if _, err := Step(narrowing{d}, s, e); err == nil {
		t.Error("Step ignored the Profile of a type embedding a *Declarative")
	}
	if _, ok := any(narrowing{d}).(Wrapping); ok {
		t.Error("embedding a *Declarative implements Wrapping")
	}
}

func stepBytes(t *testing.T, d Domain, s Snapshot, e protocol.AcceptedEvent) []byte {
	t.Helper()
	tr, err := Step(d, s, e)
	return resultBytes(t, tr, err)
}
