package authority

import (
	"bytes"
	"testing"
)

// Authorize given NoControlEvents decides as without it but for every
// outcome's ControlEvent, which is nil: an intent authorized outright, an
// approval request, and the intent its grant authorizes, each with and
// without a memo shared by the decisions.
func TestAuthorizeNoControlEventsIsWithout(t *testing.T) {
	ins := fixturesWithGrant(t, 0, 0)
	kinds := map[string]bool{}
	for _, memo := range []bool{false, true} {
		var m DigestMemo
		for i, in := range ins {
			if memo {
				in.Memo = &m
			}
			want, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			in.NoControlEvents = true
			got, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			for k := range want.Outcomes {
				if want.Outcomes[k].ControlEvent == nil {
					t.Fatalf("input %d: outcome %d has no control event to leave out", i, k)
				}
				kinds[want.Outcomes[k].Event] = true
				want.Outcomes[k].ControlEvent = nil
				if got.Outcomes[k].ControlEvent != nil {
					t.Fatalf("input %d: outcome %d has a control event", i, k)
				}
			}
			if g, w := canon(t, got), canon(t, want); !bytes.Equal(g, w) {
				t.Fatalf("input %d (memo %v): decisions differ without control events\n%s\n%s", i, memo, g, w)
			}
		}
	}
	if len(kinds) != 3 {
		t.Fatalf("the inputs decided %v, not the three events that carry a control event", kinds)
	}
}
