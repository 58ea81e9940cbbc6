package frontier

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPublishIsStepState holds Publish to StepState applied command by
// command, from a prior that earlier steps reached: the same batches (bytes
// and digests) in the same order, or the same rejection at the same
// command, and the prior unchanged. The commands are the ones
// TestModelAgreement draws, rejected ones included.
func TestPublishIsStepState(t *testing.T) {
	var published, rejected int
	defer func() {
		// Both outcomes must be reached, or the comparison is hollow.
		t.Logf("%d batches published, %d sequences refused", published, rejected)
		if published == 0 || rejected == 0 {
			t.Errorf("%d batches published, %d sequences refused", published, rejected)
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		pl := getPool(rt)
		// Either TestModelAgreement's commands and limits, or the shape
		// the workflow steps R through, under limits that let it publish:
		// demand granted, then pairs and advances that publish them.
		publishing := rapid.Bool().Draw(rt, "publishing")
		var least int64 = 1
		if publishing {
			least = 2
		}
		limits := Limits{
			MaxDeltasPerCommand:  rapid.Int64Range(least, 8).Draw(rt, "maxDeltas"),
			MaxActiveValues:      rapid.Int64Range(least*least*least, 24).Draw(rt, "maxActive"),
			MaxOpenEpochs:        rapid.Int64Range(least, 4).Draw(rt, "maxOpen"),
			MaxReadyBatches:      rapid.Int64Range(least, 3).Draw(rt, "maxReady"),
			MaxDemandPerCommand:  rapid.Int64Range(1, 3).Draw(rt, "maxDemand"),
			MaxOutstandingDemand: rapid.Int64Range(least, 4).Draw(rt, "maxOutstanding"),
		}
		p := profileWith(rt, limits)
		noisy := rapid.Bool().Draw(rt, "noisy")
		live := func(s *State) []ValueDelta {
			var out []ValueDelta
			for _, e := range s.epochs {
				for _, v := range e.values {
					d, _ := NewValueDelta(v.sourceID, v.logicalTime, 1, "dataflow/0", v.value)
					out = append(out, d)
				}
			}
			return out
		}
		// The prior: the initial state stepped by StepState, refusals
		// skipped.
		prior := InitialState(p)
		if publishing {
			prior, _, _ = StepState(prior, p, GrantDemand{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Batches: min(limits.MaxDemandPerCommand, limits.MaxOutstandingDemand)})
		}
		for range rapid.IntRange(0, 12).Draw(rt, "warm") {
			if next, _, rej := StepState(prior, p, genCommand(rt, p, pl, live(prior), prior, noisy)); rej == nil {
				prior = next
			}
		}
		before := must(json.Marshal(prior))
		// The commands, each drawn against the state StepState reaches,
		// and perhaps one it refuses at the end.
		var cmds []Command
		var want []*PublishedBatch
		var wantRej *Rejection
		s := prior
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			var cmd Command
			if publishing {
				cmd = genPublishing(rt, p, pl, s)
			} else {
				cmd = genCommand(rt, p, pl, live(s), s, noisy)
			}
			next, pub, rej := StepState(s, p, cmd)
			if rej != nil {
				// Mostly drawn again, so that sequences get long enough
				// to publish; sometimes the sequence ends refused.
				if rapid.IntRange(0, 19).Draw(rt, "end") > 0 {
					continue
				}
				cmds, wantRej = append(cmds, cmd), rej
				break
			}
			cmds = append(cmds, cmd)
			want = append(want, pub...)
			s = next
		}
		if len(cmds) == 0 {
			return
		}
		// Publish's recycled hasher may come back written to: a hash
		// part-way through a preimage and a scratch buffer holding bytes.
		if rapid.Bool().Draw(rt, "dirty") {
			dirtyHasher(rapid.SliceOf(rapid.Byte()).Draw(rt, "junk"))
		}
		// PublishUndigested is Publish but for each batch's published
		// digest, empty, and the canonical bytes' member that holds it.
		if rapid.Bool().Draw(rt, "dirty-undigested") {
			dirtyHasher(rapid.SliceOf(rapid.Byte()).Draw(rt, "junk"))
		}
		und, undAt, undRej := PublishUndigested(prior, p, cmds)
		if undAt != -1 && undAt != len(cmds)-1 || !reflect.DeepEqual(undRej, wantRej) || len(und) != len(want) && undRej == nil {
			rt.Fatalf("PublishUndigested refused %+v at %d with %d batches, StepState %+v with %d", undRej, undAt, len(und), wantRej, len(want))
		}
		for k := range und {
			if slices.Contains(prior.ready, und[k]) {
				// Built by the steps that reached prior, with its digest,
				// and only published now: it is the prior's batch.
				if und[k] != want[k] && !reflect.DeepEqual(und[k], want[k]) {
					rt.Fatalf("batch %d, ready in the prior, differs from StepState's", k)
				}
				continue
			}
			if und[k].Digest() != "" {
				rt.Fatalf("batch %d published undigested has a digest", k)
			}
			w := must(json.Marshal(want[k]))
			w = bytes.Replace(w, []byte(`"published_batch_digest":"`+want[k].Digest()+`"`), []byte(`"published_batch_digest":""`), 1)
			if !bytes.Equal(must(json.Marshal(und[k])), w) || !reflect.DeepEqual(und[k].Batch(), want[k].Batch()) {
				rt.Fatalf("batch %d published undigested differs from StepState's", k)
			}
			// It keeps no canonical bytes (a tick's batch is read as
			// values): they are written when asked for, the same each
			// time, and the batch is not changed by it.
			if und[k].canon != nil || !bytes.Equal(und[k].canonical(), w) || und[k].canon != nil {
				rt.Fatalf("batch %d published undigested: canonical bytes kept or not StepState's", k)
			}
		}
		// Several batches ready at once are ordered by their canonical
		// bytes, written for the comparison: the order is StepState's.
		for k := 1; k < len(und); k++ {
			if comparePublished(und[k-1], und[k]) != comparePublished(want[k-1], want[k]) {
				rt.Fatalf("batches %d and %d published undigested order otherwise than StepState's", k-1, k)
			}
		}
		got, at, rej := Publish(prior, p, cmds)
		if !bytes.Equal(before, must(json.Marshal(prior))) {
			rt.Fatal("Publish changed its prior state")
		}
		if !reflect.DeepEqual(rej, wantRej) {
			rt.Fatalf("Publish refused %+v, StepState %+v", rej, wantRej)
		}
		if rej != nil {
			rejected++
			if at != len(cmds)-1 || got != nil {
				rt.Fatalf("Publish refused command %d with %d batches, StepState command %d", at, len(got), len(cmds)-1)
			}
			return
		}
		if at != -1 || len(got) != len(want) {
			rt.Fatalf("Publish published %d batches (index %d), StepState %d", len(got), at, len(want))
		}
		published += len(got)
		for k := range got {
			if got[k].Digest() != want[k].Digest() || !bytes.Equal(must(json.Marshal(got[k])), must(json.Marshal(want[k]))) {
				rt.Fatalf("batch %d differs from StepState's", k)
			}
			// The bytes a batch published undigested is written in when
			// asked for are those a digested batch keeps, from the same
			// members.
			bare := *got[k]
			bare.canon = nil
			if !bytes.Equal(bare.canonical(), got[k].canon) || bare.canonicalLen() < len(got[k].canon) {
				rt.Fatalf("batch %d: its canonical bytes written later differ from those kept", k)
			}
		}
	})
}

// genPublishing draws a command that moves toward publication: a
// proposal with its verdict at or just past every source's mark, a source
// advanced, or one more batch of demand.
func genPublishing(t *rapid.T, p Profile, pl *pool, s *State) Command {
	var base int64
	for _, src := range propSources {
		m, _, _ := s.SourceWatermark(src)
		base = max(base, m)
	}
	kind := rapid.IntRange(0, 5).Draw(t, "kind")
	if kind == 5 {
		return GrantDemand{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Batches: 1}
	}
	if kind < 2 {
		k := rapid.IntRange(0, len(pl.proposals)-1).Draw(t, "pair")
		at := base + rapid.Int64Range(0, 2).Draw(t, "time")
		src := rapid.SampledFrom(propSources).Draw(t, "source")
		var ds []ValueDelta
		for _, v := range []Value{pl.proposals[k], pl.verdicts[k]} {
			d, rej := NewValueDelta(src, at, 1, "dataflow/0", v)
			if rej != nil {
				t.Fatal(rej)
			}
			ds = append(ds, d)
		}
		return ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds}
	}
	// Mostly the source furthest behind, which holds the global mark.
	src := rapid.SampledFrom(propSources).Draw(t, "source")
	if rapid.IntRange(0, 2).Draw(t, "laggard") > 0 {
		low := base
		for _, id := range propSources {
			if m, known, _ := s.SourceWatermark(id); !known || m <= low {
				src, low = id, m
			}
		}
	}
	return AdvanceFrontier{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", SourceID: src,
		LowWatermark: base + rapid.Int64Range(0, 3).Draw(t, "step")}
}

// dirtyHasher leaves a hasher in hashers with junk written to its hash
// and its scratch buffer, as a use that ended part-way would.
func dirtyHasher(junk []byte) {
	h := hashers.Get().(*hasher)
	h.bytes(junk)
	h.buf = append(h.scratch(len(junk)), junk...)
	h.sum[0] ^= 0xff
	hashers.Put(h)
}
