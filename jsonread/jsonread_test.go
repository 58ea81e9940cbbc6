package jsonread

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// shout decodes itself, upper-cased: the reader must leave it to
// encoding/json.
type shout string

func (s *shout) UnmarshalText(b []byte) error {
	*s = shout(strings.ToUpper(string(b)))
	return nil
}

type names []string

type inner struct {
	N    int64  `json:"n"`
	Tag  string `json:"tag"`
	Flag bool   `json:"flag"`
}

// doc holds a member of every kind the reader reads itself, and of kinds it
// hands to encoding/json.
type doc struct {
	Kind   string            `json:"kind"`
	Count  int64             `json:"count"`
	OK     bool              `json:"ok"`
	Ref    *string           `json:"ref"`
	Names  names             `json:"names"`
	List   []string          `json:"list,omitempty"`
	Inner  inner             `json:"inner"`
	Loud   shout             `json:"loud"`
	Extra  map[string]int    `json:"extra"`
	Quoted int64             `json:"quoted,string"`
	Raw    json.RawMessage   `json:"raw"`
	Nums   []int64           `json:"nums"`
	Any    map[string]string `json:"any"`
}

var (
	docReader  = NewReader(doc{})
	keptReader = NewReader(doc{}).Keeping("kind", "names", "inner")
	copyReader = NewReader(doc{}).OneCopy()
)

var seeds = []string{
	`{"count":3,"inner":{"flag":true,"n":-7,"tag":"t"},"kind":"k","list":["a"],"names":["x","y"],"ok":true,"ref":"r"}`,
	`{"names":[],"ref":null,"kind":null,"inner":null}`, `{"loud":"abc","extra":{"a":1},"quoted":"7","raw":[1,{"b":2}],"nums":[1,2]}`,
	`{"kind":"a\u0062"}`, `{"Kind":"x"}`, `{"kind":"x","kind":"y"}`, `{"ok":1}`, `{"names":"a"}`, `{"names":["a",1]}`,
	"{\"kind\":\"\xff\"}", `{"names":["\xff"]}`, `{"count":1.0}`, `{"count":-0}`, `{"count":99999999999999999999}`,
	`{"inner":{"N":1}}`, `{"inner":{"n":1,"n":2}}`, `{"ſtate":1}`, `{"kind":"x"} `, `[]`, `null`, `{"names":[null]}`,
	`{"names":["a",]}`, `{"any":{"k":"v"},"list":null}`, `{"KIND":"x"}`, `{"count":1,"COUNT":2}`,
	`{"a_very_long_member_name_that_the_index_does_not_fold_on_the_stack_at_all":1}`,
}

// Wherever the reader answers, encoding/json reads the same value from the
// same text, and without error; a reader keeping some members reads them
// alike and leaves the others zero, and accepts exactly what the whole
// reader accepts.
func FuzzReaderAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want doc
		ok := docReader.Read(b, &got)
		if ok {
			if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: read %+v, encoding/json %+v %v", b, got, want, err)
			}
		}
		// The key index finds what comparing each key with every name finds.
		mi, oki := readMembers(make([][]byte, len(docReader.keys)), b, false, docReader.keys, docReader.index)
		ml, okl := readMembers(make([][]byte, len(docReader.keys)), b, false, docReader.keys, nil)
		if oki != okl || !reflect.DeepEqual(mi, ml) {
			t.Fatalf("%q: indexed %v %q, compared %v %q", b, oki, mi, okl, ml)
		}
		// A one-copy reader reads the same, and its strings are not the
		// text's bytes: overwriting the text changes none of them.
		var copied doc
		text := append([]byte(nil), b...)
		if copyReader.Read(text, &copied) != ok {
			t.Fatalf("%q: the one-copy reader says %v, the whole reader %v", b, !ok, ok)
		}
		for i := range text {
			text[i] = 'x'
		}
		if ok && !reflect.DeepEqual(copied, got) {
			t.Fatalf("%q: one copy read %+v, the reader %+v", b, copied, got)
		}
		var kept doc
		if keptReader.Read(b, &kept) != ok {
			t.Fatalf("%q: the reader keeping some members says %v, the whole reader %v", b, !ok, ok)
		}
		if ok && !reflect.DeepEqual(kept, doc{Kind: want.Kind, Names: want.Names, Inner: want.Inner}) {
			t.Fatalf("%q: kept %+v of %+v", b, kept, want)
		}
	})
}

// The seeds themselves, in every test run: the reader reads what it should
// read itself, and gives up where it should.
func TestReaderOnSeeds(t *testing.T) {
	var d doc
	if !docReader.Read([]byte(seeds[0]), &d) || d.Inner.N != -7 || len(d.Names) != 2 || d.Ref == nil || *d.Ref != "r" {
		t.Fatalf("read %+v", d)
	}
	d = doc{}
	if !docReader.Read([]byte(`{"names":[]}`), &d) || d.Names == nil {
		t.Fatalf("an empty list read as %#v, encoding/json makes it empty, not nil", d.Names)
	}
	d = doc{}
	if !docReader.Read([]byte(`{"loud":"abc"}`), &d) || d.Loud != "ABC" {
		t.Fatalf("a type that decodes itself read as %q", d.Loud)
	}
	for _, s := range []string{`{"kind":"a\u0062"}`, `{"Kind":"x"}`, `{"kind":"x","kind":"y"}`, "{\"kind\":\"\xff\"}", `{"count":1.0}`, `{"kind":"x"} `} {
		if docReader.Read([]byte(s), &doc{}) {
			t.Errorf("%s: read, but only encoding/json can say how", s)
		}
	}
}

func TestNewReaderRefusesWhatItCannotRead(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a struct with an untagged field was accepted")
		}
	}()
	NewReader(struct{ A string }{})
}

// plainDoc holds only members the reader reads itself.
type plainDoc struct {
	Kind  string   `json:"kind"`
	Count int64    `json:"count"`
	OK    bool     `json:"ok"`
	Ref   *string  `json:"ref"`
	Names names    `json:"names"`
	List  []string `json:"list,omitempty"`
	Inner inner    `json:"inner"`
}

var (
	strictReader    = NewReader(plainDoc{}).Strict().OneCopy()
	strictDocReader = NewReader(doc{}).Strict()
)

// strictDecode is how a caller that refuses unknown members decodes.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// Wherever a strict reader answers, a json.Decoder refusing unknown
// members reads the same value from the same text, without error; what
// the strict reader reads the lenient one reads alike.
func FuzzStrictReaderAgreesWithStrictDecoding(f *testing.F) {
	for _, s := range append(seeds, `{"kind":"x","other":1}`, `{"inner":{"n":1,"other":2}}`, `{"kind":"x"}{"kind":"y"}`, `{"inner":{"n":1},"kind":"k"}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want, lenient plainDoc
		if strictReader.Read(b, &got) {
			if err := strictDecode(b, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: read %+v, the strict decoder %+v %v", b, got, want, err)
			}
			if !NewReader(plainDoc{}).Read(b, &lenient) || !reflect.DeepEqual(got, lenient) {
				t.Fatalf("%q: strict %+v, lenient %+v", b, got, lenient)
			}
		}
		var d, dw doc
		if strictDocReader.Read(b, &d) {
			if err := strictDecode(b, &dw); err != nil || !reflect.DeepEqual(d, dw) {
				t.Fatalf("%q: read %+v, the strict decoder %+v %v", b, d, dw, err)
			}
		}
	})
}

func TestStrictReaderRefusesUnknownMembers(t *testing.T) {
	var d plainDoc
	if !strictReader.Read([]byte(seeds[0]), &d) || d.Inner.N != -7 || d.Kind != "k" {
		t.Fatalf("read %+v", d)
	}
	for _, s := range []string{`{"kind":"x","other":1}`, `{"inner":{"n":1,"other":2}}`} {
		if strictReader.Read([]byte(s), &plainDoc{}) {
			t.Errorf("%s: read, but a strict decoder refuses it", s)
		}
		if !NewReader(plainDoc{}).Read([]byte(s), &plainDoc{}) {
			t.Errorf("%s: the lenient reader refuses it", s)
		}
	}
	// A member the reader would hand to encoding/json is left to the
	// strict decoder whole.
	if strictDocReader.Read([]byte(`{"extra":{"a":1}}`), &doc{}) {
		t.Error("a map member read by a strict reader")
	}
}
