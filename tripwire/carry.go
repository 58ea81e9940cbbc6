package tripwire

import (
	"fmt"

	"flrh.dev/flrh/control"
)

// Carry is what a runner keeps about a run from one boundary to the next,
// beyond its checkpoint: the chain head it knows, the newest lease
// generation it has seen, and the no-progress window.
type Carry struct {
	Known  Head                   `json:"known"`
	Newest int64                  `json:"newest"`
	Window control.ProgressWindow `json:"window"`
}

// AfterCommit returns the carry once the tick b describes has been
// committed: the known head extended over the tick's events (the store
// computes the same links), the writer's generation folded into the newest
// seen, and the tick's round observed by the no-progress rule. A head of
// unknown hash cannot be extended; the caller must read it back instead.
func AfterCommit(c Carry, b Boundary) (Carry, error) {
	if b.Phase != PhaseCommit {
		return c, fmt.Errorf("tripwire: AfterCommit of a %s boundary", b.Phase)
	}
	next := c
	next.Newest = max(c.Newest, b.Lease.Generation)
	if len(b.Events) > 0 {
		if c.Known.Hash == "" {
			return c, fmt.Errorf("tripwire: the head at event %d has no known hash to extend", c.Known.Seq)
		}
		// Each link's text is the next one's prev: the links are written
		// into two arrays in turn, and only the last becomes a string.
		var bufs [2][hashLen]byte
		seq := c.Known.Seq + 1
		prev := appendChainHash(bufs[0][:0], c.Known.Hash, seq, b.Events[0].Digest)
		for i, e := range b.Events[1:] {
			seq++
			prev = appendChainHash(bufs[(i+1)%2][:0], prev, seq, e.Digest)
		}
		next.Known = Head{Seq: seq, Hash: string(prev)}
	}
	if p := b.Progress; p != nil {
		w, _, err := p.Rule.Observe(c.Window, p.Round)
		if err != nil {
			return c, fmt.Errorf("tripwire: observe round: %w", err)
		}
		next.Window = w
	}
	return next, nil
}
