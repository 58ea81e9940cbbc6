package store

// DigestProof is the proof that a digest is the digest of a body, made only
// by ProveDigest, which hashes the body: it names the body (where its first
// byte is and how many there are) and the digest's text. A record that
// carries a proof of its own Body and Digest is not hashed again when a
// store validates it (ValidateTick, ValidateInbound); any other record is,
// and one whose digest does not match its body is refused. The zero
// DigestProof proves nothing, and a copied body (CloneTick) or a digest
// other than the proven one is hashed.
//
// A proof stands for the bytes as they were when it was made: whoever
// proves a body's digest writes nothing over the body until the store has
// it (the runner writes a tick's bodies once and proves them last).
type DigestProof struct {
	first  *byte // &body[0], nil for an empty body
	n      int
	digest string
}

// ProveDigest returns BodyDigest(body) and the proof that it is.
func ProveDigest(body []byte) (string, DigestProof) {
	d := BodyDigest(body)
	return d, proven(body, d)
}

// proven is the proof that digest, which its caller has just made by
// hashing body, is body's digest.
func proven(body []byte, digest string) DigestProof {
	return DigestProof{first: firstByte(body), n: len(body), digest: digest}
}

// Proves reports whether p is a proof that digest is body's digest: the
// check a store makes before it takes a digest without hashing its body.
func (p DigestProof) Proves(body []byte, digest string) bool { return p.proves(body, digest) }

// proves reports whether p is a proof that digest is body's digest.
func (p DigestProof) proves(body []byte, digest string) bool {
	return p.digest != "" && p.n == len(body) && p.first == firstByte(body) && p.digest == digest
}

// digestHolds reports whether digest is body's digest: proven by p, or
// hashed.
func digestHolds(p DigestProof, body []byte, digest string) bool {
	return p.proves(body, digest) || DigestMatches(body, digest)
}

func firstByte(b []byte) *byte {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}
