package archive

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"sync"
)

// A compressed archive file is the document in one gzip member, with no
// name, time or comment in its header, so that the same document always
// compresses to the same bytes and an archive written twice is the same
// file. The document's digest, which the store's pruning records, is the
// uncompressed document's: compression is how the file is kept, not what
// it holds.

// MaxDocument bounds the document Decompress returns (1 GiB): a file that
// would decompress beyond it is refused, not read into memory.
const MaxDocument = 1 << 30

// IsCompressed reports whether b, an archive file's bytes, is compressed
// (it starts as gzip does).
func IsCompressed(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Compress returns doc compressed, the same bytes for the same doc.
func Compress(doc []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(doc)/3 + 64)
	zw := writers.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(doc) // writes to memory: no error
	zw.Close()
	writers.Put(zw)
	return buf.Bytes()
}

// writers keeps gzip writers for reuse: a new one allocates and clears
// about a megabyte of compressor state, which costs more than compressing
// a run's archive.
var writers = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression) // a valid level: no error
	return zw
}}

// Decompress returns the document of a compressed archive file. It
// refuses, with an *Error, bytes that are not one whole gzip member, and a
// document over MaxDocument.
func Decompress(b []byte) ([]byte, error) {
	return decompress(b, MaxDocument)
}

func decompress(b []byte, limit int64) ([]byte, error) {
	br := bytes.NewReader(b)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, errorf("compressed file", "not gzip: %v", err)
	}
	zr.Multistream(false)
	doc, err := io.ReadAll(io.LimitReader(zr, limit+1))
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, errorf("compressed file", "truncated")
	case err != nil:
		return nil, errorf("compressed file", "%v", err)
	case int64(len(doc)) > limit:
		return nil, errorf("compressed file", "its document is over %d bytes", limit)
	case br.Len() != 0:
		// One member and nothing after it: a file with more appended is
		// not one prune wrote. (A bytes.Reader is read a byte at a time
		// by the decompressor, so what is left is exactly what follows.)
		return nil, errorf("compressed file", "%d bytes after the document", br.Len())
	}
	return doc, nil
}
