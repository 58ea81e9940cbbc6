package authority

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func decisionsJSON(t *testing.T, in Input) (string, error) {
	t.Helper()
	d, err := Authorize(in)
	if err != nil {
		return "", err
	}
	b, merr := json.Marshal(d)
	if merr != nil {
		t.Fatal(merr)
	}
	return string(b), nil
}

func rejectionCode(err error) string {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	if err == nil {
		return ""
	}
	return "untyped: " + err.Error()
}

// A batch sealed by SealBatch is decided byte for byte as the same batch
// checked in full.
func TestSealBatchDecidesAsTheFullCheck(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	want, err := decisionsJSON(t, in)
	if err != nil {
		t.Fatal(err)
	}
	unsealed := in.Batch
	unsealed.PublishedBatchDigest = ""
	sealed, cb, err := SealBatch(unsealed, in.ProfileDigest)
	if err != nil {
		t.Fatal(err)
	}
	if sealed.PublishedBatchDigest != in.Batch.PublishedBatchDigest {
		t.Fatalf("sealed digest %s, want %s", sealed.PublishedBatchDigest, in.Batch.PublishedBatchDigest)
	}
	if !cb.covers(sealed, in.ProfileDigest) {
		t.Fatal("the checked batch does not cover the batch it sealed")
	}
	in.Batch, in.Checked = sealed, cb
	got, err := decisionsJSON(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("decisions differ with a checked batch:\n got %s\nwant %s", got, want)
	}
}

// A checked batch never stands for a batch that differs from it, nor for
// another profile: those are checked in full, and rejected as before.
func TestCheckedBatchFallsBackToTheFullCheck(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	sealed, cb, err := SealBatch(in.Batch, in.ProfileDigest)
	if err != nil {
		t.Fatal(err)
	}
	// The caller writes to the slices it sealed: the checked copy is its
	// own, so the change is seen and the stale digest rejected.
	in.Batch, in.Checked = sealed, cb
	in.Batch.Proposals[0].EffectType = "artifact.delete"
	if cb.covers(in.Batch, in.ProfileDigest) {
		t.Fatal("a changed batch is covered by the check of the original")
	}
	_, err = Authorize(in)
	if got := rejectionCode(err); got != "PUBLISHED_BATCH_DIGEST_MISMATCH" {
		t.Fatalf("changed batch: %s, want PUBLISHED_BATCH_DIGEST_MISMATCH", got)
	}

	in2, _ := fixtureInput(t, "internal")
	sealed, cb, err = SealBatch(in2.Batch, in2.ProfileDigest)
	if err != nil {
		t.Fatal(err)
	}
	in2.Batch, in2.Checked = sealed, cb
	in2.ProfileDigest = "sha256:" + hexOf(in2.ProfileDigest)[1:] + "0"
	if cb.covers(in2.Batch, in2.ProfileDigest) {
		t.Fatal("a check under one profile covers another")
	}
	_, err = Authorize(in2)
	if got := rejectionCode(err); got != "BATCH_DIGEST_MISMATCH" {
		t.Fatalf("other profile: %s, want BATCH_DIGEST_MISMATCH", got)
	}

	// The zero CheckedBatch covers nothing.
	if (CheckedBatch{}).covers(PublishedBatch{}, "") {
		t.Fatal("the zero CheckedBatch covers a batch")
	}
}

// SealBatch rejects what Authorize rejects, with the same code.
func TestSealBatchRejectsAsAuthorize(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	for name, mutate := range map[string]func(*PublishedBatch){
		"batch digest":   func(b *PublishedBatch) { b.Batch.BatchDigest = "sha256:" + hexOf(b.Batch.BatchDigest)[1:] + "0" },
		"unpaired":       func(b *PublishedBatch) { b.Verdicts = nil },
		"duplicate id":   func(b *PublishedBatch) { b.Batch.ProposalIDs = append(b.Batch.ProposalIDs, b.Batch.ProposalIDs[0]) },
		"malformed":      func(b *PublishedBatch) { b.Proposals[0].ActionDigest = "sha256:xyz" },
		"canonical form": func(b *PublishedBatch) { b.Proposals[0].GoalID = "goal:\xff" },
	} {
		b := copyBatch(in.Batch)
		mutate(&b)
		_, _, err := SealBatch(b, in.ProfileDigest)
		b2 := copyBatch(b)
		if d, derr := publishedBatchDigest(b2); derr == nil {
			b2.PublishedBatchDigest = d // so that only what was mutated is wrong
		}
		in2 := in
		in2.Batch = b2
		_, aerr := Authorize(in2)
		if rejectionCode(err) == "" || rejectionCode(err) != rejectionCode(aerr) {
			t.Errorf("%s: SealBatch %q, Authorize %q", name, rejectionCode(err), rejectionCode(aerr))
		}
	}
}

// TestSameBatchSeesEveryMember changes every scalar and every slice
// element of a published batch, one at a time, and checks that sameBatch
// tells the copy from the original: a member added to a protocol type
// fails here until sameBatch compares it.
func TestSameBatchSeesEveryMember(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	orig := copyBatch(in.Batch)
	// Every slice gets an element, so its elements are reached too.
	if len(orig.Proposals[0].Preconditions) == 0 {
		orig.Proposals[0].Preconditions = []string{"pre:1"}
	}
	if len(orig.Verdicts[0].SupportDerivationIDs) == 0 {
		orig.Verdicts[0].SupportDerivationIDs = []string{"derivation:1"}
	}
	if !sameBatch(orig, copyBatch(orig)) {
		t.Fatal("a batch differs from its copy")
	}
	changed := 0
	mutated := copyBatch(orig)
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(path+"[]", v.Index(i))
			}
			// A longer slice differs as well.
			old := v.Interface()
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			if sameBatch(orig, mutated) {
				t.Errorf("%s: an added element is not seen", path)
			}
			v.Set(reflect.ValueOf(old))
		case reflect.String:
			old := v.String()
			v.SetString(old + "x")
			if sameBatch(orig, mutated) {
				t.Errorf("%s: a changed member is not seen", path)
			}
			v.SetString(old)
			changed++
		case reflect.Int64, reflect.Int:
			old := v.Int()
			v.SetInt(old + 1)
			if sameBatch(orig, mutated) {
				t.Errorf("%s: a changed member is not seen", path)
			}
			v.SetInt(old)
			changed++
		default:
			t.Errorf("%s: kind %s not covered by this test", path, v.Kind())
		}
	}
	walk("batch", reflect.ValueOf(&mutated).Elem())
	if !sameBatch(orig, mutated) {
		t.Fatal("the walk did not restore the batch")
	}
	if changed < 40 {
		t.Fatalf("only %d members were changed", changed)
	}
}

// A batch sealed with the digests its producer took is sealed and checked
// as SealBatch seals and checks it; SealBatchDigested refuses, with
// SealBatch's code, every batch whose shape or id SealBatch refuses.
func TestSealBatchDigestedIsSealBatch(t *testing.T) {
	in, _ := fixtureInput(t, "internal")
	unsealed := in.Batch
	unsealed.PublishedBatchDigest = ""
	want, wantChecked, err := SealBatch(unsealed, in.ProfileDigest)
	if err != nil {
		t.Fatal(err)
	}
	got, gotChecked, err := SealBatchDigested(unsealed, in.ProfileDigest, PublishedBatchDigest(unsealed))
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotChecked, wantChecked) {
		t.Fatalf("SealBatchDigested: %v\n%#v\n%#v", err, got, want)
	}
	for name, mutate := range map[string]func(*PublishedBatch){
		"batch id":     func(b *PublishedBatch) { b.Batch.BatchID = "batch:" + hexOf(b.Batch.BatchDigest)[1:] + "0" },
		"unpaired":     func(b *PublishedBatch) { b.Verdicts = nil },
		"duplicate id": func(b *PublishedBatch) { b.Batch.ProposalIDs = append(b.Batch.ProposalIDs, b.Batch.ProposalIDs[0]) },
		"malformed":    func(b *PublishedBatch) { b.Proposals[0].ActionDigest = "sha256:xyz" },
		"canonical":    func(b *PublishedBatch) { b.Proposals[0].Versions.Canonicalization = "other/1" },
	} {
		b := copyBatch(unsealed)
		mutate(&b)
		_, _, want := SealBatch(b, in.ProfileDigest)
		_, checked, got := SealBatchDigested(b, in.ProfileDigest, PublishedBatchDigest(b))
		if rejectionCode(got) == "" || rejectionCode(got) != rejectionCode(want) || !reflect.DeepEqual(checked, CheckedBatch{}) {
			t.Errorf("%s: SealBatchDigested %q, SealBatch %q", name, rejectionCode(got), rejectionCode(want))
		}
	}
}
