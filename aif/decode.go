package aif

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"flrh.dev/flrh/aif/fixed"
)

// ModelKind is the kind of a model document.
const ModelKind = "flrh.aif.model"

// MaxModelBytes bounds a model document.
const MaxModelBytes = 64 << 20

// Process describes the simulated world a model can be stepped against when
// no observations are supplied: the true initial state of each factor.
// Observations are drawn from A at the true state and the true state moves
// with B under the chosen action, with draws seeded per tick.
type Process struct {
	Initial []int // true initial state per factor
}

// Document is a decoded model file: the model plus the run settings that
// travel with it.
type Document struct {
	Model     *Model
	Selection SelectMode
	Process   *Process // nil when the file declares none
}

// Decode parses and validates a model document. Numbers are decimal
// literals converted exactly to the 1e-9 fixed-point grid (finer digits are
// refused), so a model means the same on every machine. Errors carry the
// JSON Pointer of the offending value.
func Decode(text []byte) (*Document, error) {
	if len(text) > MaxModelBytes {
		return nil, errf(CodeLimit, "", "document larger than %d bytes", MaxModelBytes)
	}
	if err := checkDuplicateKeys(text); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, errf(CodeSyntax, "", "%v", err)
	}
	if dec.More() {
		return nil, errf(CodeSyntax, "", "trailing data after the model")
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, errf(CodeSyntax, "", "a model is a JSON object")
	}
	if err := onlyKeys(obj, "", "kind", "version", "factors", "modalities", "policies", "horizon", "E", "gamma", "discount", "learning_rate", "selection", "process"); err != nil {
		return nil, err
	}
	if k, _ := obj["kind"].(string); k != ModelKind {
		return nil, errf(CodeMissing, "/kind", "want %q", ModelKind)
	}
	if v, err := intAt(obj, "version", "", -1); err != nil || v != 1 {
		return nil, errf(CodeRange, "/version", "want version 1")
	}
	m := &Model{}
	factors, err := arrayAt(obj, "factors", "")
	if err != nil {
		return nil, err
	}
	for i, fv := range factors {
		at := ptr("factors", i)
		fo, ok := fv.(map[string]any)
		if !ok {
			return nil, errf(CodeSyntax, at, "a factor is an object")
		}
		if err := onlyKeys(fo, at, "name", "states", "actions", "B", "D", "pB"); err != nil {
			return nil, err
		}
		var f Factor
		if f.Name, err = stringAt(fo, "name", at); err != nil {
			return nil, err
		}
		if f.States, err = stringsAt(fo, "states", at, true); err != nil {
			return nil, err
		}
		if f.Actions, err = stringsAt(fo, "actions", at, false); err != nil {
			return nil, err
		}
		if len(f.Actions) == 0 {
			f.Actions = []string{"stay"}
		}
		S, U := len(f.States), len(f.Actions)
		if v, ok := fo["B"]; ok {
			if f.B, err = tensor(v, []int{S, S, U}, at+"/B"); err != nil {
				return nil, err
			}
		} else if _, ok := fo["pB"]; !ok {
			return nil, errf(CodeMissing, at+"/B", "a factor needs B (or pB)")
		}
		if v, ok := fo["pB"]; ok {
			if f.PB, err = tensor(v, []int{S, S, U}, at+"/pB"); err != nil {
				return nil, err
			}
		}
		if v, ok := fo["D"]; ok {
			if f.D, err = tensor(v, []int{S}, at+"/D"); err != nil {
				return nil, err
			}
		} else {
			return nil, errf(CodeMissing, at+"/D", "a factor needs its prior D")
		}
		m.Factors = append(m.Factors, f)
	}
	stateShape := make([]int, 0, len(m.Factors))
	for _, f := range m.Factors {
		stateShape = append(stateShape, len(f.States))
	}
	mods, err := arrayAt(obj, "modalities", "")
	if err != nil {
		return nil, err
	}
	for i, mv := range mods {
		at := ptr("modalities", i)
		mo, ok := mv.(map[string]any)
		if !ok {
			return nil, errf(CodeSyntax, at, "a modality is an object")
		}
		if err := onlyKeys(mo, at, "name", "outcomes", "A", "C", "pA"); err != nil {
			return nil, err
		}
		var md Modality
		if md.Name, err = stringAt(mo, "name", at); err != nil {
			return nil, err
		}
		if md.Outcomes, err = stringsAt(mo, "outcomes", at, true); err != nil {
			return nil, err
		}
		shape := append([]int{len(md.Outcomes)}, stateShape...)
		if v, ok := mo["A"]; ok {
			if md.A, err = tensor(v, shape, at+"/A"); err != nil {
				return nil, err
			}
		} else if _, ok := mo["pA"]; !ok {
			return nil, errf(CodeMissing, at+"/A", "a modality needs A (or pA)")
		}
		if v, ok := mo["pA"]; ok {
			if md.PA, err = tensor(v, shape, at+"/pA"); err != nil {
				return nil, err
			}
		}
		if v, ok := mo["C"]; ok {
			if md.C, err = tensor(v, []int{len(md.Outcomes)}, at+"/C"); err != nil {
				return nil, err
			}
		} else {
			md.C = make([]float64, len(md.Outcomes)) // no preference
		}
		m.Modalities = append(m.Modalities, md)
	}
	if pv, ok := obj["policies"]; ok {
		if _, both := obj["horizon"]; both {
			return nil, errf(CodeSyntax, "/horizon", "give either policies or horizon, not both")
		}
		pols, ok := pv.([]any)
		if !ok {
			return nil, errf(CodeShape, "/policies", "an array of policies")
		}
		for p, polv := range pols {
			steps, ok := polv.([]any)
			if !ok {
				return nil, errf(CodeShape, ptr("policies", p), "a policy is an array of steps")
			}
			var pol [][]int
			for t, sv := range steps {
				names, ok := sv.([]any)
				if !ok || len(names) != len(m.Factors) {
					return nil, errf(CodePolicy, ptr("policies", p, t), "a step names one action per factor (%d)", len(m.Factors))
				}
				step := make([]int, len(names))
				for f, nv := range names {
					name, _ := nv.(string)
					idx := indexOf(m.Factors[f].Actions, name)
					if idx < 0 {
						return nil, errf(CodePolicy, ptr("policies", p, t, f), "factor %s has no action %q", m.Factors[f].Name, name)
					}
					step[f] = idx
				}
				pol = append(pol, step)
			}
			m.Policies = append(m.Policies, pol)
		}
	} else {
		h := int64(1)
		if _, ok := obj["horizon"]; ok {
			if h, err = intAt(obj, "horizon", "", 1); err != nil {
				return nil, err
			}
		}
		if h < 1 || h > MaxHorizon {
			return nil, errf(CodeRange, "/horizon", "must be in 1..%d", MaxHorizon)
		}
		n := 1
		for _, f := range m.Factors {
			n *= len(f.Actions)
		}
		total := 1
		for t := int64(0); t < h; t++ {
			total *= n
			if total > MaxPolicies {
				return nil, errf(CodeLimit, "/horizon", "more than %d policies", MaxPolicies)
			}
		}
		m.Policies = EnumeratePolicies(m.Factors, int(h))
	}
	if v, ok := obj["E"]; ok {
		if m.E, err = tensor(v, []int{len(m.Policies)}, "/E"); err != nil {
			return nil, err
		}
	}
	if m.Gamma, err = numberAt(obj, "gamma", "", 16); err != nil {
		return nil, err
	}
	if m.Discount, err = numberAt(obj, "discount", "", 1); err != nil {
		return nil, err
	}
	if m.LearningRate, err = numberAt(obj, "learning_rate", "", 0); err != nil {
		return nil, err
	}
	doc := &Document{Model: m, Selection: SelectArgmax}
	if v, ok := obj["selection"]; ok {
		s, _ := v.(string)
		switch SelectMode(s) {
		case SelectArgmax, SelectSample:
			doc.Selection = SelectMode(s)
		default:
			return nil, errf(CodeRange, "/selection", "want %q or %q", SelectArgmax, SelectSample)
		}
	}
	if v, ok := obj["process"]; ok {
		po, ok := v.(map[string]any)
		if !ok {
			return nil, errf(CodeSyntax, "/process", "an object")
		}
		if err := onlyKeys(po, "/process", "initial"); err != nil {
			return nil, err
		}
		names, err := stringsAt(po, "initial", "/process", true)
		if err != nil {
			return nil, err
		}
		if len(names) != len(m.Factors) {
			return nil, errf(CodeShape, "/process/initial", "want one state per factor (%d)", len(m.Factors))
		}
		pr := &Process{}
		for f, n := range names {
			idx := indexOf(m.Factors[f].States, n)
			if idx < 0 {
				return nil, errf(CodeName, ptr("process", "initial", f), "factor %s has no state %q", m.Factors[f].Name, n)
			}
			pr.Initial = append(pr.Initial, idx)
		}
		doc.Process = pr
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return doc, nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func onlyKeys(obj map[string]any, at string, allowed ...string) error {
	var unknown []string
	for k := range obj {
		if indexOf(allowed, k) < 0 {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errf(CodeSyntax, at+"/"+unknown[0], "unknown member")
	}
	return nil
}

func arrayAt(obj map[string]any, key, at string) ([]any, error) {
	v, ok := obj[key]
	if !ok {
		return nil, errf(CodeMissing, at+"/"+key, "required")
	}
	a, ok := v.([]any)
	if !ok {
		return nil, errf(CodeShape, at+"/"+key, "want an array")
	}
	return a, nil
}

func stringAt(obj map[string]any, key, at string) (string, error) {
	s, ok := obj[key].(string)
	if !ok || s == "" {
		return "", errf(CodeName, at+"/"+key, "want a non-empty string")
	}
	return s, nil
}

func stringsAt(obj map[string]any, key, at string, required bool) ([]string, error) {
	v, ok := obj[key]
	if !ok {
		if required {
			return nil, errf(CodeMissing, at+"/"+key, "required")
		}
		return nil, nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, errf(CodeShape, at+"/"+key, "want an array of strings")
	}
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, errf(CodeName, fmt.Sprintf("%s/%s/%d", at, key, i), "want a string")
		}
		out[i] = s
	}
	return out, nil
}

func parseNumber(v any, at string) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errf(CodeNumber, at, "want a number, have %T", v)
	}
	f, err := fixed.Parse(string(n))
	if err != nil {
		code := CodeNumber
		if errors.Is(err, fixed.ErrRange) {
			code = CodeRange
		}
		return 0, errf(code, at, "%s: %v", n, err)
	}
	return f.Float(), nil
}

func numberAt(obj map[string]any, key, at string, def float64) (float64, error) {
	v, ok := obj[key]
	if !ok {
		return def, nil
	}
	return parseNumber(v, at+"/"+key)
}

func intAt(obj map[string]any, key, at string, def int64) (int64, error) {
	v, ok := obj[key]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, errf(CodeNumber, at+"/"+key, "want an integer")
	}
	i, err := n.Int64()
	if err != nil {
		return 0, errf(CodeNumber, at+"/"+key, "want an integer")
	}
	return i, nil
}

// tensor flattens a nested array of the given shape in row-major order.
func tensor(v any, shape []int, at string) ([]float64, error) {
	size := 1
	for _, d := range shape {
		size *= d
		if size > MaxTensor {
			return nil, errf(CodeLimit, at, "tensor larger than %d entries", MaxTensor)
		}
	}
	out := make([]float64, 0, size)
	var walk func(v any, depth int, at string) error
	walk = func(v any, depth int, at string) error {
		if depth == len(shape) {
			x, err := parseNumber(v, at)
			if err != nil {
				return err
			}
			out = append(out, x)
			return nil
		}
		a, ok := v.([]any)
		if !ok || len(a) != shape[depth] {
			have := "a non-array"
			if ok {
				have = fmt.Sprintf("%d entries", len(a))
			}
			return errf(CodeShape, at, "want an array of %d entries (shape %v), have %s", shape[depth], shape, have)
		}
		for i, x := range a {
			if err := walk(x, depth+1, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(v, 0, at); err != nil {
		return nil, err
	}
	return out, nil
}
