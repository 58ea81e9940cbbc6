package aif

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// checkDuplicateKeys refuses a document in which some object repeats a
// member name: encoding/json would silently keep the last one, and a model
// must not mean two things. Syntax errors are left to the full decode.
func checkDuplicateKeys(text []byte) error {
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
		pending string // the member whose value comes next
		index   int    // next array index
		name    string // this container's segment in its parent
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			top := stack[n-1]
			k, _ := tok.(string)
			if top.keys[k] {
				var b strings.Builder
				for _, f := range stack[1:] {
					b.WriteString("/" + f.name)
				}
				return errf(CodeSyntax, b.String()+"/"+k, "member %q appears twice", k)
			}
			top.keys[k] = true
			top.wantKey, top.pending = false, k
			continue
		}
		seg := ""
		if n := len(stack); n > 0 {
			top := stack[n-1]
			if top.obj {
				seg, top.wantKey = top.pending, true
			} else {
				seg = strconv.Itoa(top.index)
				top.index++
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, wantKey: d == '{', name: seg})
		} else if len(stack) == 0 {
			return nil
		}
	}
}
