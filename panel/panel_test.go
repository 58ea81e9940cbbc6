package panel

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// board is a panel of three groups; dave is in two of them.
var board = []Group{
	{Name: "sre", Members: []string{"alice", "bob", "dave"}},
	{Name: "security", Members: []string{"carol", "dave"}},
	{Name: "finance", Members: []string{"erin"}},
}

func TestShort(t *testing.T) {
	for _, c := range []struct {
		people  []string
		quorum  int
		short   int
		waiting []string
	}{
		{nil, 0, 3, []string{"sre", "security", "finance"}},
		{[]string{"alice"}, 0, 2, []string{"security", "finance"}},
		// A second member of sre answers for nothing more.
		{[]string{"alice", "bob"}, 0, 2, []string{"security", "finance"}},
		// dave, first paired with sre, moves to security for bob.
		{[]string{"dave", "bob"}, 0, 1, []string{"finance"}},
		{[]string{"dave", "bob", "erin"}, 0, 0, nil},
		// dave stands for one group only.
		{[]string{"dave", "erin"}, 0, 1, []string{"security"}},
		{[]string{"dave", "erin"}, 2, 1, []string{"security"}},
		// A quorum beyond the groups asks for more people.
		{[]string{"alice", "carol", "erin"}, 4, 1, nil},
		{[]string{"alice", "carol", "erin", "bob"}, 4, 0, nil},
		// An outsider counts toward the quorum alone (the workflow checks
		// who may answer before any grant counts).
		{[]string{"mallory"}, 0, 3, []string{"sre", "security", "finance"}},
	} {
		t.Run(fmt.Sprint(c.people, c.quorum), func(t *testing.T) {
			if got := Short(board, c.quorum, c.people); got != c.short {
				t.Errorf("Short = %d, want %d", got, c.short)
			}
			if got := Unanswered(board, c.people); !slices.Equal(got, c.waiting) {
				t.Errorf("Unanswered = %v, want %v", got, c.waiting)
			}
		})
	}
	// No panel: a quorum alone.
	if Short(nil, 2, []string{"alice"}) != 1 || Short(nil, 2, []string{"alice", "bob"}) != 0 || Short(nil, 0, nil) != 0 {
		t.Error("without a panel Short is not the quorum's shortfall")
	}
	if !Adds(board, 0, []string{"alice"}, "carol") || Adds(board, 0, []string{"alice"}, "bob") || !Adds(board, 0, []string{"dave"}, "bob") {
		t.Error("Adds disagrees with the pairings")
	}
	if !Adds(board, 4, []string{"alice", "carol", "erin"}, "bob") || Adds(board, 3, []string{"alice", "carol", "erin"}, "bob") {
		t.Error("Adds disagrees with the quorum")
	}
}

// Two of treasury and one of legal: a group listed twice asks two of its
// members; whom a request waits for is said with how many.
func TestAGroupListedTwice(t *testing.T) {
	pair := []Group{
		{Name: "treasury", Members: []string{"carol", "dave", "frank"}},
		{Name: "legal", Members: []string{"dave", "erin"}},
		{Name: "treasury", Members: []string{"carol", "dave", "frank"}},
	}
	for _, c := range []struct {
		people []string
		short  int
		waits  string
	}{
		{nil, 3, "2 members of treasury and a member of legal"},
		{[]string{"carol"}, 2, "a member of legal and a member of treasury"},
		{[]string{"carol", "frank"}, 1, "a member of legal"},
		// dave answers for legal once carol and frank hold treasury.
		{[]string{"dave", "carol", "frank"}, 0, ""},
		{[]string{"dave", "erin"}, 1, "a member of treasury"},
	} {
		if got := Short(pair, 0, c.people); got != c.short {
			t.Errorf("%v: Short %d, want %d", c.people, got, c.short)
		}
		if got := Awaited(Unanswered(pair, c.people)); got != c.waits {
			t.Errorf("%v: waits for %q, want %q", c.people, got, c.waits)
		}
	}
	if Adds(pair, 0, []string{"carol", "frank"}, "dave") != true || Adds(pair, 0, []string{"erin", "dave"}, "carol") != true || Adds(pair, 0, []string{"erin"}, "dave") != true {
		t.Error("Adds")
	}
}

// pairs is the most groups of panel that people can answer for, one person
// to a group, found by trying every assignment: the oracle for matching.
func pairs(panel []Group, people []string) int {
	var best func(g int, used []bool) int
	best = func(g int, used []bool) int {
		if g == len(panel) {
			return 0
		}
		most := best(g+1, used) // the group left without a person
		for p, who := range people {
			if !used[p] && slices.Contains(panel[g].Members, who) {
				used[p] = true
				most = max(most, 1+best(g+1, used))
				used[p] = false
			}
		}
		return most
	}
	return best(0, make([]bool, len(people)))
}

// The pairing is as large as any assignment's, pairs each group with a
// member of it, no person twice; Short, Unanswered and Adds agree with it.
func TestMatchingIsMaximum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := []string{"a", "b", "c", "d", "e", "f"}
		var panel []Group
		for g := range rapid.IntRange(1, 5).Draw(t, "groups") {
			// A group listed again, as a panel asking two of it does.
			if g > 0 && rapid.IntRange(0, 3).Draw(t, fmt.Sprint("again", g)) == 0 {
				panel = append(panel, panel[rapid.IntRange(0, g-1).Draw(t, fmt.Sprint("which", g))])
				continue
			}
			members := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 4, rapid.ID[string]).Draw(t, fmt.Sprint("members", g))
			panel = append(panel, Group{Name: fmt.Sprint("g", g), Members: members})
		}
		people := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, len(names), rapid.ID[string]).Draw(t, "people")
		quorum := rapid.IntRange(0, 7).Draw(t, "quorum")

		m := matching(panel, people)
		n := 0
		for g, p := range m {
			if p < 0 {
				continue
			}
			n++
			if !slices.Contains(panel[g].Members, people[p]) {
				t.Fatalf("group %s paired with %s, not a member", panel[g].Name, people[p])
			}
			if slices.Index(m, p) != g {
				t.Fatalf("%s paired with two groups: %v", people[p], m)
			}
		}
		if want := pairs(panel, people); n != want {
			t.Fatalf("paired %d groups, the most is %d", n, want)
		}
		if got := len(Unanswered(panel, people)); got != len(panel)-n {
			t.Fatalf("%d groups unanswered, %d paired of %d", got, n, len(panel))
		}
		short := Short(panel, quorum, people)
		if short != max(len(panel)-n, quorum-len(people), 0) {
			t.Fatalf("Short %d", short)
		}
		// Short is what it says: no fewer further people will do, and
		// where everyone may answer, that many do.
		if short > 0 {
			more := []string{}
			for _, who := range names {
				if !slices.Contains(people, who) && Adds(panel, quorum, people, who) {
					more = append(more, who)
				}
			}
			for _, who := range more {
				if Short(panel, quorum, append(slices.Clip(people), who)) != short-1 {
					t.Fatalf("%s adds, yet Short does not fall by one", who)
				}
			}
		}
	})
}

// BenchmarkShort asks the largest panel a policy may name (10 groups of
// 100 members each, every member in two groups) about ten people, the
// question every grant toward it asks.
func BenchmarkShort(b *testing.B) {
	var big []Group
	for g := range 10 {
		var members []string
		for m := range 100 {
			members = append(members, fmt.Sprintf("p%d", (g*50+m)%500))
		}
		big = append(big, Group{Name: fmt.Sprint("g", g), Members: members})
	}
	var people []string
	for p := range 10 {
		people = append(people, fmt.Sprintf("p%d", p*50+25))
	}
	b.ReportAllocs()
	for b.Loop() {
		if Short(big, 10, people) != 0 {
			b.Fatal("ten people, one in each group, fall short")
		}
	}
}

// BenchmarkShortBoard asks a panel of three small groups about two people.
func BenchmarkShortBoard(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if Short(board, 0, []string{"dave", "bob"}) != 1 {
			b.Fatal("dave and bob answer for sre and security")
		}
	}
}
