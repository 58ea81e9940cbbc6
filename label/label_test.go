package label

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCheckKey(t *testing.T) {
	for _, c := range []struct {
		key string
		ok  bool
	}{
		{"a", true}, {"order", true}, {"team.payments/region-1_b", true}, {"0", true}, {strings.Repeat("k", 63), true},
		{"", false}, {strings.Repeat("k", 64), false}, {"Order", false}, {"-a", false}, {"a-", false}, {".a", false},
		{"a b", false}, {"a=b", false}, {"é", false}, {"a\x00", false}, {"/", false}, {"a:b", false},
	} {
		err := CheckKey(c.key)
		if (err == nil) != c.ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", c.key, err, c.ok)
		}
		var le *Error
		if err != nil && (!errors.As(err, &le) || le.Key != c.key) {
			t.Errorf("CheckKey(%q) = %#v: not an *Error naming the key", c.key, err)
		}
	}
}

func TestCheckValue(t *testing.T) {
	for _, c := range []struct {
		value string
		ok    bool
	}{
		{"A-1042", true}, {"alice@example.com", true}, {"a=b c", true}, {"日本", true}, {strings.Repeat("v", 256), true},
		{"", false}, {strings.Repeat("v", 257), false}, {"a\nb", false}, {"\t", false}, {"\x7f", false}, {"\xff", false}, {"a\u0085", false}, {"e\u0301", false}, {"\u00e9", true}, {"\u0958", false}, {"\u0915\u093c", true},
	} {
		if err := CheckValue("k", c.value); (err == nil) != c.ok {
			t.Errorf("CheckValue(%q) = %v, want ok %v", c.value, err, c.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	many := map[string]string{}
	for i := range 17 {
		many[string(rune('a'+i))] = "v"
	}
	if err := Check(many); err == nil || !strings.Contains(err.Error(), "17 labels") {
		t.Fatalf("17 labels: %v", err)
	}
	delete(many, "a")
	if err := Check(many); err != nil {
		t.Fatalf("16 labels: %v", err)
	}
	if err := Check(nil); err != nil {
		t.Fatal(err)
	}
	// The first refusal in key order is reported, whatever the map's order.
	for range 20 {
		err := Check(map[string]string{"b": "", "a": "", "C": "x"})
		if err == nil || err.(*Error).Key != "C" {
			t.Fatalf("got %v, want the refusal of C (first in byte order)", err)
		}
	}
	if err := Check(map[string]string{"flrh.schedule": "nightly"}); err != nil {
		t.Fatalf("Check refuses flrh's own key: %v", err)
	}
	if err := CheckGiven(map[string]string{"flrh.schedule": "nightly"}); err == nil || !strings.Contains(err.Error(), "flrh's own") {
		t.Fatalf("CheckGiven admits flrh's own key: %v", err)
	}
	if err := CheckGiven(map[string]string{"flrhx": "y", "team": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckBeside(many, "flrh.schedule"); err == nil || err.Error() != "16 labels, and the runs bear flrh.schedule besides: at most 15" {
		t.Fatalf("16 labels beside flrh's own: %v", err)
	}
	delete(many, "b")
	if err := CheckBeside(many, "flrh.schedule"); err != nil {
		t.Fatalf("15 labels beside flrh's own: %v", err)
	}
	if err := CheckBeside(map[string]string{"flrh.webhook": "x"}, "flrh.webhook"); err == nil {
		t.Fatal("CheckBeside admits flrh's own key")
	}
}

func TestParseAll(t *testing.T) {
	got, err := ParseAll([]string{"order=A-1", "url=https://x.example/?a=b"})
	if err != nil || !maps.Equal(got, map[string]string{"order": "A-1", "url": "https://x.example/?a=b"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := ParseAll(nil); got != nil || err != nil {
		t.Fatalf("none: %v %v", got, err)
	}
	for _, bad := range [][]string{{"order"}, {"=v"}, {"k="}, {"K=v"}, {"a=1", "a=2"}, {"a=1", "a=1"}} {
		if got, err := ParseAll(bad); err == nil || got != nil {
			t.Errorf("ParseAll(%q) = %v, %v: want a refusal and nothing", bad, got, err)
		}
	}
}

func TestMergeAndString(t *testing.T) {
	base := map[string]string{"a": "1", "b": "2"}
	got := Merge(base, map[string]string{"b": "3", "c": "4"})
	if !maps.Equal(got, map[string]string{"a": "1", "b": "3", "c": "4"}) || base["b"] != "2" {
		t.Fatalf("Merge: %v (base %v)", got, base)
	}
	if Merge(nil, map[string]string{}) != nil {
		t.Fatal("Merge of nothing is not nil")
	}
	if s := String(got); s != "a=1, b=3, c=4" {
		t.Fatalf("String: %q", s)
	}
}

// Encode and Decode round-trip every set Check passes, Encode is the same
// bytes however the map was built, and Matches is its definition: every
// wanted key present with the same value.
func TestEncodeDecodeMatches(t *testing.T) {
	keyGen := rapid.StringMatching(`[a-z0-9]([a-z0-9._/-]{0,6}[a-z0-9])?`)
	valueGen := rapid.StringMatching(`[^\x00-\x1f\x7f]{1,12}`).Filter(func(v string) bool { return CheckValue("k", v) == nil })
	setGen := rapid.MapOfN(keyGen, valueGen, 0, MaxLabels)
	rapid.Check(t, func(t *rapid.T) {
		set := setGen.Draw(t, "set")
		if err := Check(set); err != nil {
			t.Fatalf("a drawn set refused: %v", err)
		}
		enc := Encode(set)
		if (enc == "") != (len(set) == 0) {
			t.Fatalf("Encode(%v) = %q", set, enc)
		}
		if Encode(maps.Clone(set)) != enc {
			t.Fatal("Encode is not deterministic")
		}
		back, err := Decode(enc)
		if err != nil || !maps.Equal(back, set) {
			t.Fatalf("Decode(%q) = %v, %v; want %v", enc, back, err, set)
		}
		want := rapid.MapOfN(keyGen, valueGen, 0, 3).Draw(t, "want")
		if rapid.Bool().Draw(t, "subset") {
			// Draw the wanted labels from the set itself, half the time.
			want = map[string]string{}
			for k, v := range set {
				if rapid.Bool().Draw(t, "take "+k) {
					want[k] = v
				}
			}
		}
		def := true
		for k, v := range want {
			got, ok := set[k]
			def = def && ok && got == v
		}
		if Matches(set, want) != def {
			t.Fatalf("Matches(%v, %v) = %v, want %v", set, want, !def, def)
		}
	})
}

func TestDecodeRefuses(t *testing.T) {
	for _, bad := range []string{"{", "[]", `{"a":1}`, `"a"`, "null x"} {
		if got, err := Decode(bad); err == nil || got != nil {
			t.Errorf("Decode(%q) = %v, %v", bad, got, err)
		}
	}
	if got, err := Decode("{}"); got != nil || err != nil {
		t.Fatalf("{}: %v %v", got, err)
	}
}

// Parse never panics, and what it takes is a key and a value Check takes,
// which read back as given.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"order=A-1", "a==b", "=", "K=v", "a=\n", "team.x/y-z_1=日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, v, err := Parse(s)
		if err != nil {
			return
		}
		if k+"="+v != s || Check(map[string]string{k: v}) != nil {
			t.Fatalf("Parse(%q) = %q, %q", s, k, v)
		}
	})
}

// Decode never panics; what it reads Encode writes back to equal labels.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":"b"}`, `{"a":1}`, "[", `{"a":"b","a":"c"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := Decode(s)
		if err != nil {
			return
		}
		back, err := Decode(Encode(set))
		if err != nil || !maps.Equal(back, set) {
			t.Fatalf("%q: %v then %v, %v", s, set, back, err)
		}
	})
}
