package frontier

import (
	"cmp"
	"slices"
)

// Sorting a command's deltas by delivery id and their digests by value is
// per-delta work on every apply. Delivery ids and digests share a fixed
// prefix ("delivery:", "sha256:") followed by hex, so comparing whole
// strings spends most of its time on the prefix and on loading the string
// from memory. These sorts compare a key holding the next 8 bytes after the
// strings' common prefix first, and the whole strings only on a tie; the
// order is exactly the strings' byte order.

// commonPrefix is the length of the prefix all of ss share.
func commonPrefix(n int, at func(int) string) int {
	if n == 0 {
		return 0
	}
	first := at(0)
	p := len(first)
	for i := 1; i < n && p > 0; i++ {
		s := at(i)
		k := 0
		for k < p && k < len(s) && s[k] == first[k] {
			k++
		}
		p = k
	}
	return p
}

// sortKey packs s[skip:skip+8] big-endian, zero-padded. Identifiers never
// contain a zero byte, so a shorter string's key is below a longer one's
// when they agree up to the shorter's end, as in byte order.
func sortKey(s string, skip int) uint64 {
	var k uint64
	for i := skip; i < skip+8; i++ {
		k <<= 8
		if i < len(s) {
			k |= uint64(s[i])
		}
	}
	return k
}

type keyedDelta struct {
	key uint64
	d   *ValueDelta
}

// sortByDelivery returns pointers to ds (with their keys) ordered by
// delivery id, then diff (a retraction before an insertion).
func sortByDelivery(ds []ValueDelta) []keyedDelta {
	skip := commonPrefix(len(ds), func(i int) string { return ds[i].deliveryID })
	keyed := make([]keyedDelta, len(ds))
	for i := range ds {
		keyed[i] = keyedDelta{sortKey(ds[i].deliveryID, skip), &ds[i]}
	}
	slices.SortFunc(keyed, func(a, b keyedDelta) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := compareCanonString(a.d.deliveryID, b.d.deliveryID); c != 0 {
			return c
		}
		return int(a.d.diff) - int(b.d.diff)
	})
	return keyed
}

type keyedString struct {
	key uint64
	s   string
}

// sortedDigests returns the deltas' digests in byte order.
func sortedDigests(ds []*ValueDelta) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Digest()
	}
	return sortDigests(out)
}

// sortDigests sorts digests in byte order, in place, and returns them.
func sortDigests(out []string) []string {
	skip := commonPrefix(len(out), func(i int) string { return out[i] })
	var buf [8]keyedString // a few deltas' keys on the stack
	keyed := buf[:0]
	if len(out) > len(buf) {
		keyed = make([]keyedString, 0, len(out))
	}
	keyed = keyed[:len(out)]
	for i, s := range out {
		keyed[i] = keyedString{sortKey(s, skip), s}
	}
	slices.SortFunc(keyed, func(a, b keyedString) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.s, b.s)
	})
	for i, k := range keyed {
		out[i] = k.s
	}
	return out
}
