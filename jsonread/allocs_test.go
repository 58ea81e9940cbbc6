package jsonread

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Reading a record of plain strings with a one-copy reader allocates the
// copy, the members' slots and what the struct holds by pointer, not a
// string per member.
func TestOneCopyReaderAllocations(t *testing.T) {
	b := []byte(`{"count":3,"inner":{"flag":true,"n":-7,"tag":"t"},"kind":"k","list":["a","b"],"names":["x","y"],"ok":true,"ref":"r"}`)
	r := NewReader(plainDoc{}).Strict().OneCopy()
	n := testing.AllocsPerRun(100, func() {
		var d plainDoc
		if !r.Read(b, &d) {
			t.Fatal("not read")
		}
	})
	// The copy and its holder, the pointer's string, the two lists as
	// they grow: not the seven strings, nor the member slots of the two
	// objects (on the stack).
	if n > 9 {
		t.Errorf("%v allocations a read", n)
	}
}

// A struct of more members than readValue's slots on the stack is read
// as encoding/json reads it, its slots made on the heap.
func TestReaderOfManyMembers(t *testing.T) {
	var fields []reflect.StructField
	var text []string
	for i := range 40 {
		name := fmt.Sprintf("m%02d", i)
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("M%02d", i), Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + name + `"`)})
		if i%3 != 1 {
			text = append(text, fmt.Sprintf(`"%s":"v%d"`, name, i))
		}
	}
	typ := reflect.StructOf(fields)
	b := []byte("{" + strings.Join(text, ",") + "}")
	r := NewReader(reflect.New(typ).Elem().Interface())
	got, want := reflect.New(typ), reflect.New(typ)
	if !r.Read(b, got.Interface()) {
		t.Fatal("not read")
	}
	if err := json.Unmarshal(b, want.Interface()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		t.Fatalf("read %+v, encoding/json %+v", got.Elem(), want.Elem())
	}
}
