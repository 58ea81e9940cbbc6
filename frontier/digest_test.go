package frontier

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Differential tests of the digests Step derives incrementally (state
// digests resumed from a prior's saved SHA-256 state, transition, command
// and batch digests streamed from cached pieces) against a from-scratch
// derivation: decode the canonical wire object with encoding/json, build
// the contract's preimage as a plain map, re-encode it (which sorts keys)
// and hash it in one pass.

// scratchDigest hashes v's JSON encoding with sorted keys and no HTML
// escaping: the flrh-cjson/1 bytes for the values R handles.
func scratchDigest(t tb, v any) string {
	t.Helper()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func decodeObject(t tb, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v", err)
	}
	return m
}

// scratchStateDigest derives state_digest from the state's wire bytes.
func scratchStateDigest(t tb, s *State) string {
	body := decodeObject(t, s.AppendCanonical(nil))
	delete(body, "state_digest")
	return scratchDigest(t, map[string]any{
		"contract_version": ContractVersion, "kind": "M3StatePreimage", "state_without_state_digest": body,
	})
}

// checkScratchDigests compares every digest of an accepted transition with
// its from-scratch derivation.
func checkScratchDigests(t tb, tr *Transition, cmd Command) {
	t.Helper()
	checkFreshPieces(t, tr.Next)
	if got, want := tr.Next.Digest(), scratchStateDigest(t, tr.Next); got != want {
		t.Fatalf("state digest %s, from scratch %s", got, want)
	}
	body := decodeObject(t, tr.AppendCanonical(nil))
	if body["transition_digest"] != tr.Digest {
		t.Fatalf("wire transition_digest %v, field %s", body["transition_digest"], tr.Digest)
	}
	delete(body, "transition_digest")
	if want := scratchDigest(t, map[string]any{
		"contract_version": ContractVersion, "kind": "M3TransitionPreimage", "transition_without_transition_digest": body,
	}); tr.Digest != want {
		t.Fatalf("transition digest %s, from scratch %s", tr.Digest, want)
	}
	if want := scratchCommandDigest(t, cmd); tr.CommandDigest != want {
		t.Fatalf("command digest %s, from scratch %s", tr.CommandDigest, want)
	}
	for _, b := range append(slices.Clone(tr.Published), tr.Next.ready...) {
		checkScratchBatch(t, b, tr.ProfileDigest)
	}
}

// checkFreshPieces seals a copy of s from nothing: its head, middle and
// tail written anew, its digest hashed from the first byte. A piece Step
// carried over from the prior state must spell what a fresh one does, or
// the state's bytes (and so any digest derived from them) would be stale.
func checkFreshPieces(t tb, s *State) {
	t.Helper()
	fresh := *s
	fresh.head, fresh.middle, fresh.tail, fresh.snaps, fresh.digest = nil, nil, nil, nil, ""
	fresh.seal(nil, newHasher())
	if got, want := s.AppendCanonical(nil), fresh.AppendCanonical(nil); !bytes.Equal(got, want) {
		t.Fatalf("state bytes\n%s\nsealed afresh\n%s", got, want)
	}
	if s.digest != fresh.digest {
		t.Fatalf("state digest %s, sealed afresh %s", s.digest, fresh.digest)
	}
}

// sharesPiece reports whether a piece of a state is its prior's own.
func sharesPiece(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// scratchCommandDigest derives command_digest from the command's wire bytes.
func scratchCommandDigest(t tb, cmd Command) string {
	c := decodeObject(t, EncodeCommand(cmd))
	pre := map[string]any{
		"command_kind": c["kind"], "contract_version": ContractVersion,
		"dataflow_version": c["dataflow_version"], "kind": "M3CommandPreimage", "profile_digest": c["profile_digest"],
	}
	switch c["kind"] {
	case "RApplyDeltaBatch":
		set := map[string]bool{}
		for _, d := range c["deltas"].([]any) {
			set[scratchDigest(t, d)] = true
		}
		digests := []string{}
		//flrh:orderfree the keys are sorted next
		for d := range set {
			digests = append(digests, d)
		}
		slices.Sort(digests)
		pre["ordered_value_delta_digests"] = digests
	case "RAdvanceFrontier":
		pre["low_watermark"], pre["source_id"] = c["low_watermark"], c["source_id"]
	case "RGrantDemand":
		pre["batches"] = c["batches"]
	default:
		t.Fatalf("unknown command kind %v", c["kind"])
	}
	return scratchDigest(t, pre)
}

// checkScratchBatch derives a published batch's batch_digest and
// published_batch_digest from its wire bytes and the profile digest (the
// stable-batch preimage binds the profile; the wire batch does not carry it).
func checkScratchBatch(t tb, b *PublishedBatch, profileDigest string) {
	t.Helper()
	checkSharedBatch(t, b)
	w := decodeObject(t, b.canon)
	batch := w["batch"].(map[string]any)
	if want := scratchDigest(t, map[string]any{
		"contract_version": ContractVersion, "dataflow_version": batch["dataflow_version"],
		"kind": "M3StableBatchPreimage", "logical_time": batch["logical_time"], "low_watermark": batch["low_watermark"],
		"ordered_eligibility_verdict_ids": batch["eligibility_verdict_ids"], "ordered_proposal_ids": batch["proposal_ids"],
		"profile_digest": profileDigest,
	}); batch["batch_digest"] != want {
		t.Fatalf("batch digest %v, from scratch %s", batch["batch_digest"], want)
	}
	if want := scratchDigest(t, map[string]any{
		"batch": batch, "contract_version": ContractVersion, "kind": "M3PublishedBatchPreimage",
		"ordered_effect_proposals": w["effect_proposals"], "ordered_eligibility_verdicts": w["eligibility_verdicts"],
	}); b.digest != want || w["published_batch_digest"] != want {
		t.Fatalf("published batch digest %s, from scratch %s", b.digest, want)
	}
	hex := strings.TrimPrefix(b.batch.BatchDigest, "sha256:")
	if b.batch.BatchID != "batch:"+hex || b.batch.CauseID != "reaction:"+hex ||
		batch["batch_id"] != b.batch.BatchID || batch["cause_id"] != b.batch.CauseID || batch["batch_digest"] != b.batch.BatchDigest {
		t.Fatalf("batch id %s and cause id %s, batch digest %s (wire %v, %v, %v)",
			b.batch.BatchID, b.batch.CauseID, b.batch.BatchDigest, batch["batch_id"], batch["cause_id"], batch["batch_digest"])
	}
}

// TestIncrementalDigests runs random command sequences and checks every
// accepted transition's digests against a from-scratch derivation. It also
// counts the transitions whose state digest resumed after a shared prefix
// longer than the head, so the property is known to cover that path.
func TestIncrementalDigests(t *testing.T) {
	resumed, total := 0, 0
	var reused, rebuilt [3]int // head, middle, tail
	rapid.Check(t, func(rt *rapid.T) {
		pl := getPool(rt)
		limits := Limits{
			MaxDeltasPerCommand: 8, MaxActiveValues: 48, MaxOpenEpochs: 6,
			MaxReadyBatches: rapid.Int64Range(1, 4).Draw(rt, "maxReady"), MaxDemandPerCommand: 3, MaxOutstandingDemand: 4,
		}
		p := profileWith(rt, limits)
		s := InitialState(p)
		if got, want := s.Digest(), scratchStateDigest(rt, s); got != want {
			rt.Fatalf("initial state digest %s, from scratch %s", got, want)
		}
		var live []ValueDelta
		noisy := rapid.Bool().Draw(rt, "noisy")
		for i, steps := 0, rapid.IntRange(1, 50).Draw(rt, "steps"); i < steps; i++ {
			cmd := genCommand(rt, p, pl, live, s, noisy)
			tr, rej := Step(s, p, cmd)
			if rej != nil {
				continue
			}
			total++
			if sharedPieces(s, tr.Next) > 1 {
				resumed++
			}
			for i, pair := range [][2][]byte{{s.head, tr.Next.head}, {s.middle, tr.Next.middle}, {s.tail, tr.Next.tail}} {
				if sharesPiece(pair[0], pair[1]) {
					reused[i]++
				} else {
					rebuilt[i]++
				}
			}
			checkScratchDigests(rt, tr, cmd)
			s = tr.Next
			live = live[:0]
			for _, e := range s.epochs {
				for _, v := range e.values {
					d, _ := NewValueDelta(v.sourceID, v.logicalTime, 1, "dataflow/0", v.value)
					live = append(live, d)
				}
			}
		}
	})
	t.Logf("%d of %d accepted transitions resumed a prior state's hash", resumed, total)
	if resumed == 0 {
		t.Error("no transition resumed a saved hash state; the property is hollow")
	}
	t.Logf("head, middle, tail reused %v, rebuilt %v", reused, rebuilt)
	for i := range reused {
		if reused[i] == 0 || rebuilt[i] == 0 {
			t.Errorf("piece %d reused %d times, rebuilt %d: a path went untried", i, reused[i], rebuilt[i])
		}
	}
}

// TestResumeAfterEveryPiece builds states that share with their prior no
// piece, only the head, some epochs, everything before the ready batches,
// and everything but the tail, including a prior whose saved hash states
// were lost, and checks each digest from scratch.
func TestResumeAfterEveryPiece(t *testing.T) {
	pl := getPool(t)
	p := profileWith(t, Limits{MaxDeltasPerCommand: 16, MaxActiveValues: 64, MaxOpenEpochs: 8,
		MaxReadyBatches: 8, MaxDemandPerCommand: 8, MaxOutstandingDemand: 8})
	seen := map[string]bool{}
	step := func(s *State, c Command) *State {
		t.Helper()
		tr, rej := Step(s, p, c)
		if rej != nil {
			t.Fatalf("%T rejected: %v", c, rej)
		}
		checkScratchDigests(t, tr, c)
		n := tr.Next
		switch k := sharedPieces(s, n); {
		case k == 0:
			seen["none"] = true
		case k == 1:
			seen["head"] = true
		case k == n.pieceCount():
			seen["all but the tail"] = true
		case k <= 1+len(n.epochs):
			seen["some epochs"] = true
		default:
			seen["through the middle"] = true
		}
		return n
	}
	apply := func(s *State, at int64, ks ...int) *State {
		var ds []ValueDelta
		for _, k := range ks {
			for _, v := range []Value{pl.proposals[k], pl.verdicts[k]} {
				d, rej := NewValueDelta("src:a", at, 1, "dataflow/0", v)
				if rej != nil {
					t.Fatal(rej)
				}
				ds = append(ds, d)
			}
		}
		return step(s, ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds})
	}
	advance := func(s *State, src string, w int64) *State {
		return step(s, AdvanceFrontier{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: w})
	}
	s := InitialState(p)
	for at := int64(0); at < 5; at++ {
		s = apply(s, at, int(at), int(at)+5) // a new last epoch: every earlier piece is shared
	}
	s = apply(s, 2, 11)        // into a middle epoch
	s = advance(s, "src:a", 3) // global still null: only the tail changes
	s = advance(s, "src:b", 3)
	s = advance(s, "src:c", 2) // stabilizes epochs 0 and 1: the head changes
	s = advance(s, "src:c", 3) // stabilizes epoch 2 behind two waiting batches
	s = apply(s, 4, 10)        // epochs change ahead of the waiting batches
	s = advance(s, "src:a", 9)
	lost := *s
	lost.snaps = nil // a prior without saved states hashes from scratch
	s = advance(&lost, "src:b", 9)
	s = step(s, GrantDemand{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Batches: 1})
	s = step(s, GrantDemand{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Batches: 3})
	if len(s.ready) != 0 || s.demand == 0 {
		t.Fatalf("expected every batch published and demand left, got %d ready, demand %d", len(s.ready), s.demand)
	}
	for _, c := range []string{"none", "head", "some epochs", "through the middle", "all but the tail"} {
		if !seen[c] {
			t.Errorf("no step shared %s with its prior", c)
		}
	}
}

// TestLargeCommandDigest: a command whose digest list passes through the
// hashing buffer many times still has the from-scratch command digest.
func TestLargeCommandDigest(t *testing.T) {
	pl := getPool(t)
	p := profileWith(t, Limits{MaxDeltasPerCommand: 1000, MaxActiveValues: 1000, MaxOpenEpochs: 200,
		MaxReadyBatches: 1, MaxDemandPerCommand: 1, MaxOutstandingDemand: 1})
	var ds []ValueDelta
	for at := int64(0); at < 150; at++ {
		for _, src := range propSources {
			d, rej := NewValueDelta(src, at, 1, "dataflow/0", pl.proposals[at%int64(len(pl.proposals))])
			if rej != nil {
				t.Fatal(rej)
			}
			ds = append(ds, d, d) // an exact duplicate collapses
		}
	}
	cmd := ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds}
	tr, rej := Step(nil, p, cmd)
	if rej != nil {
		t.Fatal(rej)
	}
	if tr.Stats.AcceptedDeltaCount != 450 {
		t.Fatalf("accepted %d deltas, want 450", tr.Stats.AcceptedDeltaCount)
	}
	checkScratchDigests(t, tr, cmd)
}

// A sealed value's canonical bytes are the middle of the preimage its
// digest was taken over. They must still be exactly the value's canonical
// encoding, capped so that nothing appended to them reaches the rest of
// that buffer, and the digest the from-scratch one.
func TestValueSealedInItsPreimage(t *testing.T) {
	id := func(rt *rapid.T, label string) string {
		return rapid.SampledFrom([]string{"x", "proposal:", "cause:c", "goal/g.1"}).Draw(rt, label) +
			rapid.StringMatching(`[0-9a-zA-Z:./_-]{0,40}`).Draw(rt, label+"/tail")
	}
	ids := func(rt *rapid.T, label string) []string {
		set := map[string]bool{}
		for i, n := 0, rapid.IntRange(0, 6).Draw(rt, label); i < n; i++ {
			set[id(rt, label+"/id")] = true
		}
		out := make([]string, 0, len(set))
		for s := range set {
			out = append(out, s)
		}
		return out
	}
	rapid.Check(t, func(rt *rapid.T) {
		var v Value
		var rej *Rejection
		if rapid.Bool().Draw(rt, "proposal") {
			p := m3Proposal()
			p.ProposalID, p.CauseID, p.GoalID, p.EffectType = id(rt, "pid"), id(rt, "cause"), id(rt, "goal"), id(rt, "type")
			p.Preconditions = ids(rt, "preconditions")
			p.Versions.Tool = id(rt, "tool") + rapid.SampledFrom([]string{"", "+build.7"}).Draw(rt, "plus")
			v, rej = NewProposalValue(p)
		} else {
			e := m3Verdict()
			e.VerdictID, e.ProposalID, e.CauseID = id(rt, "vid"), id(rt, "pid"), id(rt, "cause")
			e.SupportDerivationIDs = ids(rt, "supports")
			v, rej = NewVerdictValue(e)
		}
		if rej != nil {
			rt.Fatalf("refused: %s at %s", rej.Code, rej.Path)
		}
		if cap(v.canon) != len(v.canon) {
			rt.Fatalf("canonical bytes have %d bytes of room after them", cap(v.canon)-len(v.canon))
		}
		assertCanonical(rt, v.canon)
		var again []byte
		if p, ok := v.Proposal(); ok {
			again = appendProposal(nil, &p)
		} else {
			e, _ := v.Verdict()
			again = appendVerdict(nil, &e)
		}
		if !bytes.Equal(v.canon, again) {
			rt.Fatalf("sealed\n%s\nwritten alone\n%s", v.canon, again)
		}
		if want := scratchDigest(rt, map[string]any{"contract_version": ContractVersion, "kind": "M3ValuePreimage",
			"value": decodeObject(rt, v.canon), "value_kind": string(v.kind)}); v.digest != want {
			rt.Fatalf("value digest %s, from scratch %s", v.digest, want)
		}
	})
}
