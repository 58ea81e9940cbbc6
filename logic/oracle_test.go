package logic

import (
	"fmt"
	"slices"
	"strings"
)

// naive is an independent, deliberately simple evaluator used as the
// oracle in differential tests: it works on the syntax tree, keeps facts as
// strings in maps, and re-runs every rule of a stratum until nothing
// changes. It shares with the engine only the stratum assignment and the
// walks that name a clause's variables (which of an aggregate's are its
// rule's).
type naive struct {
	c     *Compiled
	facts map[string]map[string][]Value // table name ("p" or "-p") -> key -> tuple
	outer map[string]bool               // the rule in hand's variables outside its aggregates
}

func tkey(vals []Value) string {
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(v.String())
		b.WriteByte('|')
	}
	return b.String()
}

func naiveEval(c *Compiled, base []Fact) (*naive, error) {
	n := &naive{c: c, facts: map[string]map[string][]Value{}}
	for _, rel := range c.rels {
		n.facts[rel.name] = map[string][]Value{}
		n.facts["-"+rel.name] = map[string][]Value{}
	}
	for _, f := range base {
		name := f.Rel
		if f.Neg {
			name = "-" + name
		}
		n.facts[name][tkey(f.Args)] = f.Args
	}
	for si := range c.strata {
		for changed := true; changed; {
			changed = false
			for _, ri := range c.strata[si].rules {
				cl := c.prog.Clauses[ri]
				n.outer = outerNames(cl)
				var heads [][]Value
				err := n.solve(cl, cl.Body, map[string]Value{}, func(env map[string]Value) error {
					h := make([]Value, len(cl.Head.Args))
					for i, a := range cl.Head.Args {
						v, err := n.value(a, env)
						if err == errNoValue {
							return nil // a min or max of nothing: no head
						}
						if err != nil {
							return err
						}
						h[i] = v
					}
					heads = append(heads, h)
					return nil
				})
				if err != nil {
					return nil, err
				}
				name := cl.Head.Name
				if cl.Head.Neg {
					name = "-" + name
				}
				for _, h := range heads {
					if _, ok := n.facts[name][tkey(h)]; !ok {
						n.facts[name][tkey(h)] = h
						changed = true
					}
				}
				if len(n.facts[name]) > 20000 {
					return nil, fmt.Errorf("oracle: too many tuples")
				}
			}
		}
	}
	return n, nil
}

func (n *naive) value(t Term, env map[string]Value) (Value, error) {
	switch t := t.(type) {
	case *Var:
		v, ok := env[t.Name]
		if !ok {
			return Value{}, errUnbound
		}
		return v, nil
	case *NumConst:
		return Num(t.Val), nil
	case *SymConst:
		return Sym(t.Val), nil
	case *Aggregate:
		return n.aggregate(t, env)
	case *BinExpr:
		l, err := n.value(t.L, env)
		if err != nil {
			return Value{}, err
		}
		r, err := n.value(t.R, env)
		if err != nil {
			return Value{}, err
		}
		switch t.Op {
		case '+':
			return Num(l.n + r.n), nil
		case '-':
			return Num(l.n - r.n), nil
		case '*':
			return Num(l.n * r.n), nil
		case '/':
			if r.n == 0 {
				return Value{}, errDivZero
			}
			return Num(l.n / r.n), nil
		case '%':
			if r.n == 0 {
				return Value{}, errDivZero
			}
			return Num(l.n % r.n), nil
		}
	}
	return Value{}, errUnbound
}

var (
	errUnbound = fmt.Errorf("unbound")
	errDivZero = fmt.Errorf("division by zero")
	errNoValue = fmt.Errorf("min or max of nothing")
)

// aggregate computes an aggregate by enumerating its body's solutions
// under env, once every variable it shares with its rule is bound there.
func (n *naive) aggregate(a *Aggregate, env map[string]Value) (Value, error) {
	inner := map[string]Value{}
	var unbound bool
	termVars(a, true, func(v *Var) {
		if n.outer[v.Name] {
			val, ok := env[v.Name]
			if !ok {
				unbound = true
			}
			inner[v.Name] = val
		}
	})
	if unbound {
		return Value{}, errUnbound
	}
	var cnt, acc int64
	err := n.solve(nil, a.Body, inner, func(e map[string]Value) error {
		var v int64
		if a.Target != nil {
			tv, err := n.value(a.Target, e)
			if err != nil {
				return err
			}
			v = tv.n
		}
		switch {
		case a.Func == "sum":
			acc += v
		case a.Func == "min" && (cnt == 0 || v < acc), a.Func == "max" && (cnt == 0 || v > acc):
			acc = v
		}
		cnt++
		return nil
	})
	if err != nil {
		return Value{}, err
	}
	switch a.Func {
	case "count":
		return Num(cnt), nil
	case "sum":
		return Num(acc), nil
	}
	if cnt == 0 {
		return Value{}, errNoValue
	}
	return Num(acc), nil
}

// solve enumerates substitutions satisfying items: positive atoms first
// (by scanning), then comparisons and equalities whenever they can be
// decided, then default negations.
func (n *naive) solve(cl *Clause, items []BodyItem, env map[string]Value, yield func(map[string]Value) error) error {
	// positive atom?
	for i, it := range items {
		l, ok := it.(*Literal)
		if !ok || l.Not {
			continue
		}
		rest := append(append([]BodyItem(nil), items[:i]...), items[i+1:]...)
		name := l.Atom.Name
		if l.Atom.Neg {
			name = "-" + name
		}
		keys := make([]string, 0, len(n.facts[name]))
		for k := range n.facts[name] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			tup := n.facts[name][k]
			env2 := map[string]Value{}
			for k, v := range env {
				env2[k] = v
			}
			ok := true
			var deferred []BodyItem
			for j, a := range l.Atom.Args {
				switch a := a.(type) {
				case *Wildcard:
				case *Var:
					if v, bound := env2[a.Name]; bound {
						ok = ok && v == tup[j]
					} else {
						env2[a.Name] = tup[j]
					}
				default:
					deferred = append(deferred, &Comparison{Op: "=", L: a, R: constOf(tup[j])})
				}
			}
			if !ok {
				continue
			}
			if err := n.solve(cl, append(deferred, rest...), env2, yield); err != nil {
				return err
			}
		}
		return nil
	}
	// comparisons
	for i, it := range items {
		cm, ok := it.(*Comparison)
		if !ok {
			continue
		}
		rest := append(append([]BodyItem(nil), items[:i]...), items[i+1:]...)
		l, lerr := n.value(cm.L, env)
		r, rerr := n.value(cm.R, env)
		if lerr == errDivZero || rerr == errDivZero {
			return errDivZero
		}
		if lerr == errNoValue || rerr == errNoValue {
			return nil
		}
		if lerr != nil || rerr != nil {
			if cm.Op == "=" {
				if v, isVar := cm.L.(*Var); isVar && lerr != nil && rerr == nil {
					env2 := copyEnv(env)
					env2[v.Name] = r
					return n.solve(cl, rest, env2, yield)
				}
				if v, isVar := cm.R.(*Var); isVar && rerr != nil && lerr == nil {
					env2 := copyEnv(env)
					env2[v.Name] = l
					return n.solve(cl, rest, env2, yield)
				}
			}
			continue
		}
		var pass bool
		c := compareValues(l, r)
		switch cm.Op {
		case "=":
			pass = c == 0
		case "!=":
			pass = c != 0
		case "<":
			pass = c < 0
		case "<=":
			pass = c <= 0
		case ">":
			pass = c > 0
		case ">=":
			pass = c >= 0
		}
		if !pass {
			return nil
		}
		return n.solve(cl, rest, env, yield)
	}
	// negations
	for i, it := range items {
		l := it.(*Literal)
		rest := append(append([]BodyItem(nil), items[:i]...), items[i+1:]...)
		name := l.Atom.Name
		if l.Atom.Neg {
			name = "-" + name
		}
		vals := make([]*Value, len(l.Atom.Args))
		for j, a := range l.Atom.Args {
			if _, w := a.(*Wildcard); w {
				continue
			}
			v, err := n.value(a, env)
			if err != nil {
				return err
			}
			vals[j] = &v
		}
		for _, tup := range n.facts[name] {
			match := true
			for j := range tup {
				if vals[j] != nil && *vals[j] != tup[j] {
					match = false
				}
			}
			if match {
				return nil
			}
		}
		return n.solve(cl, rest, env, yield)
	}
	return yield(env)
}

func copyEnv(env map[string]Value) map[string]Value {
	e := make(map[string]Value, len(env)+1)
	for k, v := range env {
		e[k] = v
	}
	return e
}

func constOf(v Value) Term {
	if v.sym {
		return &SymConst{Val: v.s}
	}
	return &NumConst{Val: v.n}
}

// sorted returns a table's tuples in engine order.
func (n *naive) sorted(name string) [][]Value {
	var out [][]Value
	for _, t := range n.facts[name] {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b []Value) int {
		for i := range a {
			if c := compareValues(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}
