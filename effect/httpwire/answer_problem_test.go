package httpwire

import (
	"testing"

	"golang.org/x/text/unicode/norm"
)

// A problem's detail quotes what a request sent, which need not be
// canonical text: a detail that is not NFC, or not UTF-8 at all, still
// encodes (it panicked before), and reads back as its NFC, valid form.
func TestProblemDetailOfAnyText(t *testing.T) {
	for _, tc := range []struct{ detail, want string }{
		{"plain", "plain"},
		{"e\u0301", "\u00e9"}, // decomposed: NFC composes it
		{"\u0387", "\u00b7"},  // a singleton NFC replaces
		{"bad \xff byte", "bad \ufffd byte"},
		{"\x00 and \x1f", "\x00 and \x1f"},
	} {
		b := Problem{Code: CodeMalformed, Detail: tc.detail}.Encode()
		p, err := DecodeProblem(b)
		if err != nil {
			t.Fatalf("%q: %v", tc.detail, err)
		}
		if p.Detail != tc.want || !norm.NFC.IsNormalString(p.Detail) {
			t.Errorf("%q reads back as %q, want %q", tc.detail, p.Detail, tc.want)
		}
	}
}
