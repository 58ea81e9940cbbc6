package postgres

import (
	"fmt"

	"flrh.dev/flrh/store"
)

// A tick's events are one row of events (see the schema's "events per
// tick"); eventRow reads such a row back as the events it holds.

// eventRowColumns are an events row's columns as eventRow.dest scans them.
const eventRowColumns = `seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at`

// eventRow is one events row as scanned. Its slices are scanned into
// afresh for each row: the events appended from it keep its bodies.
type eventRow struct {
	seq, last, gen, at   int64
	kinds                []string
	bodies, dSums, cSums [][]byte
	digests, chains      []*string
	prevSum              []byte
	prev                 *string
}

// dest are the scan targets of eventRowColumns.
func (r *eventRow) dest() []any {
	return []any{&r.seq, &r.last, &r.kinds, &r.bodies, &r.dSums, &r.digests, &r.prevSum, &r.prev, &r.cSums, &r.chains, &r.gen, &r.at}
}

// appendTo appends the row's events after position after to out. Each
// event's previous hash is the chain hash of the one before it, the
// first's the row's own. A row whose arrays do not hold last - seq + 1
// events is an error (the schema refuses to store one).
func (r *eventRow) appendTo(out []store.Event, after int64) ([]store.Event, error) {
	n := r.last - r.seq + 1
	if n < 1 || int64(len(r.kinds)) != n || int64(len(r.bodies)) != n || int64(len(r.dSums)) != n || int64(len(r.cSums)) != n ||
		r.digests != nil && int64(len(r.digests)) != n || r.chains != nil && int64(len(r.chains)) != n {
		return out, fmt.Errorf("events row %d..%d holds %d kinds, %d bodies, %d digests, %d chain hashes",
			r.seq, r.last, len(r.kinds), len(r.bodies), len(r.dSums), len(r.cSums))
	}
	at := fromNanos(r.at)
	prev := sumText(r.prevSum, r.prev)
	for i := range n {
		chain := sumText(r.cSums[i], textAt(r.chains, i))
		if seq := r.seq + i; seq > after {
			out = append(out, store.Event{Seq: seq, Kind: r.kinds[i], Body: r.bodies[i], Digest: sumText(r.dSums[i], textAt(r.digests, i)),
				PrevHash: prev, ChainHash: chain, Generation: r.gen, RecordedAt: at})
		}
		prev = chain
	}
	return out, nil
}

// textAt is texts[i], or nil when there are no texts.
func textAt(texts []*string, i int64) *string {
	if texts == nil {
		return nil
	}
	return texts[i]
}
