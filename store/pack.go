package store

import "flrh.dev/flrh/store/packed"

// PackSealBody packs a body (package packed: fewer bytes, read back byte
// for byte) and seals it for ref when s is non-nil: a record is packed
// before it is sealed, as sealed bytes do not pack. The result may be p's
// buffer, valid until p packs again.
func PackSealBody(s Sealer, p *packed.Packer, op string, ref SealRef, body []byte) ([]byte, error) {
	return SealBody(s, op, ref, p.Pack(body))
}

// OpenPackedBody returns the body a stored record holds: opened as
// OpenBody opens it, then unpacked if it was packed. A packed body that
// does not unpack is CodeCorrupt. Bodies stored as they are (written
// before bodies were packed, or too small to pack) read as before.
func OpenPackedBody(s Sealer, op string, ref SealRef, stored []byte) ([]byte, error) {
	plain, err := OpenBody(s, op, ref, stored)
	if err != nil || !packed.Is(plain) {
		return plain, err
	}
	return UnpackBody(op, ref, plain)
}

// UnpackBody unpacks a packed body; one that does not unpack is
// CodeCorrupt.
func UnpackBody(op string, ref SealRef, stored []byte) ([]byte, error) {
	body, err := packed.Unpack(nil, stored)
	if err != nil {
		return nil, Errorf(CodeCorrupt, op, ref.RunID, err, "unpacking %s #%d", ref.Kind, ref.Seq)
	}
	return body, nil
}
