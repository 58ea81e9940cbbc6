package workflow

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestInitFromPiecesIsFromScratch holds a run's initial state joined from
// the pieces written at Compile to the one built and encoded from scratch,
// for generated run ids, ids or not, over every example bundle: the same
// document, the same state the first tick takes, and a first Decide that
// gives the same bytes.
func TestInitFromPiecesIsFromScratch(t *testing.T) {
	for _, name := range []string{"refund-agent", "support-agent", "ops-agent"} {
		t.Run(name, func(t *testing.T) {
			w := compileExample(t, name)
			if w.first == nil {
				t.Fatal("no initial state pieces for an example bundle")
			}
			scratch := *w
			scratch.first = nil
			scratch.cache = newMatCache()
			rapid.Check(t, func(t *rapid.T) {
				id := rapid.OneOf(
					rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:/-]{0,140}`),
					rapid.String(),
				).Draw(t, "run id")
				got, gerr := w.Init(id)
				want, werr := scratch.Init(id)
				if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
					t.Fatalf("errors: pieces %v, from scratch %v", gerr, werr)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("documents differ:\n%s\n%s", got, want)
				}
				if gerr != nil {
					return
				}
				_, gst, _ := w.cache.take(got)
				_, wst, _ := scratch.cache.take(want)
				if gst == nil || wst == nil {
					t.Fatal("Init cached no state")
				}
				if !reflect.DeepEqual(gst, wst) {
					t.Fatalf("states differ:\n%#v\n%#v", gst, wst)
				}
				if enc, err := gst.encode(); err != nil || !bytes.Equal(enc, got) {
					t.Fatalf("the state encodes as %s (%v), not its document", enc, err)
				}
				w.cache.put(got, nil, gst)
				scratch.cache.put(want, nil, wst)
				in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 20, "payee-1", "damaged item")}
				gr, gerr := w.Decide(got, in)
				wr, werr := scratch.Decide(want, in)
				if (gerr == nil) != (werr == nil) || !bytes.Equal(gr.State, wr.State) || gr.Refusal != wr.Refusal {
					t.Fatalf("first ticks differ: %v %q, %v %q", gerr, gr.Refusal, werr, wr.Refusal)
				}
			})
		})
	}
}
