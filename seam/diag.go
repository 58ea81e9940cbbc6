package seam

import (
	"cmp"
	"slices"

	"flrh.dev/flrh/cjson"
)

// The reference reports the first invalid query in a "diagnostic order": a
// total order over JSON values that ignores the order of every set-like
// array inside a query. Using the same order makes the reported query (and
// its JSON Pointer) independent of how the caller happened to order things.
//
// The order ranks null < booleans < integers < strings < arrays < objects;
// strings compare by code point, arrays element by element (a prefix first),
// and objects by their members sorted by name, comparing name then value.

func diagRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case int64:
		return 2
	case string:
		return 4
	case []any:
		return 5
	case map[string]any:
		return 6
	}
	return 7
}

// diagCompare compares two values of the cjson value model.
func diagCompare(a, b any) int {
	ra, rb := diagRank(a), diagRank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return cmp.Compare(x, b.(string)) // UTF-8 byte order is code point order
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := diagCompare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(x), len(y))
	case map[string]any:
		y := b.(map[string]any)
		kx, ky := sortedKeys(x), sortedKeys(y)
		for i := 0; i < len(kx) && i < len(ky); i++ {
			if c := cmp.Compare(kx[i], ky[i]); c != 0 {
				return c
			}
			if c := diagCompare(x[kx[i]], y[ky[i]]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(kx), len(ky))
	}
	return 0
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func atomTree(a Atom) any {
	if a.IsZero() {
		return nil
	}
	v, err := cjson.Decode([]byte(a.canon))
	if err != nil {
		return nil
	}
	return v
}

func requirementTree(r *FactRequirement) any {
	return map[string]any{
		"kind":            "LRFactRequirement",
		"precondition_id": r.PreconditionID,
		"literal": map[string]any{
			"kind":     "LLiteral",
			"polarity": string(r.Literal.Polarity),
			"atom":     atomTree(r.Literal.Atom),
		},
	}
}

func stringsTree(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	slices.SortFunc(out, diagCompare)
	return out
}

func queryTree(q *Query) any {
	var proposal any
	if b, err := cjson.Marshal(q.Proposal); err == nil {
		proposal, _ = cjson.Decode(b)
	}
	if m, ok := proposal.(map[string]any); ok {
		if pre, ok := m["preconditions"].([]any); ok {
			slices.SortFunc(pre, diagCompare)
		}
	}
	reqs := make([]any, len(q.FactRequirements))
	for i := range q.FactRequirements {
		reqs[i] = requirementTree(&q.FactRequirements[i])
	}
	slices.SortFunc(reqs, diagCompare)
	return map[string]any{
		"kind":                      "LRProjectionQuery",
		"proposal":                  proposal,
		"fact_requirements":         reqs,
		"frontier_precondition_ids": stringsTree(q.FrontierPreconditionIDs),
		"query_digest":              q.QueryDigest,
	}
}

// diagnosticOrder returns the indexes of qs in diagnostic order.
func diagnosticOrder(qs []Query) []int {
	trees := make([]any, len(qs))
	idx := make([]int, len(qs))
	for i := range qs {
		trees[i] = queryTree(&qs[i])
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return diagCompare(trees[a], trees[b]) })
	return idx
}
