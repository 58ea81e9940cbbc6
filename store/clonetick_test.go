package store_test

import (
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// CloneTick shares no slice with the tick it copies: not a list of
// records, not a body inside one. Every member of store.Tick that holds a
// slice is filled here (the test fails on one left empty, a new one
// included), and every slice of the copy, at any depth, must be its own.
func TestCloneTickSharesNoSlice(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	cp := b(`{"cp":1}`)
	k := store.Tick{
		ExpectHead: 3,
		Events:     []store.Event{storetest.Ev("a", `{"a":1}`), storetest.Ev("b", `{"b":2}`)},
		Checkpoint: &store.Checkpoint{Seq: 5, Body: cp, Digest: store.BodyDigest(cp)},
		Intents:    []store.Intent{storetest.In("i", "k", "x")},
		Approvals:  []store.ApprovalUse{{ApprovalID: "ap", IntentID: "i", Check: func(store.Approval, time.Time) error { return nil }}},
		Results:    []store.AttemptResult{{IntentID: "i", N: 1}},
		Receipts:   []store.Receipt{{IntentID: "i", Body: b(`{"r":1}`)}},
		Consume:    []string{"in"},
		Begin:      []string{"i"},
		Submit:     []store.Inbound{storetest.Inb("r", "in", "input", `{"x":1}`)},
		Trace:      []store.TraceRecord{{Kind: "t", Body: b(`{"t":1}`)}},
		Notices:    []store.Notice{{Kind: store.NoticeEnded, Body: b(`{"n":1}`)}},
	}
	c := store.CloneTick(k)
	kv, cv := reflect.ValueOf(k), reflect.ValueOf(c)
	for i := range kv.NumField() {
		name := kv.Type().Field(i).Name
		f := kv.Field(i)
		if (f.Kind() == reflect.Slice && f.Len() == 0) || (f.Kind() == reflect.Pointer && f.IsNil()) {
			t.Fatalf("the test's tick leaves %s empty", name)
		}
		if f.Kind() == reflect.Pointer {
			if f.Pointer() == cv.Field(i).Pointer() {
				t.Errorf("%s is shared", name)
			}
			sharesNone(t, name, f.Elem(), cv.Field(i).Elem())
			continue
		}
		sharesNone(t, name, f, cv.Field(i))
	}
	if !reflect.DeepEqual(k.Events, c.Events) || !reflect.DeepEqual(*k.Checkpoint, *c.Checkpoint) || !reflect.DeepEqual(k.Submit, c.Submit) ||
		!reflect.DeepEqual(k.Trace, c.Trace) || !reflect.DeepEqual(k.Receipts, c.Receipts) || !reflect.DeepEqual(k.Intents, c.Intents) {
		t.Fatal("the copy differs from the tick")
	}
}

// sharesNone fails t where a slice in b (a value like a) is a's.
func sharesNone(t *testing.T, name string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s is shared", name)
		}
		for i := range a.Len() {
			sharesNone(t, name, a.Index(i), b.Index(i))
		}
	case reflect.Struct:
		for i := range a.NumField() {
			sharesNone(t, name+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	}
}
