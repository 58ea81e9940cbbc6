package label

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Bounds of a run's labels.
const (
	MaxLabels   = 16
	MaxKeyLen   = 63
	MaxValueLen = 256
	// Reserved begins the keys flrh gives runs itself.
	Reserved = "flrh."
)

// Error is a label refused: Key names it ("" when the refusal is of the
// set as a whole), Reason says why.
type Error struct {
	Key    string
	Reason string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return e.Reason
	}
	return fmt.Sprintf("label %q: %s", e.Key, e.Reason)
}

func refuse(key, format string, args ...any) error {
	return &Error{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// CheckKey refuses a key that is not 1 to 63 of a–z, 0–9 and ". _ / -",
// first and last a letter or a digit.
func CheckKey(k string) error {
	if k == "" || len(k) > MaxKeyLen {
		return refuse(k, "a key is 1 to %d characters, not %d", MaxKeyLen, len(k))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && ((i == 0 || i == len(k)-1) || !strings.ContainsRune("._/-", rune(c))) {
			return refuse(k, "a key is lower-case letters, digits and . _ / -, beginning and ending with a letter or digit (byte %d is %q)", i, c)
		}
	}
	return nil
}

// CheckValue refuses a value of key k that is empty, longer than 256
// bytes, not UTF-8 in Unicode NFC or holding a control character.
func CheckValue(k, v string) error {
	switch {
	case v == "":
		return refuse(k, "the value is empty: give it one, or leave the label out")
	case len(v) > MaxValueLen:
		return refuse(k, "the value is %d bytes, more than %d", len(v), MaxValueLen)
	case !utf8.ValidString(v):
		return refuse(k, "the value is not UTF-8")
	case !norm.NFC.IsNormalString(v):
		// As every string flrh records canonically (package cjson): one
		// spelling of each text, so that a label reads, and is found,
		// the same in a store, an archive and a query.
		return refuse(k, "the value is not in Unicode NFC: normalize it (NFC) first")
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return refuse(k, "the value holds a control character at byte %d", i)
	}
	return nil
}

// Check refuses a set of more than 16 labels, or one whose keys or
// values break the rules; the first refusal in key order is the one
// reported. A nil or empty set passes.
func Check(set map[string]string) error {
	if len(set) > MaxLabels {
		return refuse("", "%d labels, more than %d", len(set), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if err := CheckKey(k); err != nil {
			return err
		}
		if err := CheckValue(k, set[k]); err != nil {
			return err
		}
	}
	return nil
}

// CheckGiven is Check for labels a caller gives a run: flrh's own keys
// (Reserved) are refused besides.
func CheckGiven(set map[string]string) error {
	if err := Check(set); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if strings.HasPrefix(k, Reserved) {
			return refuse(k, "keys beginning %q are flrh's own", Reserved)
		}
	}
	return nil
}

// CheckBeside is CheckGiven for the labels a schedule or a webhook gives
// the runs it starts, which bear its own key own (flrh.schedule, say)
// besides: one label fewer is left to them.
func CheckBeside(set map[string]string, own string) error {
	if err := CheckGiven(set); err != nil {
		return err
	}
	if len(set) >= MaxLabels {
		return refuse("", "%d labels, and the runs bear %s besides: at most %d", len(set), own, MaxLabels-1)
	}
	return nil
}

// Parse reads "key=value", split at the first "=", and checks both.
func Parse(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", refuse("", "label %q is no key=value", s)
	}
	if err := CheckKey(k); err != nil {
		return "", "", err
	}
	if err := CheckValue(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// ParseAll reads labels given as "key=value" each into a set (nil for
// none), refusing a key given twice and a set Check refuses.
func ParseAll(given []string) (map[string]string, error) {
	if len(given) == 0 {
		return nil, nil
	}
	set := make(map[string]string, len(given))
	for _, s := range given {
		k, v, err := Parse(s)
		if err != nil {
			return nil, err
		}
		if _, dup := set[k]; dup {
			return nil, refuse(k, "given twice")
		}
		set[k] = v
	}
	return set, Check(set)
}

// Merge is base with over's labels added, over's value standing where
// both have a key; nil when both are empty. Neither is changed.
func Merge(base, over map[string]string) map[string]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = make(map[string]string, len(over))
	}
	maps.Copy(out, over)
	return out
}

// Encode is a set as stored: JSON with its keys sorted, or "" for none.
// Decode(Encode(s)) is s for every set Check passes.
func Encode(set map[string]string) string {
	if len(set) == 0 {
		return ""
	}
	b, _ := json.Marshal(set) // a map of strings always encodes, keys sorted
	return string(b)
}

// Decode reads what Encode wrote: "" is none (nil). Anything else that
// is not a JSON object of strings is an error. The labels are not
// checked again: a store wrote them checked, and a run's header stays
// readable under rules made stricter later.
func Decode(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var set map[string]string
	if err := json.Unmarshal([]byte(s), &set); err != nil {
		return nil, refuse("", "stored labels are not a JSON object of strings: %v", err)
	}
	if len(set) == 0 {
		return nil, nil
	}
	return set, nil
}

// Matches reports whether set holds every label of want, value for
// value. An empty want matches every set.
func Matches(set, want map[string]string) bool {
	for k, v := range want { //flrh:orderfree a conjunction: every order gives the same answer
		if got, ok := set[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// String is a set as "k=v, k=v" in key order, "" for none: for people.
func String(set map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(set)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + set[k])
	}
	return b.String()
}
