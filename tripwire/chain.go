package tripwire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
)

// GenesisHash is the chain hash of a run before its first event.
const GenesisHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// ChainHash is the event chain's link hash: the preimage names its kind
// and version, then the previous hash, the sequence number and the event
// digest. The store computes the same function; a test holds the two
// together, and the wire recomputes it independently of whoever wrote it.
func ChainHash(prev string, seq int64, digest string) string {
	var text [hashLen]byte
	return string(appendChainHash(text[:0], prev, seq, digest))
}

// hashLen is the length of a hash's text, "sha256:" and 64 hex digits.
const hashLen = len("sha256:") + 2*sha256.Size

// appendChainHash appends ChainHash(prev, seq, digest) to dst. The
// preimage is written into an array on the stack (it spills to the heap
// only for a prev or digest far longer than a hash).
func appendChainHash[P string | []byte](dst []byte, prev P, seq int64, digest string) []byte {
	var buf [len(chainPrefix) + 2*hashLen + 24]byte
	b := append(buf[:0], chainPrefix...)
	b = append(b, prev...)
	b = append(b, 0)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, 0)
	b = append(b, digest...)
	sum := sha256.Sum256(b)
	dst = append(dst, "sha256:"...)
	return hex.AppendEncode(dst, sum[:])
}

const chainPrefix = "flrh-event-chain/1\x00"

// checkAppendOnly: the tick's control records extend the checkpoint's
// control history exactly and lead where the checkpoint says; the stored
// event chain only ever grows from the head this runner knew, and every
// link recomputes.
func checkAppendOnly(s *Set, b *Boundary, f *finder) {
	if b.Phase == PhaseCommit {
		checkControlChain(s, b, f)
	}
	c := b.Chain
	if c.Observed.Seq < c.Known.Seq {
		f.trip("/chain/observed/seq", fmt.Sprintf("the run's log shrank from %d to %d events", c.Known.Seq, c.Observed.Seq),
			evidenceDigest("known", c.Known), evidenceDigest("observed", c.Observed))
		return
	}
	if c.Observed.Seq == c.Known.Seq && c.Known.Hash != "" && c.Observed.Hash != "" && c.Known.Hash != c.Observed.Hash {
		f.trip("/chain/observed/hash", fmt.Sprintf("the head at event %d changed from %s to %s: an earlier record was rewritten", c.Known.Seq, c.Known.Hash, c.Observed.Hash),
			c.Known.Hash, c.Observed.Hash)
		return
	}
	if len(c.Links) == 0 {
		return
	}
	prev := c.Known.Hash
	if prev == "" && c.Known.Seq == 0 {
		prev = GenesisHash
	}
	for i, l := range c.Links {
		where := at{"/chain/links", i}
		if l.Seq != c.Known.Seq+int64(i)+1 {
			f.tripAt(where, "/seq", fmt.Sprintf("link %d has sequence %d, expected %d", i, l.Seq, c.Known.Seq+int64(i)+1), evidenceDigest("link", l))
			return
		}
		if prev != "" && l.PrevHash != prev {
			f.tripAt(where, "/prev_hash", fmt.Sprintf("event %d does not extend the chain: it names %s, the head was %s", l.Seq, l.PrevHash, prev), l.PrevHash, evidenceDigest("prev", prev))
			return
		}
		if want := ChainHash(l.PrevHash, l.Seq, l.Digest); l.ChainHash != want {
			f.tripAt(where, "/chain_hash", fmt.Sprintf("event %d's chain hash does not recompute: stored %s, computed %s", l.Seq, l.ChainHash, want), evidenceDigest("stored", l.ChainHash), want)
			return
		}
		prev = l.ChainHash
	}
	last := c.Links[len(c.Links)-1]
	if last.Seq != c.Observed.Seq || (c.Observed.Hash != "" && last.ChainHash != c.Observed.Hash) {
		f.trip("/chain/observed", fmt.Sprintf("the links end at event %d %s; the run's head is %d %s", last.Seq, last.ChainHash, c.Observed.Seq, c.Observed.Hash),
			evidenceDigest("last", last), evidenceDigest("observed", c.Observed))
	}
}

// checkControlChain re-walks the tick's control records from Before: each
// names the head it met, the accepted ones chain into After, and each is
// logged under the digest of the record the FSM returned.
//
// The FSM itself digests every accepted record (it is the next head, and
// the following record's prev), so an accepted record's logged digest is
// verified by comparing it with the head the FSM computed after it rather
// than by hashing it again: the next accepted record's prev, or After's
// head for the last. Only refused records, which the FSM does not chain,
// are hashed here.
func checkControlChain(s *Set, b *Boundary, f *finder) {
	cur := b.Before
	if cur.State == "" && cur.Seq == 0 {
		cur.State = s.m.InitialState()
	}
	for i, e := range b.Events {
		if e.Record == nil || (e.Kind != EventControl && e.Kind != EventRejected) {
			continue
		}
		where := at{"/events", i}
		r := e.Record
		accepted := e.Kind == EventControl
		if r.Accepted != accepted {
			f.tripAt(where, "/record/accepted", fmt.Sprintf("%s is logged as %s but its record says accepted=%v", r.Event, e.Kind, r.Accepted), evidenceDigest("digest", e.Digest))
		}
		if r.Prev != cur.Head || r.From != cur.State {
			f.tripAt(where, "/record/prev", fmt.Sprintf("%s does not extend the control history, or was logged under another digest: it met %s at %q, the history was at %s at %q",
				r.Event, r.From, r.Prev, cur.State, cur.Head), evidenceDigest("digest", e.Digest), evidenceDigest("head", cur.Head))
		}
		if !r.Accepted {
			if d, err := cjson.DigestOf(r); err != nil || d != e.Digest {
				f.tripAt(where, "/digest", fmt.Sprintf("event %d's bytes are not the record the FSM returned for refused %s", i, r.Event),
					evidenceDigest("digest", e.Digest), evidenceDigest("record", d))
			}
			if r.Seq != cur.Seq || r.To != r.From {
				f.tripAt(where, "/record/seq", fmt.Sprintf("refused %s moved the history (seq %d, %s to %s)", r.Event, r.Seq, r.From, r.To), evidenceDigest("digest", e.Digest))
			}
			continue
		}
		if r.Seq != cur.Seq+1 {
			f.tripAt(where, "/record/seq", fmt.Sprintf("%s has sequence %d after %d", r.Event, r.Seq, cur.Seq), evidenceDigest("digest", e.Digest))
		}
		cur = control.Configuration{Table: r.Table, State: r.To, Pending: r.Pending, Seq: r.Seq, Head: e.Digest}
	}
	if b.After.Head != cur.Head || b.After.Seq != cur.Seq || b.After.State != cur.State {
		f.trip("/after", fmt.Sprintf("the checkpoint's configuration (%s, seq %d, head %q) is not where the tick's records lead (%s, seq %d, head %q)",
			b.After.State, b.After.Seq, b.After.Head, cur.State, cur.Seq, cur.Head), evidenceDigest("after", b.After), evidenceDigest("replayed", cur))
	}
}

// checkFencing: no write from a generation older than the newest seen, and
// the log's generations never go backwards.
func checkFencing(s *Set, b *Boundary, f *finder) {
	l := b.Lease
	if b.Phase == PhaseCommit && l.Generation <= 0 {
		f.trip("/lease/generation", "a tick about to be committed under no lease", evidenceDigest("lease", l))
	}
	if l.Generation < l.Newest {
		f.trip("/lease/generation", fmt.Sprintf("writing under lease generation %d after generation %d was seen: this writer is fenced out", l.Generation, l.Newest),
			evidenceDigest("lease", l))
	}
	// One trip per kind of defect: the first link that shows it.
	var gen int64
	backwards, future := false, false
	for i, link := range b.Chain.Links {
		if link.Generation < gen && !backwards {
			backwards = true
			f.trip(ptr("/chain/links", i)+"/generation", fmt.Sprintf("event %d was written by generation %d after generation %d had written", link.Seq, link.Generation, gen),
				evidenceDigest("link", link))
		}
		gen = max(gen, link.Generation)
		if newest := max(l.Newest, l.Generation); newest > 0 && link.Generation > newest && !future {
			future = true
			f.trip(ptr("/chain/links", i)+"/generation", fmt.Sprintf("event %d was written by generation %d, newer than any lease this writer saw (%d): it is fenced out", link.Seq, link.Generation, newest),
				evidenceDigest("link", link))
		}
	}
}

// checkCoherence: the state is handled by the code that wrote it: the
// checkpoint's build and workflow digests equal the running ones, and every
// configuration and record belongs to the loaded FSM table.
func checkCoherence(s *Set, b *Boundary, f *finder) {
	c := b.Code
	if b.Phase == PhaseCommit && c.CheckpointBuild == "" {
		f.trip("/code/checkpoint_build", "a checkpoint about to be written names no build", evidenceDigest("code", c))
	}
	if c.CheckpointBuild != "" && c.RunningBuild != "" && c.CheckpointBuild != c.RunningBuild && !slices.Contains(c.Blessed, c.CheckpointBuild) {
		f.trip("/code/checkpoint_build", fmt.Sprintf("the checkpoint was written by build %s; build %s is running", c.CheckpointBuild, c.RunningBuild),
			evidenceDigest("checkpoint_build", c.CheckpointBuild), evidenceDigest("running_build", c.RunningBuild))
	}
	if c.CheckpointWorkflow != "" && c.RunningWorkflow != "" && c.CheckpointWorkflow != c.RunningWorkflow {
		f.trip("/code/checkpoint_workflow", fmt.Sprintf("the checkpoint was written by workflow %s; workflow %s is loaded", c.CheckpointWorkflow, c.RunningWorkflow),
			evidenceDigest("checkpoint_workflow", c.CheckpointWorkflow), evidenceDigest("running_workflow", c.RunningWorkflow))
	}
	// The pointer is built only when the wire trips there.
	table := func(where func() string, t string) {
		if t != "" && t != s.m.Digest() {
			f.trip(where(), fmt.Sprintf("written under FSM table %s; table %s is loaded", t, s.m.Digest()), evidenceDigest("table", t), s.m.Digest())
		}
	}
	table(func() string { return "/before/table" }, b.Before.Table)
	if b.Phase == PhaseCommit {
		table(func() string { return "/after/table" }, b.After.Table)
	}
	for i, e := range b.Events {
		if e.Record != nil {
			table(func() string { return ptr("/events", i) + "/record/table" }, e.Record.Table)
		}
	}
}
