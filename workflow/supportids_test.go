package workflow

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

// Every test in this package runs with the support ids of each atom a
// tick projects held to those of the supports SupportsBoth collects, as
// supportIDsIn named them before it read them from L's scratch.
func init() {
	verifySupportIDs = func(w *Workflow, mat *logic.Materialization, f logic.Fact, pos, neg []string) {
		wp, wn := supportIDsBySupports(w, mat, f)
		if !slices.Equal(pos, wp) || !slices.Equal(neg, wn) || (pos == nil) != (wp == nil) || (neg == nil) != (wn == nil) {
			panic(fmt.Sprintf("support ids of %s: %q | %q, by SupportsBoth %q | %q", f, pos, neg, wp, wn))
		}
		// The two lists share an array: each is capped at its length,
		// so that an append to one moves it instead of writing over
		// the other.
		if cap(pos) != len(pos) || cap(neg) != len(neg) {
			panic(fmt.Sprintf("support ids of %s: lists with room past their ids", f))
		}
	}
}

// supportIDsBySupports is supportIDsIn's ids from the supports
// SupportsBoth collects: base supports by their ids, rule supports by the
// digest of their text, each side sorted without duplicates, none for a
// side L failed to find.
func supportIDsBySupports(w *Workflow, mat *logic.Materialization, f logic.Fact) ([]string, []string) {
	pos, neg, posErr, negErr := mat.SupportsBoth(f)
	ids := func(sup []logic.Support, err error) []string {
		if err != nil {
			return []string{}
		}
		out := []string{}
		for _, s := range sup {
			if s.Base {
				out = append(out, s.BaseIDs...)
				continue
			}
			out = append(out, ruleSupportID(cjson.SumWritten(func(b []byte) []byte { b, _ = s.AppendText(b); return b })))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return ids(pos, posErr), ids(neg, negErr)
}

// The hook above compares: a tick whose ids are wrong fails.
func TestSupportIDsAreChecked(t *testing.T) {
	w := compileExample(t, "refund-agent")
	saved := verifySupportIDs
	defer func() { verifySupportIDs = saved }()
	calls := 0
	verifySupportIDs = func(w *Workflow, mat *logic.Materialization, f logic.Fact, pos, neg []string) {
		calls++
		saved(w, mat, f, pos, neg)
		defer func() {
			if recover() == nil {
				t.Errorf("support ids of %s with one dropped passed the check", f)
			}
		}()
		if len(pos) > 0 {
			saved(w, mat, f, pos[1:], neg)
		} else {
			saved(w, mat, f, append(pos, "fact:x"), neg)
		}
	}
	st, _ := w.Init("run-support-ids")
	for seq := int64(1); seq <= 3; seq++ {
		r, err := w.Decide(st, Input{Seq: seq, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", seq), 40, "alice", "late")})
		if err != nil || r.Refusal != "" {
			t.Fatalf("tick %d: %v %q", seq, err, r.Refusal)
		}
		st = r.State
	}
	if calls == 0 {
		t.Fatal("no tick looked up support ids")
	}
}

// ruleSupportID is a rule support's id, from the SHA-256 sum of its text,
// as appendRuleSupportID spells it.
func ruleSupportID(sum [sha256.Size]byte) string {
	var id [ruleSupportIDLen]byte
	copy(id[:], ruleSupportPrefix)
	cjson.HexSum((*[64]byte)(id[len(ruleSupportPrefix):]), &sum)
	return string(id[:])
}
