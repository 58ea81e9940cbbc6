package archive

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

// Compress is deterministic, Decompress inverts it, and every damaged or
// oversized file is refused with an *Error.
func TestCompressRoundTrip(t *testing.T) {
	doc := []byte(strings.Repeat(`{"kind":"flrh-run-archive/1","events":[1,2,3]}`, 500))
	z := Compress(doc)
	if !IsCompressed(z) || IsCompressed(doc) || !bytes.Equal(z, Compress(doc)) {
		t.Fatal("Compress is not gzip, or not the same bytes twice")
	}
	if len(z)*10 > len(doc) {
		t.Fatalf("a repetitive document compressed to %d of %d bytes", len(z), len(doc))
	}
	back, err := Decompress(z)
	if err != nil || !bytes.Equal(back, doc) {
		t.Fatalf("Decompress: %v", err)
	}
	var two bytes.Buffer
	two.Write(z)
	two.Write(z)
	named := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Name = "x.json" // another header: still one member, read the same
		zw.Write(doc)
		zw.Close()
		return b.Bytes()
	}()
	if back, err := Decompress(named); err != nil || !bytes.Equal(back, doc) {
		t.Fatalf("a member with a name: %v", err)
	}
	flipped := bytes.Clone(z)
	flipped[len(flipped)-5] ^= 0xff // the CRC-32 or size trailer
	for _, tc := range []struct {
		name string
		b    []byte
		says string
	}{
		{"empty", nil, "not gzip"},
		{"not gzip", doc, "not gzip"},
		{"truncated", z[:len(z)/2], "truncated"},
		{"no trailer", z[:len(z)-8], "truncated"},
		{"a damaged trailer", flipped, "checksum"},
		{"two members", two.Bytes(), "bytes after the document"},
		{"junk after", append(bytes.Clone(z), 'x'), "bytes after the document"},
	} {
		_, err := Decompress(tc.b)
		var ae *Error
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an *Error saying %q", tc.name, err, tc.says)
		}
	}
	if _, err := decompress(z, int64(len(doc))-1); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a document one byte over the limit: %v", err)
	}
	if back, err := decompress(z, int64(len(doc))); err != nil || !bytes.Equal(back, doc) {
		t.Errorf("a document exactly at the limit: %v", err)
	}
}

// FuzzDecompress: any bytes give a document or an *Error, never a panic;
// a document given back compresses and decompresses to itself.
func FuzzDecompress(f *testing.F) {
	f.Add(Compress([]byte(`{"kind":"flrh-run-archive/1"}`)))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := decompress(b, 1<<20)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if back, err := Decompress(Compress(doc)); err != nil || !bytes.Equal(back, doc) {
			t.Fatalf("a decompressed document does not round-trip: %v", err)
		}
	})
}
