package authority

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// canonWriter writes flrh-cjson/1 bytes for preimages whose shape is fixed,
// without reflection. Members must be written in sorted key order: the
// writer checks it and records the first violation, as it records the
// first string that is not canonical (a programming error or bad input
// respectively); digest reports either. Tests compare every preimage it
// writes with cjson.Marshal of the same value.
type canonWriter struct {
	b []byte
	// last locates the last key written at each open object level inside
	// b (offset and length; length 0 for none yet). Keys are appended raw,
	// so b holds each one verbatim. Offsets rather than the key strings
	// keep pointer stores, and with them the collector's write barriers,
	// out of the per-key path.
	last  [8]struct{ off, n int32 }
	depth int
	err   error
	// pooled, when set, is where b came from and goes back to once
	// digested.
	pooled *[]byte
	// seen, when set, remembers strings strVal found plain, so that one
	// written again in the same decision is not tested again.
	seen *plainSeen
	// home, when set, is the decision's preimage buffer b was lent from
	// (instead of the pool); release gives it back.
	home *preimageScratch
	// from, when set, is the midstate of the opening this kind of
	// preimage usually has; the digest continues from it when b begins
	// with its prefix (see midstate).
	from *cjson.Midstate
	// cache, when set, holds the midstates of openings learnt from earlier
	// preimages; opening is the length of this one's (see cjson.Openings).
	cache   *cjson.Openings
	opening int
	// memo, when set, is the decision's DigestMemo (with home only).
	memo *DigestMemo
}

// preimageScratch is the one preimage buffer a decision lends to its
// writers in turn: each preimage is written, hashed and released before
// the next is begun, so one buffer serves them all, taken from
// scratchBufs once per decision rather than once per preimage. A writer
// asking while the buffer is lent out (none does today) gets one from
// the pool instead.
type preimageScratch struct {
	p    *scratchBuf // from scratchBufs, returned by done
	busy bool
	// r is the hash the decision's digests continue from midstates in,
	// from resumers on first use, returned by done.
	r *cjson.Resumer
}

// scratchBuf is a decision's preimage buffer and the verdict encoding it
// keeps between preimages.
type scratchBuf struct {
	b []byte
	// seen is the decision's plainSeen, cleared when pooled.
	seen    plainSeen
	verdict keptVerdict
	// kept reports whether verdict holds this decision's verdict.
	kept bool
}

var scratchBufs = sync.Pool{New: func() any { return new(scratchBuf) }}

// keptVerdict is an eligibility verdict with its canonical encoding as
// the published batch's preimage has it. The policy-verdict evidence
// writes the same verdict again; written from the batch's bytes, it is
// not encoded (its strings tested and copied one by one) a second time.
// The bytes stand only for a verdict equal, member by member, to the one
// they were written from (sameVerdict).
type keptVerdict struct {
	v   protocol.EligibilityVerdict
	enc []byte
}

// keepVerdict records enc as v's encoding for the rest of the decision
// (the buffer is lent: s.p is set).
func (s *preimageScratch) keepVerdict(v protocol.EligibilityVerdict, enc []byte) {
	k := &s.p.verdict
	k.v, k.enc, s.p.kept = v, append(k.enc[:0], enc...), true
}

// keptEncoding is v's encoding when the batch check wrote an equal
// verdict in this decision.
func (s *preimageScratch) keptEncoding(v *protocol.EligibilityVerdict) ([]byte, bool) {
	if s == nil || s.p == nil || !s.p.kept || !sameVerdict(&s.p.verdict.v, v) {
		return nil, false
	}
	return s.p.verdict.enc, true
}

// sameVerdict reports whether a and b have the same members
// (TestSameVerdictComparesEveryMember).
func sameVerdict(a, b *protocol.EligibilityVerdict) bool {
	return a.Kind == b.Kind && a.VerdictID == b.VerdictID && a.ProposalID == b.ProposalID && a.Status == b.Status &&
		a.CauseID == b.CauseID && a.RuleSetVersion == b.RuleSetVersion && slices.Equal(a.SupportDerivationIDs, b.SupportDerivationIDs)
}

// resumer returns the decision's hash for continuing from a midstate.
func (s *preimageScratch) resumer() *cjson.Resumer {
	if s.r == nil {
		s.r = cjson.GetResumer()
	}
	return s.r
}

// plainSeen returns the decision's plainSeen, in the buffer taken from
// scratchBufs for the decision (taken now if not yet).
func (s *preimageScratch) plainSeen() *plainSeen {
	if s.p == nil {
		s.p = scratchBufs.Get().(*scratchBuf)
	}
	return &s.p.seen
}

// take lends the buffer, with room for at least n bytes, or reports
// false while it is lent out.
func (s *preimageScratch) take(n int) ([]byte, bool) {
	if s.busy {
		return nil, false
	}
	if s.p == nil {
		s.p = scratchBufs.Get().(*scratchBuf)
	}
	s.busy = true
	b := s.p.b[:0]
	if cap(b) < n {
		b = make([]byte, 0, max(n, 1024))
	}
	return b, true
}

// done hands the buffer back to scratchBufs at the end of the decision.
func (s *preimageScratch) done() {
	if s.p != nil && !s.busy && cap(s.p.b) <= 64<<10 {
		// The kept verdict and the strings found plain hold nothing of
		// the caller's while pooled.
		s.p.verdict.v, s.p.kept = protocol.EligibilityVerdict{}, false
		s.p.seen = plainSeen{}
		scratchBufs.Put(s.p)
	}
	s.p = nil
	if s.r != nil {
		cjson.PutResumer(s.r)
		s.r = nil
	}

}

// plainSeen remembers strings of at least seenMin bytes that cjson.Plain
// accepted. Plain is a function of a string's bytes alone, so a string
// equal to a remembered one is plain too: a hit skips the test whatever
// the string's origin. A slot is chosen by a multiplicative hash of the
// string's last eight bytes (the random end of a digest or id) and its
// length (a batch's id, digest and cause id end alike), and is
// overwritten by the next string that lands on it, so a collision only
// costs a test. A decision writes the same proposal id,
// batch id, profile and action digests into several preimages; comparing
// an id with the remembered copy (the same bytes, usually the same
// pointer) costs less than testing it again.
type plainSeen [32]string

// seenMin is the shortest string plainSeen remembers: the digests and
// ids (70 to 75 bytes) that recur; a shorter string is tested in a few
// words, not much more than looking it up would cost.
const seenMin = 64

// slot is where s is remembered; len(s) >= seenMin.
func (m *plainSeen) slot(s string) *string {
	t := s[len(s)-8:]
	x := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
	return &m[((x^uint64(len(s)))*0x9e3779b97f4a7c15)>>59]
}

// remember notes s, a string known to need no escaping, so that a
// writer sharing m copies it without the test. Only a string that is
// plain may be remembered: one cjson.Plain accepted, or one this package
// made that way (a digest or id it cut from a hash sum, see known). A
// string shorter than seenMin is not remembered (strVal does not look it
// up).
func (m *plainSeen) remember(s string) {
	if len(s) >= seenMin {
		*m.slot(s) = s
	}
}

// strArena carves the strings one decision returns — its digests and ids
// — out of one buffer instead of allocating each on its own. Strings are
// only ever appended to the builder, so each one handed out stays as it
// was: a full builder is replaced, never overwritten, and the strings cut
// from it keep its array alive. A nil arena allocates each string.
type strArena struct {
	sb strings.Builder
	// seen, when set, serves every preimage of the decision (see
	// plainSeen); scratch, when set, is the buffer they are written in.
	seen    *plainSeen
	scratch *preimageScratch
	// memo, when set, is the caller's DigestMemo (Input.Memo): the
	// digests of preimages written in scratch are looked up in it and
	// recorded in it.
	memo *DigestMemo
}

// plain remembers s, which must need no escaping, in a's plainSeen (see
// plainSeen.remember): a digest or id the decision compared with one it
// computed, or computed itself, is then written without the test. A nil
// arena, or one without a plainSeen, remembers nothing.
func (a *strArena) plain(s string) {
	if a != nil && a.seen != nil && rememberPlain {
		a.seen.remember(s)
	}
}

// rememberPlain is false only in tests that hold decisions made with
// strings remembered as plain to the same decisions made without.
var rememberPlain = true

// writer is pooledWriter for a preimage of a's decision: its buffer is
// a's scratch when there is one and it is free, and its strings are
// tested through a's plainSeen. A nil arena's writer is pooledWriter's.
func (a *strArena) writer(n int) canonWriter {
	if a == nil {
		return pooledWriter(n)
	}
	if s := a.scratch; s != nil {
		if b, ok := s.take(n); ok {
			return canonWriter{b: b, seen: a.seen, home: s, memo: a.memo}
		}
	}
	w := pooledWriter(n)
	w.seen = a.seen
	return w
}

// arenaChunk is the size of an arena's buffer: about a decision's digests
// and ids (eleven of 70 or 71 bytes, and the idempotency key), its
// ticket's preview and its transition's cause.
const arenaChunk = 1536

// bytes returns p as a string.
func (a *strArena) bytes(p []byte) string {
	if a == nil {
		return string(p)
	}
	a.room(len(p))
	n := a.sb.Len()
	a.sb.Write(p)
	return a.sb.String()[n:]
}

// concat returns x + y as a string.
func (a *strArena) concat(x string, y []byte) string {
	if a == nil {
		return x + string(y)
	}
	a.room(len(x) + len(y))
	n := a.sb.Len()
	a.sb.WriteString(x)
	a.sb.Write(y)
	return a.sb.String()[n:]
}

// cat returns the concatenation of parts.
func (a *strArena) cat(parts ...string) string {
	if a == nil {
		return strings.Join(parts, "")
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	a.room(n)
	start := a.sb.Len()
	for _, p := range parts {
		a.sb.WriteString(p)
	}
	return a.sb.String()[start:]
}

// room makes sure n more bytes fit without the builder growing (growing
// would copy the strings already handed out into a new array for
// nothing): a full buffer is left to the strings cut from it.
func (a *strArena) room(n int) { a.roomFor(n, arenaChunk) }

// roomFor is room with a new buffer of chunk bytes or n, the larger.
func (a *strArena) roomFor(n, chunk int) {
	if a.sb.Cap()-a.sb.Len() < n {
		a.sb = strings.Builder{}
		a.sb.Grow(max(n, chunk))
	}
}

// preimageBufs recycles preimage buffers: a decision writes about a dozen
// preimages, each hashed once and then dropped. A buffer is always written
// from empty, so recycling changes no byte of any digest; it spares the
// allocator and the collector (the writer's buffer would otherwise always
// escape to the heap).
var preimageBufs = sync.Pool{New: func() any { return new([]byte) }}

// pooledWriter returns a writer whose buffer of at least n bytes comes
// from preimageBufs; digest returns it.
func pooledWriter(n int) canonWriter {
	p := preimageBufs.Get().(*[]byte)
	b := (*p)[:0]
	if cap(b) < n {
		b = make([]byte, 0, max(n, 1024))
	}
	return canonWriter{b: b, pooled: p}
}

// release hands a pooled buffer back; the writer keeps no reference to it.
func (w *canonWriter) release() {
	if h := w.home; h != nil {
		h.p.b, h.busy = w.b[:0], false
		w.b, w.home = nil, nil
		return
	}
	if w.pooled == nil {
		return
	}
	if cap(w.b) <= 64<<10 { // an outsized buffer is left to the collector
		*w.pooled = w.b[:0]
		preimageBufs.Put(w.pooled)
	}
	w.b, w.pooled = nil, nil
}

func (w *canonWriter) open() {
	w.b = append(w.b, '{')
	w.depth++
	if w.depth > len(w.last) {
		panic("authority: preimage nested too deep")
	}
	w.last[w.depth-1].n = 0
}

func (w *canonWriter) close() {
	w.b = append(w.b, '}')
	w.depth--
}

func (w *canonWriter) key(k string) {
	top := w.depth - 1
	b := w.b
	if l := w.last[top]; l.n != 0 {
		// Successive member names nearly always differ in their first
		// byte; only when k's is not greater are the names compared whole.
		if prev := b[l.off : l.off+l.n]; (k == "" || k[0] <= prev[0]) && k <= string(prev) && w.err == nil {
			w.err = &cjson.Error{Code: cjson.CodeDuplicateKey, Pointer: "/" + k, Detail: "preimage keys out of order (after " + string(prev) + ")"}
		}
		b = append(b, ',', '"')
	} else {
		b = append(b, '"')
	}
	w.last[top].off, w.last[top].n = int32(len(b)), int32(len(k))
	b = append(b, k...) // keys are this package's own ASCII member names
	b = append(b, '"', ':')
	w.set(b)
}

// set makes b, which was appended to from w.b, the writer's buffer. When
// nothing grew, b shares w.b's array and capacity, and only the length is
// stored (a slice of w.b assigned back to it): no pointer store, so no
// write barrier while the collector marks. Appending to a local copy
// instead of to w.b keeps the slice in registers between appends.
func (w *canonWriter) set(b []byte) {
	if cap(b) == cap(w.b) {
		w.b = w.b[:len(b)]
	} else {
		w.b = b
	}
}

// The template writers. A preimage of fixed shape is its constant
// fragments — punctuation, member names in canonical order, constant
// values — with the variable values between them: lit appends a fragment
// as it is, val a caller's string (checked as strVal checks it), ours a
// string this package wrote (see known), int and flag a number and a
// boolean. Nothing is checked at run time about a fragment: each
// template's bytes are held to cjson's encoding of the same members by
// TestTemplatesAreCjson, over generated values. A template writes no key
// through key, so it must not share an object level with one that does.
func (w *canonWriter) lit(s string) { w.set(append(w.b, s...)) }
func (w *canonWriter) val(s string) { w.strVal(s) }
func (w *canonWriter) ours(s string) {
	w.quoted(s)
}
func (w *canonWriter) oursBytes(s []byte) {
	b := append(w.b, '"')
	b = append(b, s...)
	w.set(append(b, '"'))
}
func (w *canonWriter) int(v int64) { w.set(cjson.AppendInt(w.b, v)) }
func (w *canonWriter) flag(v bool) {
	if v {
		w.lit("true")
	} else {
		w.lit("false")
	}
}

// vals writes an array of strings.
func (w *canonWriter) vals(vs []string) {
	w.set(append(w.b, '['))
	for i, v := range vs {
		if i > 0 {
			w.set(append(w.b, ','))
		}
		w.strVal(v)
	}
	w.set(append(w.b, ']'))
}

// quoted writes s between quotes; s needs no escaping.
func (w *canonWriter) quoted(s string) {
	b := append(w.b, '"')
	b = append(b, s...)
	b = append(b, '"')
	w.set(b)
}

func (w *canonWriter) strVal(s string) {
	if len(s) >= seenMin && w.seen != nil {
		slot := w.seen.slot(s)
		if *slot == s {
			w.quoted(s)
			return
		}
		if cjson.Plain(s) {
			*slot = s
			w.quoted(s)
			return
		}
	} else if cjson.Plain(s) {
		// Printable ASCII without '"' or '\\' needs no escaping and is NFC.
		w.quoted(s)
		return
	}
	b, ascii := cjson.AppendQuoted(w.b, s)
	if w.err == nil && !ascii {
		if err := cjson.CheckString(s, ""); err != nil {
			w.err = err
		}
	}
	w.set(b)
}

func (w *canonWriter) str(k, v string) { w.key(k); w.strVal(v) }

// lines writes a value that is text of lines, such as a preview: the
// bytes strVal writes. Escaping is byte by byte, so the quoted
// text is its lines' quoted forms joined by an escaped newline: a plain
// line is copied whole, any other is quoted on its own. A preview's lines
// are mostly plain, and the quoting loop would otherwise run byte by byte
// around every newline. Text that is not all ASCII is left to str.
func (w *canonWriter) lines(v string) {
	start := len(w.b)
	b := append(w.b, '"')
	for s := v; ; {
		i := strings.IndexByte(s, '\n')
		line := s
		if i >= 0 {
			line = s[:i]
		}
		if cjson.Plain(line) {
			b = append(b, line...)
		} else {
			n := len(b)
			var ascii bool
			if b, ascii = cjson.AppendQuoted(b, line); !ascii {
				w.set(b[:start])
				w.strVal(v)
				return
			}
			// Drop the quotes AppendQuoted put around the line.
			b = append(b[:n], b[n+1:len(b)-1]...)
		}
		if i < 0 {
			break
		}
		b = append(b, '\\', 'n')
		s = s[i+1:]
	}
	w.set(append(b, '"'))
}

// known writes a member whose value needs no check because of where it
// comes from, never because of what it looks like: a constant of this
// package (a preimage kind, a contract or ticket version, a transition
// id), or a digest or id this package has just written from a hash sum
// (mustDigest, mustDigestAs: a prefix and hex digits, or "invalid:" and an
// error code). All of these are printable ASCII with nothing to escape, so
// the bytes are those str would write, without scanning them. A value a
// caller supplied, even one checked earlier, goes through str.
func (w *canonWriter) known(k, v string) {
	w.key(k)
	w.quoted(v)
}
func (w *canonWriter) num(k string, v int64) { w.key(k); w.b = cjson.AppendInt(w.b, v) }
func (w *canonWriter) boolean(k string, v bool) {
	w.key(k)
	if v {
		w.b = append(w.b, "true"...)
	} else {
		w.b = append(w.b, "false"...)
	}
}

// raw writes a member whose value is already canonical bytes.
func (w *canonWriter) raw(k string, v []byte) { w.key(k); w.b = append(w.b, v...) }

func (w *canonWriter) strOrNull(k string, v *string) {
	if v == nil {
		w.key(k)
		w.b = append(w.b, "null"...)
		return
	}
	w.str(k, *v)
}

func (w *canonWriter) strs(k string, vs []string) {
	w.key(k)
	w.b = append(w.b, '[')
	for i, v := range vs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.strVal(v)
	}
	w.b = append(w.b, ']')
}

// value writes a value of the canonical model (map[string]any, []any,
// string, int64, bool, nil) with sorted keys; anything else is recorded as
// an error. Set-like arrays are not special here: parameters are
// application data and keep their order.
// object writes the map m, keys its names in sorted order.
func (w *canonWriter) object(m map[string]any, keys []string) {
	w.b = append(w.b, '{')
	for i, k := range keys {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if !isASCII(k) && w.err == nil {
			w.err = &cjson.Error{Code: cjson.CodeNonASCIIKey, Detail: "object keys must be ASCII"}
		}
		w.strVal(k)
		w.b = append(w.b, ':')
		w.value(m[k])
	}
	w.b = append(w.b, '}')
}

func (w *canonWriter) value(v any) {
	switch x := v.(type) {
	case nil:
		w.b = append(w.b, "null"...)
	case bool:
		w.b = strconv.AppendBool(w.b, x)
	case int64:
		w.b = strconv.AppendInt(w.b, x, 10)
	case string:
		w.strVal(x)
	case []any:
		w.b = append(w.b, '[')
		for i, e := range x {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.value(e)
		}
		w.b = append(w.b, ']')
	case map[string]any:
		w.object(x, sortedKeys(x))
	default:
		if w.err == nil {
			w.err = &cjson.Error{Code: cjson.CodeUnsupportedType, Pointer: "", Detail: fmt.Sprintf("%T is not in the canonical value model", v)}
		}
	}
}

// isASCII reports whether s is all ASCII, which is valid UTF-8 and in NFC.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// digest returns the sha256 digest of what was written.
func (w *canonWriter) digest() (string, error) { return w.digestIn(nil) }

// digestIn is digest with the string carved from a.
func (w *canonWriter) digestIn(a *strArena) (string, error) {
	out, err := w.sum()
	if err != nil {
		return "", err
	}
	return a.bytes(out[:]), nil
}

// sum is digest without the string: the digest's bytes ("sha256:" and
// the hex digits) in a fixed array, for a digest that is only compared
// with a recorded one, so that checking it allocates nothing
// (string(out[:]) in a comparison is not copied).
func (w *canonWriter) sum() (out [7 + 64]byte, err error) {
	if w.err != nil {
		w.release()
		return out, w.err
	}
	sum := w.sum256()
	w.release()
	copy(out[:], "sha256:")
	cjson.HexSum((*[64]byte)(out[7:]), &sum)
	return out, nil
}

// sum256 is the SHA-256 of what was written, continued from w.from's
// state when the bytes begin with its prefix.
func (w *canonWriter) sum256() [sha256.Size]byte {
	m := w.memo
	if m == nil {
		return w.hash()
	}
	if sum, ok := m.lookup(w.b); ok {
		return sum
	}
	sum := w.hash()
	m.add(w.b, sum)
	return sum
}

// hash is the SHA-256 of what was written, continued from w.from's
// state when the bytes begin with its prefix.
func (w *canonWriter) hash() [sha256.Size]byte {
	if w.from == nil && w.cache == nil {
		return sha256.Sum256(w.b)
	}
	var r *cjson.Resumer
	if w.home != nil {
		r = w.home.resumer()
	}
	if w.cache != nil {
		return w.cache.Sum256(w.b, w.opening, r)
	}
	return w.from.Sum256(w.b, r)
}

// mustDigestAs returns prefix + hexOf(w.mustDigest()) as one allocation:
// the id forms ("ticket:…", "event:…", "intent:…") of a digest that is
// needed only as an id.
func (w *canonWriter) mustDigestAs(prefix string) string { return w.mustDigestAsIn(nil, prefix) }

// mustDigestAsIn is mustDigestAs with the string carved from a.
func (w *canonWriter) mustDigestAsIn(a *strArena, prefix string) string {
	if w.err != nil || len(prefix) > 32 {
		return prefix + hexOf(w.mustDigest())
	}
	sum := w.sum256()
	w.release()
	var out [32 + 64]byte
	n := copy(out[:], prefix)
	cjson.HexSum((*[64]byte)(out[n:n+64]), &sum)
	return a.bytes(out[:n+64])
}

func (w *canonWriter) mustDigest() string { return w.mustDigestIn(nil) }

// mustDigestIn is mustDigest with the string carved from a.
func (w *canonWriter) mustDigestIn(a *strArena) string {
	d, err := w.digestIn(a)
	if err != nil {
		return invalidDigest(err)
	}
	return d
}

// keptVersions is a version envelope with its encoding as versions
// writes it.
type keptVersions struct {
	v   protocol.VersionEnvelope
	enc []byte
}

// recentVersions holds the envelopes most recently written, with their
// encodings: the proposals of a run, and of every decision of it, carry
// the same one. It is consulted by comparing the envelope member by
// member (== on its strings), so what it holds changes no byte, only
// whether the thirteen strings are tested and copied one by one or the
// encoding of equal strings is copied whole. It is process-wide, like
// the snapshots' openings (snapshotOpenings): slots are read and replaced
// atomically, a stored entry never changes, and the zero value is ready.
var recentVersions struct {
	slots [4]atomic.Pointer[keptVersions]
	next  atomic.Uint32
}

// versions writes a version envelope.
func (w *canonWriter) versions(v protocol.VersionEnvelope) {
	for i := range recentVersions.slots {
		if k := recentVersions.slots[i].Load(); k != nil && k.v == v {
			w.set(append(w.b, k.enc...))
			return
		}
	}
	start := len(w.b)
	w.versionsWritten(v)
	if w.err == nil {
		k := &keptVersions{v: v, enc: slices.Clone(w.b[start:])}
		recentVersions.slots[recentVersions.next.Add(1)%uint32(len(recentVersions.slots))].Store(k)
	}
}

// versionsWritten is versions, each member written.
func (w *canonWriter) versionsWritten(v protocol.VersionEnvelope) {
	w.lit(`{"canonicalization":`)
	w.val(v.Canonicalization)
	w.lit(`,"composition_profile":`)
	w.val(v.CompositionProfile)
	w.lit(`,"dataflow":`)
	w.val(v.Dataflow)
	w.lit(`,"event_schema":`)
	w.val(v.EventSchema)
	w.lit(`,"gate":`)
	w.val(v.Gate)
	w.lit(`,"graph_schema":`)
	w.val(v.GraphSchema)
	w.lit(`,"model":`)
	w.val(v.Model)
	w.lit(`,"oracle":`)
	w.val(v.Oracle)
	w.lit(`,"resolver":`)
	w.val(v.Resolver)
	w.lit(`,"rule_set":`)
	w.val(v.RuleSet)
	w.lit(`,"state_schema":`)
	w.val(v.StateSchema)
	w.lit(`,"tool":`)
	w.val(v.Tool)
	w.lit(`,"workflow":`)
	w.val(v.Workflow)
	w.lit(`}`)
}

func (w *canonWriter) batch(b protocol.StableProposalBatch) {
	w.lit(`{"batch_digest":`)
	w.val(b.BatchDigest)
	w.lit(`,"batch_id":`)
	w.val(b.BatchID)
	w.lit(`,"cause_id":`)
	w.val(b.CauseID)
	w.lit(`,"dataflow_version":`)
	w.val(b.DataflowVersion)
	w.lit(`,"eligibility_verdict_ids":`)
	w.vals(b.EligibilityVerdictIDs)
	w.lit(`,"kind":`)
	w.val(b.Kind)
	w.lit(`,"logical_time":`)
	w.int(b.LogicalTime)
	w.lit(`,"low_watermark":`)
	w.int(b.LowWatermark)
	w.lit(`,"proposal_ids":`)
	w.vals(b.ProposalIDs)
	w.lit(`}`)
}

func (w *canonWriter) proposal(p protocol.EffectProposal) {
	w.lit(`{"action_digest":`)
	w.val(p.ActionDigest)
	w.lit(`,"cause_id":`)
	w.val(p.CauseID)
	w.lit(`,"correlation_id":`)
	w.val(p.CorrelationID)
	w.lit(`,"declared_risk_hint":`)
	w.val(p.DeclaredRiskHint)
	w.lit(`,"destination_digest":`)
	w.val(p.DestinationDigest)
	w.lit(`,"effect_type":`)
	w.val(p.EffectType)
	w.lit(`,"goal_id":`)
	w.val(p.GoalID)
	w.lit(`,"kind":`)
	w.val(p.Kind)
	w.lit(`,"obligation_id":`)
	w.val(p.ObligationID)
	w.lit(`,"preconditions":`)
	w.vals(p.Preconditions)
	w.lit(`,"proposal_dedup_key":`)
	w.val(p.ProposalDedupKey)
	w.lit(`,"proposal_id":`)
	w.val(p.ProposalID)
	w.lit(`,"versions":`)
	w.versions(p.Versions)
	w.lit(`}`)
}

func (w *canonWriter) verdict(v protocol.EligibilityVerdict) {
	w.lit(`{"cause_id":`)
	w.val(v.CauseID)
	w.lit(`,"kind":`)
	w.val(v.Kind)
	w.lit(`,"proposal_id":`)
	w.val(v.ProposalID)
	w.lit(`,"rule_set_version":`)
	w.val(v.RuleSetVersion)
	w.lit(`,"status":`)
	w.val(v.Status)
	w.lit(`,"support_derivation_ids":`)
	w.vals(v.SupportDerivationIDs)
	w.lit(`,"verdict_id":`)
	w.val(v.VerdictID)
	w.lit(`}`)
}

// publishedBatchSize bounds the length of a published batch's preimage
// for plain strings (members' names and punctuation plus their values),
// so the buffer is allocated once at the right size rather than grown.
func publishedBatchSize(b PublishedBatch) int {
	strs := func(ss []string) int {
		n := 0
		for _, s := range ss {
			n += len(s) + 3
		}
		return n
	}
	bt := b.Batch
	n := 512 + len(bt.BatchDigest) + len(bt.BatchID) + len(bt.CauseID) + len(bt.DataflowVersion) + len(bt.Kind) +
		strs(bt.EligibilityVerdictIDs) + strs(bt.ProposalIDs)
	for _, p := range b.Proposals {
		v := p.Versions
		n += 640 + len(p.ActionDigest) + len(p.CauseID) + len(p.CorrelationID) + len(p.DeclaredRiskHint) +
			len(p.DestinationDigest) + len(p.EffectType) + len(p.GoalID) + len(p.Kind) + len(p.ObligationID) +
			strs(p.Preconditions) + len(p.ProposalDedupKey) + len(p.ProposalID) +
			len(v.Canonicalization) + len(v.CompositionProfile) + len(v.Dataflow) + len(v.EventSchema) + len(v.Gate) +
			len(v.GraphSchema) + len(v.Model) + len(v.Oracle) + len(v.Resolver) + len(v.RuleSet) + len(v.StateSchema) +
			len(v.Tool) + len(v.Workflow)
	}
	for _, v := range b.Verdicts {
		n += 160 + len(v.CauseID) + len(v.Kind) + len(v.ProposalID) + len(v.RuleSetVersion) + len(v.Status) +
			strs(v.SupportDerivationIDs) + len(v.VerdictID)
	}
	return n
}

// publishedBatchDigest is PublishedBatchDigest without reflection; it
// fails (rather than panics) on a string that is not canonical.
func publishedBatchDigest(b PublishedBatch) (string, error) {
	w := pooledWriter(publishedBatchSize(b))
	w.publishedBatch(b)
	return w.digest()
}

// publishedBatchSum is publishedBatchDigest as a fixed array, for the
// check against the digest a batch carries.
func publishedBatchSum(b PublishedBatch, a *strArena) ([7 + 64]byte, error) {
	w := a.writer(publishedBatchSize(b))
	w.publishedBatch(b)
	return w.sum()
}

// publishedBatch writes a published batch's preimage.
func (w *canonWriter) publishedBatch(b PublishedBatch) {
	w.lit(`{"batch":`)
	w.batch(b.Batch)
	w.lit(`,"contract_version":"` + reactiveContract + `","kind":"M3PublishedBatchPreimage","ordered_effect_proposals":[`)
	for i, p := range b.Proposals {
		if i > 0 {
			w.lit(`,`)
		}
		w.proposal(p)
	}
	w.lit(`],"ordered_eligibility_verdicts":[`)
	for i, v := range b.Verdicts {
		if i > 0 {
			w.lit(`,`)
		}
		start := len(w.b)
		w.verdict(v)
		if len(b.Verdicts) == 1 && w.home != nil && w.err == nil {
			// A batch of one: its verdict is written again, in the
			// policy-verdict evidence.
			w.home.keepVerdict(v, w.b[start:])
		}
	}
	w.lit(`]}`)
}
