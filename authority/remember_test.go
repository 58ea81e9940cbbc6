package authority

import (
	"reflect"
	"strings"
	"testing"
)

// TestRememberedStringsArePlain holds decisions made with the digests and
// ids a decision remembers as plain (the batch's digest and id, its
// published digest, the policy's digest, the ticket id) to the same
// decisions made with every string tested, over batches checked in
// Authorize, sealed by SealBatch and sealed by SealBatchDigested with
// digests that need escaping, and a policy whose Digest was changed to
// one that does. A remembered string that is not plain would be copied
// unescaped into a preimage, and the decisions' digests would differ.
func TestRememberedStringsArePlain(t *testing.T) {
	base, _ := fixtureInput(t, "internal")
	quoted := "sha256:" + strings.Repeat("a", 60) + `"\` + "é\n"
	cases := map[string]func(t *testing.T) Input{
		"checked in Authorize": func(t *testing.T) Input { return base },
		"sealed": func(t *testing.T) Input {
			in := base
			var err error
			if in.Batch, in.Checked, err = SealBatch(in.Batch, in.ProfileDigest); err != nil {
				t.Fatal(err)
			}
			return in
		},
		"sealed digested": func(t *testing.T) Input {
			in := base
			var err error
			if in.Batch, in.Checked, err = SealBatchDigested(in.Batch, in.ProfileDigest, PublishedBatchDigest(in.Batch)); err != nil {
				t.Fatal(err)
			}
			return in
		},
		"sealed digested, published digest escaped": func(t *testing.T) Input {
			in := base
			var err error
			if in.Batch, in.Checked, err = SealBatchDigested(in.Batch, in.ProfileDigest, quoted); err != nil {
				t.Fatal(err)
			}
			return in
		},
		"policy digest changed": func(t *testing.T) Input {
			in := base
			p := *in.Policy.Policy
			p.Digest = quoted
			in.Policy.Policy = &p
			return in
		},
		"policy digest changed, sealed": func(t *testing.T) Input {
			in := base
			p := *in.Policy.Policy
			p.Digest = quoted[:len(quoted)-1]
			in.Policy.Policy = &p
			var err error
			if in.Batch, in.Checked, err = SealBatch(in.Batch, in.ProfileDigest); err != nil {
				t.Fatal(err)
			}
			return in
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			in := mk(t)
			got, gotErr := Authorize(in)
			rememberPlain = false
			want, wantErr := Authorize(in)
			rememberPlain = true
			if !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("error %v, every string tested %v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decisions differ from those with every string tested:\n%+v\n%+v", got, want)
			}
			if gotErr == nil && got.Outcomes[0].Intent == nil {
				t.Fatalf("no intent: %+v", got.Outcomes[0])
			}
		})
	}
}
