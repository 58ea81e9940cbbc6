package authority

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"flrh.dev/flrh/protocol"
)

// cloneEach is copyBatch as it was: every list cloned on its own.
func cloneEach(b PublishedBatch) PublishedBatch {
	b.Batch.ProposalIDs = slices.Clone(b.Batch.ProposalIDs)
	b.Batch.EligibilityVerdictIDs = slices.Clone(b.Batch.EligibilityVerdictIDs)
	b.Proposals = slices.Clone(b.Proposals)
	for i := range b.Proposals {
		b.Proposals[i].Preconditions = slices.Clone(b.Proposals[i].Preconditions)
	}
	b.Verdicts = slices.Clone(b.Verdicts)
	for i := range b.Verdicts {
		b.Verdicts[i].SupportDerivationIDs = slices.Clone(b.Verdicts[i].SupportDerivationIDs)
	}
	return b
}

// eachString calls f on every string of b reachable through a slice (the
// memory a caller may write to after sealing), in a fixed order.
func eachString(b *PublishedBatch, f func(path string, v reflect.Value)) {
	var walk func(path string, v reflect.Value, inSlice bool)
	walk = func(path string, v reflect.Value, inSlice bool) {
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i), inSlice)
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(path+"[]", v.Index(i), true)
			}
		case reflect.String:
			if inSlice {
				f(path, v)
			}
		}
	}
	walk("batch", reflect.ValueOf(b).Elem(), false)
}

// eachList calls f on every string list of b.
func eachList(b *PublishedBatch, f func(v reflect.Value)) {
	f(reflect.ValueOf(&b.Batch.ProposalIDs).Elem())
	f(reflect.ValueOf(&b.Batch.EligibilityVerdictIDs).Elem())
	for i := range b.Proposals {
		f(reflect.ValueOf(&b.Proposals[i].Preconditions).Elem())
	}
	for i := range b.Verdicts {
		f(reflect.ValueOf(&b.Verdicts[i].SupportDerivationIDs).Elem())
	}
}

// TestCopyBatchOwnsItsLists holds copyBatch, whose lists are cut from one
// array, to cloning each list: the same batch (nil and empty lists kept
// as they were), untouched by every write to the original's lists, and
// with lists that do not overlap (an append to each list of the copy
// leaves every other list as it was).
func TestCopyBatchOwnsItsLists(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	base := in.Batch
	many := cloneEach(base)
	many.Proposals = append(many.Proposals, many.Proposals[0], many.Proposals[0])
	many.Verdicts = append(many.Verdicts, many.Verdicts[0], many.Verdicts[0])
	many.Proposals[0].Preconditions = []string{"pre:1", "pre:2"}
	many.Proposals[1].Preconditions = []string{}
	many.Proposals[2].Preconditions = nil
	many.Verdicts[0].SupportDerivationIDs = []string{"derivation:1"}
	many.Verdicts[1].SupportDerivationIDs = nil
	many.Verdicts[2].SupportDerivationIDs = []string{"derivation:2", "derivation:3", "derivation:4"}
	many.Batch.ProposalIDs = append(many.Batch.ProposalIDs, "proposal:2", "proposal:3")
	many.Batch.EligibilityVerdictIDs = []string{}
	for name, b := range map[string]PublishedBatch{"fixture": base, "many lists": many, "empty": {}} {
		orig := cloneEach(b)
		want := cloneEach(b)
		got := copyBatch(b)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: copyBatch\n%#v\ncloned\n%#v", name, got, want)
		}
		if cap(got.Proposals) != len(got.Proposals) || cap(got.Verdicts) != len(got.Verdicts) {
			t.Fatalf("%s: the copy's proposals or verdicts have room to append in place", name)
		}
		writes := 0
		eachString(&orig, func(path string, v reflect.Value) {
			v.SetString(v.String() + "x")
			writes++
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d writes to the original reached the copy", name, writes)
		}
		eachList(&got, func(v reflect.Value) {
			v.Set(reflect.Append(v, reflect.ValueOf("appended")))
		})
		var lists [][]string
		eachList(&want, func(v reflect.Value) { lists = append(lists, v.Interface().(protocol.IDSet)) })
		i := 0
		eachList(&got, func(v reflect.Value) {
			if l := v.Interface().(protocol.IDSet); !slices.Equal(l[:len(l)-1], lists[i]) {
				t.Fatalf("%s: an append to one list of the copy reached list %d: %q, want %q", name, i, l, lists[i])
			}
			i++
		})
	}
}

// TestCallerWritesAfterSealChangeNothing writes to every element of every
// list of a sealed batch after it was sealed and decided: the decision
// already made keeps its bytes, the checked copy keeps the batch that was
// checked, and deciding the written batch with the old CheckedBatch is the
// full check's rejection.
func TestCallerWritesAfterSealChangeNothing(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	sealed, cb, err := SealBatch(in.Batch, in.ProfileDigest)
	if err != nil {
		t.Fatal(err)
	}
	in.Batch, in.Checked = sealed, cb
	checked := cloneEach(sealed)
	d, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(d)
	writes := 0
	eachString(&in.Batch, func(path string, v reflect.Value) {
		v.SetString(v.String() + "0")
		writes++
	})
	if writes < 4 {
		t.Fatalf("only %d strings written", writes)
	}
	if got, _ := json.Marshal(d); string(got) != string(want) {
		t.Fatalf("a write to the batch changed a decision made:\n got %s\nwant %s", got, want)
	}
	if !sameBatch(cb.batch, checked) || !reflect.DeepEqual(cb.batch, checked) {
		t.Fatal("a write to the batch reached the checked copy")
	}
	if cb.covers(in.Batch, in.ProfileDigest) {
		t.Fatal("the written batch is covered by the check of the original")
	}
	_, got := Authorize(in)
	in.Checked = CheckedBatch{}
	_, full := Authorize(in)
	if rejectionCode(got) == "" || rejectionCode(got) != rejectionCode(full) {
		t.Fatalf("written batch: %q with the old check, %q checked in full", rejectionCode(got), rejectionCode(full))
	}
}
