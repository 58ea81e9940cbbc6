package logic

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestContentIsFactAndProvenance holds a support's content, written in one
// buffer, to the fact's text, a NUL and the provenance joined as strings,
// and the ledger's fact key to the content's leading part, over drawn facts
// and provenances (short and longer than the content's stack buffer).
func TestContentIsFactAndProvenance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFacts1(t)
		f.Neg = rapid.Bool().Draw(t, "neg")
		for _, s := range rapid.SliceOfN(rapid.StringMatching(`[a-z"\\\x00-]{0,30}`), 0, 3).Draw(t, "syms") {
			f.Args = append(f.Args, Sym(s))
		}
		prov := rapid.StringMatching(`[a-z{}":,\x00]{0,40}`).Draw(t, "prov")
		if rapid.Bool().Draw(t, "long") {
			prov = strings.Repeat(prov+"x", 10)
		}
		c := FactChange{ID: "s", Fact: f, Diff: 1, Provenance: prov}
		got, want := c.content(), f.String()+"\x00"+prov
		if got != want {
			t.Fatalf("content %q, want %q", got, want)
		}
		if key := got[:len(got)-len(prov)-1]; key != f.String() {
			t.Fatalf("key %q, want %q", key, f.String())
		}
	})
}
