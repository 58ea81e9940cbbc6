package workflow

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/seam"
)

// TestProjectRoomIsApart hands out a projection room's lists, arguments,
// values and support ids in drawn sizes, fills each (appending past its room, too),
// and holds every piece to what was written into it: no piece reaches
// another's, each is capped at its own length, and past the room each is
// made on its own.
func TestProjectRoomIsApart(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "preconditions")
		r := newProjectRoom(n)
		if (r == nil) != (n > projectRoomPreconditions) {
			rt.Fatalf("room for %d preconditions: %v", n, r != nil)
		}
		reqs, atoms, facts := r.lists(n)
		if len(reqs) != 0 || cap(reqs) != n || len(atoms) != 0 || cap(atoms) != n || len(facts) != 0 || cap(facts) != n {
			rt.Fatalf("lists: %d/%d %d/%d %d/%d", len(reqs), cap(reqs), len(atoms), cap(atoms), len(facts), cap(facts))
		}
		// The query list: one zero query, capped, so that an append
		// moves it.
		if q := r.query(); len(q) != 1 || cap(q) != 1 || !reflect.DeepEqual(q[0], seam.Query{}) {
			rt.Fatalf("query list: %d/%d %+v", len(q), cap(q), q)
		}
		grow := rapid.IntRange(0, 2).Draw(rt, "grow")
		for i := range n + grow {
			reqs = append(reqs, seam.FactRequirement{PreconditionID: fmt.Sprint("pre-", i)})
			facts = append(facts, seam.FactState{Positive: []string{fmt.Sprint("pos-", i)}})
		}
		var argsOut [][]any
		var valsOut [][]logic.Value
		var idsOut [][]string
		for k := range rapid.IntRange(0, 6).Draw(rt, "pieces") {
			m := rapid.IntRange(0, 5).Draw(rt, "size")
			a, v, ids := r.args(m), r.values(m), r.idList(m)
			if len(a) != m || cap(a) != m || len(v) != m || cap(v) != m || len(ids) != m || cap(ids) != m {
				rt.Fatalf("piece %d of %d: args %d/%d values %d/%d ids %d/%d", k, m, len(a), cap(a), len(v), cap(v), len(ids), cap(ids))
			}
			for j := range m {
				if ids[j] != "" {
					rt.Fatalf("piece %d: id %d handed out as %q", k, j, ids[j])
				}
				a[j] = fmt.Sprint(k, "-", j)
				v[j] = logic.Num(int64(100*k + j))
				ids[j] = fmt.Sprint("id-", k, "-", j)
			}
			argsOut, valsOut, idsOut = append(argsOut, a), append(valsOut, v), append(idsOut, ids)
		}
		for i := range n + grow {
			if reqs[i].PreconditionID != fmt.Sprint("pre-", i) || facts[i].Positive[0] != fmt.Sprint("pos-", i) {
				rt.Fatalf("list entry %d changed: %v %v", i, reqs[i], facts[i])
			}
		}
		for k := range argsOut {
			for j := range argsOut[k] {
				if argsOut[k][j] != fmt.Sprint(k, "-", j) || valsOut[k][j] != logic.Num(int64(100*k+j)) || idsOut[k][j] != fmt.Sprint("id-", k, "-", j) {
					rt.Fatalf("piece %d entry %d changed: %v %v %v", k, j, argsOut[k][j], valsOut[k][j], idsOut[k][j])
				}
			}
		}
	})
}
