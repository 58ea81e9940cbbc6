package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
)

// genJSON draws a value of the cjson model, nested up to depth levels,
// with members that imitate the checkpoint's own ("state", "transitions",
// "kind") so that the splice in encode meets look-alikes.
func genJSON(depth int) *rapid.Generator[any] {
	keys := rapid.SampledFrom([]string{"state", "transitions", "kind", "a", "b", "preconditions", "workflow_id", "é"})
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int64(), func(n int64) any { return n }),
		rapid.Map(rapid.SampledFrom([]string{"", "x", `,"state":null,"transitions":`, "EffectIntent", "é", `"`}), func(s string) any { return s }),
	)
	if depth == 0 {
		return scalar
	}
	inner := genJSON(depth - 1)
	return rapid.OneOf(scalar,
		rapid.Map(rapid.SliceOfN(inner, 0, 3), func(xs []any) any { return xs }),
		rapid.Map(rapid.MapOfN(keys, inner, 0, 4), func(m map[string]any) any { return m }),
	)
}

// TestCheckpointEncodeMatchesMarshal holds the spliced encoding of a
// checkpoint to the bytes cjson.Marshal writes for it, and the cached
// state bytes to cjson's encoding of the state alone, whatever the state
// and the open effects hold.
func TestCheckpointEncodeMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		state := genJSON(3).Draw(rt, "state")
		payload := genJSON(3).Draw(rt, "payload")
		cp := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, WorkflowID: "wf", WorkflowDigest: cjson.Digest([]byte("wf")),
			Control: control.Configuration{State: "INGEST"}, Completion: Continue, Ingest: []pendingReceipt{},
			Open:        []openEffect{{IntentID: "i", Stage: stagePlanned, Intent: map[string]any{"state": nil, "transitions": int64(1)}, Payload: payload}},
			Transitions: rapid.Int64Range(0, 1<<40).Draw(rt, "transitions"), RoundSteered: rapid.Bool().Draw(rt, "steered")}
		cp.setState(state)
		checkForms(rt, cp)
		// A second state after the first was cached.
		cp.setState(genJSON(2).Draw(rt, "next"))
		checkForms(rt, cp)
	})
}

func checkForms(t interface{ Fatalf(string, ...any) }, cp *checkpoint) {
	want, werr := cjson.Marshal(cp)
	got, gerr := cp.encode()
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("encode = %s, %v; cjson.Marshal = %s, %v", got, gerr, want, werr)
	}
	alone, aerr := cjson.Encode(cp.State)
	sb, serr := cp.stateBytes()
	if (aerr == nil) != (serr == nil) || !bytes.Equal(sb, alone) {
		t.Fatalf("stateBytes = %s, %v; cjson.Encode = %s, %v", sb, serr, alone, aerr)
	}
}

// TestCheckpointStateForms covers the states whose encoding alone differs
// from their encoding inside a checkpoint: a root kind with set-like
// members, and nesting at the depth limit.
func TestCheckpointStateForms(t *testing.T) {
	deep := func(n int) any {
		var v any = "leaf"
		for range n {
			v = []any{v}
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		state any
	}{
		{"set-like kind, unsorted", map[string]any{"kind": "EffectIntent", "preconditions": []any{"b", "a"}}},
		{"set-like kind, sorted", map[string]any{"kind": "EffectIntent", "preconditions": []any{"a", "b"}}},
		{"other kind", map[string]any{"kind": "flrh.workflow.state", "preconditions": []any{"b", "a"}}},
		{"array", []any{int64(1), "x"}},
		{"null", nil},
		{"at the depth limit alone", deep(cjson.MaxDepth - 1)},
		{"past the depth limit", deep(cjson.MaxDepth + 1)},
		{"not a string", map[string]any{"s": strings.Repeat("\x00", 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, Open: []openEffect{}, Ingest: []pendingReceipt{}}
			cp.setState(tc.state)
			checkForms(fatalf(t.Fatalf), cp)
		})
	}
}

type fatalf func(string, ...any)

func (f fatalf) Fatalf(format string, args ...any) { f(format, args...) }

// TestCheckpointCanonicalStateMatchesMarshal holds a state kept as the
// workflow's canonical bytes (setCanonical) to the same checkpoint and
// state bytes as the decoded value gives, and checks that states nested
// near the limit are refused and take the decoding path.
func TestCheckpointCanonicalStateMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		state := genJSON(4).Draw(rt, "state")
		if ownSets(state) {
			rt.Skip("a root kind with set-like members is outside setCanonical's contract")
		}
		b, err := cjson.Encode(state)
		if err != nil {
			rt.Skip("not encodable")
		}
		ref := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, Open: []openEffect{}, Ingest: []pendingReceipt{},
			Transitions: rapid.Int64Range(0, 99).Draw(rt, "transitions")}
		ref.setState(state)
		kept := *ref
		if !kept.setCanonical(b) {
			rt.Fatalf("setCanonical refused %s", b)
		}
		want, werr := cjson.Marshal(ref)
		got, gerr := kept.encode()
		if werr != nil || gerr != nil || !bytes.Equal(got, want) {
			rt.Fatalf("encode = %s, %v; cjson.Marshal = %s, %v", got, gerr, want, werr)
		}
		sb, err := kept.stateBytes()
		if err != nil || !bytes.Equal(sb, b) {
			rt.Fatalf("stateBytes = %s, %v; want %s", sb, err, b)
		}
	})
	deep := "leaf"
	for range cjson.MaxDepth - 2 {
		deep = `["x",` + deep + "]"
	}
	deep = `{"a":"[[[","b":` + strings.Replace(deep, `"leaf"`, `"\"]]"`, 1) + "}"
	if n := nesting([]byte(deep)); n != cjson.MaxDepth-1 {
		t.Fatalf("nesting = %d, want %d", n, cjson.MaxDepth-1)
	}
	cp := &checkpoint{}
	if cp.setCanonical([]byte(deep)) || cp.alone != nil {
		t.Fatal("setCanonical kept a state nested at the limit")
	}
}

// stateDigest is the digest of the state's bytes, for every way a state
// is set, after each replaces the last.
func TestStateDigestFollowsTheState(t *testing.T) {
	var texts store.DigestTexts // a pass's, over all draws
	rapid.Check(t, func(rt *rapid.T) {
		cp := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, Open: []openEffect{}, Ingest: []pendingReceipt{}}
		for i := range rapid.IntRange(1, 4).Draw(rt, "states") {
			v := genJSON(3).Draw(rt, fmt.Sprint("state", i))
			switch b, err := cjson.Encode(v); {
			case err == nil && rapid.Bool().Draw(rt, fmt.Sprint("canonical", i)) && !ownSets(v) && cp.setCanonical(b):
			case err == nil && rapid.Bool().Draw(rt, fmt.Sprint("initial", i)):
				if cp.setInitial(b) != nil {
					rt.Fatalf("setInitial refused %s", b)
				}
			default:
				cp.setState(v)
			}
			for range rapid.IntRange(1, 2).Draw(rt, fmt.Sprint("reads", i)) {
				sb, serr := cp.stateBytes()
				var d string
				var derr error
				if rapid.Bool().Draw(rt, "in texts") {
					d, derr = cp.stateDigestIn(&texts)
				} else {
					d, derr = cp.stateDigest()
				}
				if (serr == nil) != (derr == nil) || serr == nil && d != cjson.Digest(sb) {
					rt.Fatalf("stateDigest = %s, %v; stateBytes %s, %v", d, derr, sb, serr)
				}
			}
		}
	})
}
