// Package panel decides when the people who approved a request answer
// for a panel: several groups of approvers, each of which a different
// person must answer for (a production change signed off by an SRE lead
// and by someone from security). A group may be listed more than once,
// for as many of its members (two of treasury and one of legal). A person
// in two of its groups answers for one of them. It is pure: the runner, the workflow that checks a
// bundle's panels and the replay that checks a record all ask it.
package panel

import (
	"fmt"
	"slices"
	"strings"
)

// Group is one group of a panel: its name and the people who may answer
// for it.
type Group struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// matching pairs people with panel's groups, one person to one group and
// each to a group whose members they are among, pairing as many groups as
// any pairing could (a maximum bipartite matching, found by augmenting
// paths: a panel is a handful of groups, so its cost does not matter). It
// returns, for each group, the index in people of the person paired with
// it, or -1. The result depends only on the order of its arguments.
func matching(panel []Group, people []string) []int {
	byGroup := make([]int, len(panel))
	byPerson := make([]int, len(people))
	for i := range byGroup {
		byGroup[i] = -1
	}
	for i := range byPerson {
		byPerson[i] = -1
	}
	var seen []bool
	var augment func(g int) bool
	augment = func(g int) bool {
		for p, who := range people {
			if seen[p] || !slices.Contains(panel[g].Members, who) {
				continue
			}
			seen[p] = true
			if byPerson[p] < 0 || augment(byPerson[p]) {
				byPerson[p], byGroup[g] = g, p
				return true
			}
		}
		return false
	}
	for g := range panel {
		seen = make([]bool, len(people))
		augment(g)
	}
	return byGroup
}

// answered is how many of panel's groups people (distinct) can answer for,
// one person to a group.
func answered(panel []Group, people []string) int {
	n := 0
	for _, p := range matching(panel, people) {
		if p >= 0 {
			n++
		}
	}
	return n
}

// Short is how many more people's approvals a request needing quorum
// people's approvals and, where panel is not nil, one from each of its
// groups by different people still needs, at least, once people
// (distinct) have approved it: 0 when they approve it. Each further person
// pairs at most one more group and counts once toward the quorum, and a
// suitable one does both, so no fewer will do and, where the groups have
// the members, no more are needed.
func Short(panel []Group, quorum int, people []string) int {
	return max(len(panel)-answered(panel, people), quorum-len(people), 0)
}

// Adds reports whether a grant by who, not among people, brings a request
// closer to approval (see Short): a second member of a group already
// answered for adds nothing while the grant answering it stands, unless
// the quorum asks for more people than the panel has groups.
func Adds(panel []Group, quorum int, people []string, who string) bool {
	return Short(panel, quorum, append(slices.Clip(people), who)) < Short(panel, quorum, people)
}

// Unanswered names the groups of panel that people (distinct) leave
// without a person of their own, in the panel's order: whom a request
// still waits for.
func Unanswered(panel []Group, people []string) []string {
	var out []string
	for g, p := range matching(panel, people) {
		if p < 0 {
			out = append(out, panel[g].Name)
		}
	}
	return out
}

// Awaited says whom a request still waits for, given the groups
// Unanswered names: "a member of legal", "2 members of treasury and a
// member of legal", in the order the groups first appear; "" when it
// names none.
func Awaited(groups []string) string {
	var names []string
	count := map[string]int{}
	for _, g := range groups {
		if count[g] == 0 {
			names = append(names, g)
		}
		count[g]++
	}
	parts := make([]string, len(names))
	for i, g := range names {
		if n := count[g]; n > 1 {
			parts[i] = fmt.Sprintf("%d members of %s", n, g)
		} else {
			parts[i] = "a member of " + g
		}
	}
	return strings.Join(parts, " and ")
}
