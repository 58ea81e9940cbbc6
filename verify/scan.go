package verify

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/runner"
)

// stepInputs reads from a stored control record what re-stepping it needs:
// the event it met and the guard inputs it was judged on. Every other
// member is passed over; the re-stepped record, compared byte for byte
// with the stored one, answers for them.
//
// The names a record repeats (event type, actor role, capability, evidence
// and guard input names) are read through m.Name, which gives the table's
// own copy of a name the table declares instead of a new string each time;
// the values read are the same with m nil.
func stepInputs(m *control.Machine, b []byte) (control.Record, bool) {
	return stepInputsInto(m, b, nil)
}

// stepScratch is what stepInputsInto reuses from one record to the next:
// the evidence and guard-input maps it fills, and where it found the
// evidence values. A record read into them holds them only until the next
// record is read.
type stepScratch struct {
	evidence map[string]string
	guards   map[string]bool
	values   []keptValue
	// openings are the midstates of the control records' openings met
	// so far (see bodySum), by their bytes, kept from run to run;
	// resumer is the hash they are continued in.
	openings map[string]*cjson.Midstate
	resumer  *cjson.Resumer
}

// maxOpenings bounds how many openings a stepScratch keeps: a table's
// transitions give a few dozen; records that are not the runner's could
// give any number, and past the bound are hashed whole.
const maxOpenings = 128

// eventIDKey is the member a control record's event id follows.
var eventIDKey = []byte(`,"event_id":"`)

// bodySum is sha256.Sum256 of an event's body. A control record opens
// with the same bytes as every record of its transition (its acceptance,
// actor role, capability, effects and event, about two blocks of twelve)
// up to its event id: the whole blocks before the event id are hashed
// once, and a later record that opens with those very bytes continues
// from the hash's state after them (cjson.Midstate, which compares the
// bytes before it uses the state). Every sum is the one sha256.Sum256
// gives; which opening is kept changes only how much is hashed
// (TestBodySumIsSum256). Other events are hashed whole.
func (x *stepScratch) bodySum(kind string, b []byte) [sha256.Size]byte {
	if !openingsKept || kind != runner.EventControl && kind != runner.EventRejected {
		return sha256.Sum256(b)
	}
	i := bytes.Index(b, eventIDKey)
	n := (i + len(eventIDKey)) &^ (sha256.BlockSize - 1)
	if i < 0 || n == 0 {
		return sha256.Sum256(b)
	}
	m, found := x.openings[string(b[:n])]
	if !found {
		if len(x.openings) >= maxOpenings {
			return sha256.Sum256(b)
		}
		if x.openings == nil {
			x.openings = map[string]*cjson.Midstate{}
		}
		m = cjson.NewMidstate(string(b[:n])) // nil where SHA-256 cannot resume
		x.openings[string(b[:n])] = m
	}
	if m == nil {
		return sha256.Sum256(b)
	}
	if x.resumer == nil {
		x.resumer = cjson.GetResumer()
	}
	return m.Sum256(b, x.resumer)
}

// openingsKept is whether bodySum continues from kept openings; tests
// turn it off to compare.
var openingsKept = true

// stepPool holds the scratch space of checkEvents' step inputs for the
// next run to reuse, empty.
var stepPool = sync.Pool{New: func() any { return new(stepScratch) }}

// release empties x (its maps keep no record's strings alive) and hands it
// back to stepPool.
func (x *stepScratch) release() {
	clear(x.evidence)
	clear(x.guards)
	clear(x.values[:cap(x.values)])
	x.values = x.values[:0]
	stepPool.Put(x)
}

// keptValue is a string value a record holds: its bytes' place in the
// record (at -1: copied into text instead), and for an evidence value its
// name.
type keptValue struct {
	name  string
	at, n int
	text  string
}

// stepInputsInto is stepInputs, reading the record's evidence and guard
// inputs into x's maps, cleared first, instead of new ones (x nil: new
// ones, as stepInputs). The event id and the evidence values, which a
// canonical record holds side by side, are cut from one string copy of
// the bytes from the first to the last of them instead of a string each.
// The record is the same, value for value, as stepInputs reads
// (TestStepInputsIntoMatchesTheScanner).
func stepInputsInto(m *control.Machine, b []byte, x *stepScratch) (control.Record, bool) {
	var rec control.Record
	if x == nil {
		x = new(stepScratch)
	}
	var id keptValue // the event id
	values := x.values[:0]
	// place finds v, which StrBytes cut from b without copying, in b: its
	// offset is where its capacity starts. Anything else is copied.
	place := func(v []byte) keptValue {
		if len(v) == 0 {
			return keptValue{}
		}
		if at := cap(b) - cap(v); at >= 0 && at+len(v) <= len(b) && &b[at] == &v[0] {
			return keptValue{at: at, n: len(v)}
		}
		return keptValue{at: -1, text: string(v)}
	}
	s := jsonread.NewScanner(b)
	s.Object(func(k []byte) {
		switch string(k) {
		case "event":
			rec.Event = m.Name(s.StrBytes())
		case "actor_role":
			rec.ActorRole = m.Name(s.StrBytes())
		case "capability":
			rec.Capability = m.Name(s.StrBytes())
		case "event_id":
			id = place(s.StrBytes())
		case "evidence":
			if x.evidence == nil {
				x.evidence = map[string]string{}
			}
			rec.Evidence, values = x.evidence, values[:0]
			s.Object(func(k []byte) {
				name := m.Name(k)
				v := place(s.StrBytes())
				v.name = name
				values = append(values, v)
			})
		case "guard_inputs":
			if x.guards == nil {
				x.guards = map[string]bool{}
			}
			rec.GuardInputs = x.guards
			clear(rec.GuardInputs)
			s.Object(func(k []byte) { rec.GuardInputs[m.Name(k)] = s.Bool() })
		default:
			s.Skip()
		}
	})
	x.values = values
	if !s.End() {
		return control.Record{}, false
	}
	lo, hi := len(b), 0
	for _, v := range append(values, id) {
		if v.n > 0 {
			lo, hi = min(lo, v.at), max(hi, v.at+v.n)
		}
	}
	var text string
	if lo < hi {
		text = string(b[lo:hi])
	}
	cut := func(v keptValue) string {
		if v.n == 0 {
			return v.text
		}
		return text[v.at-lo : v.at-lo+v.n]
	}
	rec.EventID = cut(id)
	if rec.Evidence != nil {
		clear(rec.Evidence)
		for _, v := range values { // in order: a name given twice keeps its last value
			rec.Evidence[v.name] = cut(v)
		}
	}
	return rec, true
}

// approvalDigest reads an intent's approval_digest member: a string, or
// nil when it is null or absent.
func approvalDigest(b []byte) (*string, bool) {
	var d *string
	s := jsonread.NewScanner(b)
	s.Object(func(k []byte) {
		if string(k) != "approval_digest" {
			s.Skip()
			return
		}
		if s.Peek() == 'n' {
			s.Word("null")
			d = nil
			return
		}
		v := s.Str()
		d = &v
	})
	return d, s.End()
}

// acceptedMembers are the members of an accepted-input record the fast
// reader knows; a record with any other (a usage report, say) is left to
// runner.DecodeAccepted.
var acceptedMembers = []string{"seq", "kind", "actor", "actor_role", "capability", "digest", "body"}

// decodeAccepted is runner.DecodeAccepted without encoding/json for a
// record made only of plain members: the strings without escapes and
// valid UTF-8, the sequence an integer. Anything else is decoded by
// runner.DecodeAccepted, whose result and error stand.
func decodeAccepted(event []byte) (runner.Accepted, error) { return decodeAcceptedAs(event, false) }

// decodeAcceptedAs is decodeAccepted for a record the verifier may have
// found canonical as a whole (canonical true: cjson.Canonicalize of the
// record gives the record itself), which then answers for its body too.
func decodeAcceptedAs(event []byte, canonical bool) (runner.Accepted, error) {
	m, ok := jsonread.OnlyMembers(event, acceptedMembers...)
	return decodeAcceptedMembers(event, m, ok, canonical, nil)
}

// decodeAcceptedMembers is decodeAcceptedAs of a record whose members
// acceptedMembers name were read as m (ok false: the member reader gave
// up on the record). read, when not nil, is what acceptedInputFrom read
// of the same members: a receipt's digest it read is taken from there
// rather than made again.
func decodeAcceptedMembers(event []byte, m [][]byte, ok, canonical bool, read *acceptedInput) (runner.Accepted, error) {
	var in runner.Accepted
	// The texts of the actor, role, capability and digest (members 2 to
	// 5), read without a copy and made one string, each cut from it.
	var texts [4][]byte
	digestRead := false
	for i := 0; ok && i < len(m); i++ {
		if m[i] == nil || i == 6 {
			continue // absent: the zero value, as encoding/json leaves it
		}
		if i == 0 {
			s := jsonread.NewScanner(m[i])
			in.Seq = s.Int()
			ok = s.End()
			continue
		}
		// A string encoding/json reads as its own bytes: without
		// escapes and valid UTF-8 (encoding/json replaces invalid bytes
		// with U+FFFD, which runner.DecodeAccepted then gives).
		switch {
		case i == 1:
			in.Kind, ok = kindText(m[i])
		case i == 5 && read != nil && read.read && read.digestRead && read.kind == "receipt":
			// PlainString's reading of these bytes; PlainText's when
			// they are valid UTF-8.
			in.Digest, ok, digestRead = read.digest, utf8.ValidString(read.digest), true
		default:
			texts[i-2], ok = jsonread.PlainTextBytes(m[i])
		}
	}
	if !ok {
		return runner.DecodeAccepted(event)
	}
	if digestRead {
		texts[3] = nil
	}
	if n := len(texts[0]) + len(texts[1]) + len(texts[2]) + len(texts[3]); n > 0 {
		var b strings.Builder
		b.Grow(n)
		for _, t := range texts {
			b.Write(t)
		}
		all, at := b.String(), 0
		for k, dst := range [4]*string{&in.Actor, &in.ActorRole, &in.Capability, &in.Digest} {
			if k == 3 && digestRead {
				break
			}
			*dst, at = all[at:at+len(texts[k])], at+len(texts[k])
		}
	}
	// The runner stores inputs canonical, so replay copies a body whose
	// canonical form is known to be itself instead of decoding and
	// encoding it again. Anything else is canonicalized, whose error
	// stands.
	if bodyCanonical(m[6], canonical, event) {
		in.Body = bytes.Clone(m[6])
		return in, nil
	}
	body, err := cjson.Canonicalize(m[6])
	if err != nil {
		return runner.Accepted{}, fmt.Errorf("%w: %v", runner.ErrInputNotCanonical, err)
	}
	in.Body = body
	return in, nil
}

// runnerKinds are the kinds of the inputs a runner accepts, each as the
// text of a record's kind member spells it plainly.
var runnerKinds = func() map[string]string {
	kinds := map[string]string{}
	for _, k := range []string{runner.KindInput, runner.KindChoice, runner.KindControl, runner.KindApprove,
		runner.KindDeny, runner.KindCancel, runner.KindReconcile, "receipt"} {
		kinds[`"`+k+`"`] = k
	}
	return kinds
}()

// kindText is jsonread.PlainText of a record's kind member, without a
// copy of its text for a kind the runner names.
func kindText(raw []byte) (string, bool) {
	if k, ok := runnerKinds[string(raw)]; ok {
		return k, true
	}
	return jsonread.PlainText(raw)
}

// bodyCanonical reports whether cjson.Canonicalize of an accepted input's
// body would give the body itself, answering false whenever that is not
// established (the caller then canonicalizes).
//
// A body sits one level below the root of its record, where no array is
// a set: when the whole record is canonical (recordCanonical), the body
// is canonical as a value nested there, and so on its own, unless its own
// root kind names set-like arrays, which on its own are sorted (a
// receipt's body, an ActionReceipt, names one). Such a body is its own
// canonical form when each of those arrays is already in the order
// Canonicalize writes a set in: elements' canonical texts strictly
// increasing. A body whose kind cannot be read plainly, or one with no
// sets that no record vouches for, is checked by cjson.IsCanonical, which
// answers exactly that question (FuzzIsCanonical holds it to
// Canonicalize). A body with sets in order that no record vouches for has
// its record checked by cjson.IsCanonical: one pass over a record whose
// root names no set costs less than canonicalizing the body.
func bodyCanonical(body []byte, recordCanonical bool, record []byte) bool {
	if recordCanonical {
		if canonical, known := canonicalBodySets(body); known {
			return canonical
		}
	}
	return bodyCanonicalWhole(body, recordCanonical, record)
}

// bodyCanonicalWhole is bodyCanonical reading the whole body.
func bodyCanonicalWhole(body []byte, recordCanonical bool, record []byte) bool {
	paths, known := rootKindSets(body)
	switch {
	case !known:
		return cjson.IsCanonical(body)
	case len(paths) > 0:
		// IsCanonical(body) would hand such a body to Canonicalize.
		return setsInOrder(body, paths) && (recordCanonical || cjson.IsCanonical(record))
	case recordCanonical:
		return true
	}
	return cjson.IsCanonical(body)
}

// canonicalBodySets is bodyCanonical of a body whose record is canonical,
// reading the body only as far as its kind and its set-like members:
// nested in a canonical record, the body's keys are unique and in
// increasing byte order and every value in it is canonical where it
// stands, so its kind is its member "kind" and the members read by
// jsonread.SortedMembers are those jsonread.Members would read. known is
// false where it cannot say (the body is not an object the reader reads,
// its kind has escapes, a set's name sorts before "kind"); the caller
// then reads the body whole.
func canonicalBodySets(body []byte) (canonical, known bool) {
	v, next, ok := jsonread.SortedMember(body, 0, "kind")
	if !ok {
		return false, false
	}
	if v == nil || v[0] != '"' {
		return true, true // no kind, or not a string: no sets
	}
	// The kind's bytes, read in place as PlainString reads them: a kind
	// already asked of is looked up without a string made of them.
	ks := jsonread.NewScanner(v)
	kind := ks.StrBytes()
	if !ks.End() {
		return false, false
	}
	names, ok := setNamesAfterKind(kind)
	switch {
	case !ok:
		return false, false
	case len(names) == 0, next < 0:
		return true, true // no sets, or nothing after the kind: every set absent
	}
	var vals [4][]byte
	if len(names) > len(vals) {
		return false, false
	}
	if _, ok = jsonread.SortedMembersTo(vals[:], body, next, names...); !ok {
		return false, false
	}
	return elementsIncrease(vals[:len(names)]), true
}

// setNames holds, for each kind with set-like paths that
// setNamesAfterKind was asked of, its answer: the sets' member names in
// increasing order, or nil when canonicalBodySets cannot read them. A
// stored map is never changed: a kind is added to a copy, which replaces
// it (kinds are few, and each is added once).
var setNames atomic.Pointer[map[string][]string]

// setNamesAfterKind returns the root member names of kind's set-like paths
// (cjson.SetLikePaths), sorted, when each is a root member named after
// "kind"; ok is false otherwise.
func setNamesAfterKind(kindBytes []byte) (names []string, ok bool) {
	if m := setNames.Load(); m != nil {
		if names, found := (*m)[string(kindBytes)]; found {
			return names, names != nil
		}
	}
	kind := string(kindBytes)
	paths := cjson.SetLikePaths(kind)
	if len(paths) == 0 {
		return nil, true // not kept: kinds without sets are any strings
	}
	names = make([]string, len(paths))
	for i, p := range paths {
		if len(p) < 2 || p[0] != '/' || strings.ContainsAny(p[1:], "/~") || p[1:] <= "kind" {
			names = nil
			break
		}
		names[i] = p[1:]
	}
	if names != nil {
		slices.Sort(names)
		if len(slices.Compact(slices.Clone(names))) != len(names) {
			names = nil
		}
	}
	for {
		old := setNames.Load()
		next := map[string][]string{}
		if old != nil {
			maps.Copy(next, *old)
		}
		next[kind] = names
		if setNames.CompareAndSwap(old, &next) {
			break
		}
	}
	return names, names != nil
}

// rootKindSets returns the set-like paths (cjson.SetLikePaths) of a JSON
// text's root kind: none when it is an object without a "kind" member or
// with one that is not a string. known is false when the member reader
// cannot say: the text is not an object it reads, or its kind is a string
// with escapes.
func rootKindSets(text []byte) (paths []string, known bool) {
	m, ok := jsonread.Members(text, "kind")
	if !ok {
		return nil, false
	}
	if m[0] == nil || m[0][0] != '"' {
		return nil, true // no kind, or not a string: no sets
	}
	kind, ok := jsonread.PlainString(m[0])
	if !ok {
		return nil, false
	}
	return cjson.SetLikePaths(kind), true
}

// setsInOrder reports whether each set-like root member the paths name
// (each "/name") is absent or an array whose elements' texts, canonical
// where they stand, strictly increase: the order, without duplicates, in
// which cjson writes a set. Anything else (a member that is not an array,
// elements out of order or repeated) is false, for Canonicalize to sort
// or refuse.
func setsInOrder(body []byte, paths []string) bool {
	names := make([]string, len(paths))
	for i, p := range paths {
		if len(p) < 2 || p[0] != '/' || strings.ContainsAny(p[1:], "/~") {
			return false
		}
		names[i] = p[1:]
	}
	m, ok := jsonread.Members(body, names...)
	return ok && elementsIncrease(m)
}

// elementsIncrease reports whether each of the values m holds is absent
// (nil) or an array whose elements' texts strictly increase.
// Each element is compared with the one before as the array is read
// (jsonread.EachElement), where the elements were gathered in a list.
func elementsIncrease(m [][]byte) bool {
	for _, v := range m {
		if v == nil {
			continue
		}
		var prev []byte
		n, increase := 0, true
		ok := jsonread.EachElement(v, func(el []byte) {
			if n > 0 && bytes.Compare(prev, el) >= 0 {
				increase = false
			}
			prev, n = el, n+1
		})
		if !ok || !increase {
			return false
		}
	}
	return true
}
